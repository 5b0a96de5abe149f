"""Figure 8's rewrites: semantic minimization of composed i-diffs under C1–C3.

For a base table R(I, A) in its post-state and effective i-diffs over it:
  C1  Δ+_R ⊆ R                       (inserted rows are in the post-state)
  C2  π_I Δ-_R ∩ π_I R = ∅           (deleted IDs are not)
  C3  π_I,A'' Δu_R ⋉_I R ⊆ π_I,A'' R  (updated rows carry their post-state values)

Our i-diff instances carry the full pre- and post-image of every changed row, so
A'' = A always holds for the conditions "if X ⊆ A''" of the figure.

Each rewrite is a pure function ``IDiff -> IDiff | None`` (``None``: the i-diff is
provably empty and its statement is dropped). Where the figure reads
"R ⋉_I σφ Δ" our composed form is a semijoined i-diff; where it reads
"Δ ⋈_I R" or "Δ ⋉_I σφ R" ours is a scan of R joined on its whole key, or an
EXISTS / IN subquery over R correlated on its whole key.
"""
from __future__ import annotations

from sqlglot import exp

from ...algebra.placeholders import PRE
from ...program.trees import conjuncts
from ...rules.idiff import IDiff, conj, is_not_true


def semijoin_to_diff(d: IDiff) -> IDiff | None:
    """R^post ⋉_I σφ Δ+ -> σφ Δ+ (C1) and R^post ⋉_I σφ Δu -> σφ Δu (C3): the i-diff's
    post-images are R's rows for its IDs, so the base-table access goes."""
    if not d.semijoined or d.kind == "-":
        return d
    return d.derive(f"minimize: {d.origin}^post ⋉_I Δ -> Δ ({'C1' if d.kind == '+' else 'C3'})",
                    semijoined=False)


def semijoined_delete_is_empty(d: IDiff) -> IDiff | None:
    """R^post ⋉_I σφ Δ- -> ∅ (C2): no deleted ID is in the post-state."""
    return None if d.semijoined and d.kind == "-" else d


def _is_column(e: exp.Expression, table: str, name: str) -> bool:
    return isinstance(e, exp.Column) and e.table == table and e.name == name  # post- or pre-image


def _key_equalities(where, alias: str, origin: str, key: tuple[str, ...]) -> list[exp.Expression] | None:
    """The conjuncts `alias.k = origin.k` for every key column k, or None if one is missing."""
    found = []
    for k in key:
        hit = next((w for w in where if isinstance(w.unnest(), exp.EQ) and any(
            _is_column(a, alias, k) and _is_column(b, origin, k)
            for a, b in ((w.unnest().this, w.unnest().expression), (w.unnest().expression, w.unnest().this)))), None)
        if hit is None:
            return None
        found.append(hit)
    return found


def _rename(e: exp.Expression, alias: str, origin: str) -> exp.Expression:
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not PRE.marks(node) and node.table == alias:
            return exp.column(node.name, origin, quoted=True)
        return node

    return e.transform(fn)


def key_join_to_diff(d: IDiff) -> IDiff | None:
    """Δ+ ⋈_I R -> Δ+, Δu ⋈_I R -> Δu, Δ+ ⋉_I σφ R -> σφ Δ+ and Δu ⋉_I σφ R -> σφ Δu (C1, C3);
    Δ- ⋈_I R -> ∅ (C2). A scan of the origin's own table joined on its whole key reads the
    very rows the i-diff carries: it is dropped and its columns read the i-diff."""
    table = d.schema.table
    for j in d.joined:
        if d.scan_tables.get(j) != (table.schema, table.name):
            continue
        eqs = _key_equalities(d.where, j, d.origin, table.key)
        if eqs is None:
            continue
        if d.kind == "-":
            return None
        where = tuple(_rename(w, j, d.origin) for w in d.where if not any(w is e for e in eqs))
        return d.derive(f"minimize: Δ ⋈_I {j} -> Δ ({'C1' if d.kind == '+' else 'C3'})",
                        joined=tuple(x for x in d.joined if x != j), where=where,
                        merged=d.merged + (j,))
    return d


def _own_key_subquery(w: exp.Expression, d: IDiff):
    """(negated, ψ, own) if w is [NOT] EXISTS / [NOT] IN over the origin's own table correlated on
    its whole key: ψ the rest of the subquery's condition over the origin (a list of conjuncts),
    own the IN's equality `x = v` over the origin (None for EXISTS, or when it is the key
    equality itself). Else None."""
    negated = isinstance(w.unnest(), exp.Not)
    node = w.unnest().this.unnest() if negated else w.unnest()
    if isinstance(node, exp.Exists):
        inner, extra = node.this, []
    elif isinstance(node, exp.In) and node.args.get("query") is not None:
        inner = node.args["query"].this
        if len(d.schema.table.key) != 1 or len(inner.expressions) != 1:
            return None
        extra = [exp.EQ(this=inner.expressions[0].unalias().copy(), expression=node.this.copy())]
    else:
        return None
    src = inner.args.get("from_") or inner.args.get("from")
    table = d.schema.table
    if src is None or inner.args.get("joins") or not isinstance(src.this, exp.Table):
        return None
    if (src.this.db or table.schema, src.this.name) != (table.schema, table.name):
        return None
    alias = src.this.alias_or_name
    where = inner.args.get("where")
    conds = conjuncts(where.this) if where is not None else []
    eqs = _key_equalities(conds + extra, alias, d.origin, table.key)
    if eqs is None:
        return None
    psi = [_rename(c, alias, d.origin) for c in conds if not any(c is e for e in eqs)]
    own = _rename(extra[0], alias, d.origin) if extra and not any(extra[0] is e for e in eqs) else None
    if any(col.table != d.origin  # the origin's post- or pre-image
           for c in psi + ([own] if own is not None else []) for col in c.find_all(exp.Column)):
        return None  # φ reads other scans: not a pure filter on the i-diff
    return negated, psi, own


def own_key_subquery_to_filter(d: IDiff) -> IDiff | None:
    """Δ ⋉_I σφ R -> σφ Δ and Δ ▷_I σφ R -> σ¬φ Δ for Δ+ and Δu (C1, C3); for Δ-:
    Δ- ⋉_I σφ R -> ∅ and Δ- ▷_I σφ R -> Δ- (C2). The semijoin is an EXISTS / IN subquery
    over the origin's own table correlated on its whole key."""
    for w in d.where:
        found = _own_key_subquery(w, d)
        if found is None:
            continue
        negated, psi, own = found
        parts = psi + ([own] if own is not None else [])
        phi = conj(parts) if parts else exp.true()
        if d.kind == "-":
            if not negated:
                return None
            repl = ()
        elif negated and own is not None:
            # x NOT IN (the row's own value v where ψ): TRUE where ψ is not true (no rows), else
            # NOT (x = v), which is NULL, not TRUE, for a NULL x: only (x = v) IS FALSE passes
            repl = (exp.Or(this=exp.Paren(this=is_not_true(conj(psi) if psi else exp.true())),
                           expression=exp.Paren(this=exp.Is(this=exp.Paren(this=own), expression=exp.false()))),)
        else:
            repl = (is_not_true(phi),) if negated else (phi,)
        where = tuple(y for x in d.where for y in (repl if x is w else (x,)))
        op = "▷" if negated else "⋉"
        return own_key_subquery_to_filter(
            d.derive(f"minimize: Δ {op}_I σ {d.schema.table.name} -> σ Δ", where=where))
    return d


RULES = (semijoin_to_diff, semijoined_delete_is_empty, key_join_to_diff, own_key_subquery_to_filter)
