"""Reading from a base table, map or cache only the rows a small batch can join: filters pushed down
to PostgreSQL.

Spark reads a base table over JDBC; read whole, a table of millions of rows costs seconds even for
a batch of ten changes. But a SELECT that joins the table by an equality can only use its rows
whose column holds a value the other side has:

- joined to the batch (`b.x = d.y`, Δ d): the rows with x among the batch's values, which this
  transaction's own i-diff instance lists (inlined as `x = ANY(...)`, at most PUSHDOWN_LIMIT of them);
- joined to another base table a of the same SELECT that is itself restricted (`b.x = a.y`): the
  rows with x among the y of a's restricted rows, as a subquery PostgreSQL evaluates in the read's
  own (imported) snapshot: `x IN (SELECT y FROM a WHERE <a's filter>)`. So a chain such as
  Δparts ⋈ devices_parts ⋈ devices reads devices at the batch's devices only.

Each equality is a conjunct of the WHERE (or of an inner join's ON) of the SELECT whose FROM reads
the table; whatever encloses that SELECT (a UNION branch, an EXISTS, a NOT IN), rows failing one of
its conjuncts contribute nothing, so dropping them before the read is exact. A SELECT with an
outer join restricts none of its tables (its preserved side keeps rows that match nothing). A
table read in several places (several queries, UNION branches) is read once, restricted by the
OR of its occurrences' filters, or whole if one occurrence has none. A map or cache a higher-order
increment joins (read from the transaction, engines/spark/executor.py) is restricted the same way,
so a map larger than the local limit still goes to Spark when the batch touches few of its keys.
"""
from __future__ import annotations

from typing import Callable

from psycopg.sql import Literal
from sqlglot import exp

from ...program import relations as R
from ...program.trees import conjuncts, froms
from ...sqltext import ident

PUSHDOWN_LIMIT = 20_000  # at most this many distinct batch values are inlined into a base table's read
RESTRICTED = (R.BASE, R.VIEW)  # base tables, and the maps and caches a program keeps


def _scope(sel: exp.Select) -> dict[str, R.Relation]:
    """The relations a SELECT's own FROM and joins read, by alias."""
    out = {}
    for t in froms(sel):
        if isinstance(t, exp.Table) and (rel := R.relation_of(t)) is not None:
            out[t.alias_or_name] = rel
    return out


def _deltas_in_scope(sel: exp.Select) -> dict[str, R.Relation]:
    """Δ relations visible in a SELECT by alias: its own, else an enclosing SELECT's (correlation)."""
    out: dict[str, R.Relation] = {}
    node: exp.Expression | None = sel
    while node is not None:
        if isinstance(node, exp.Select):
            for a, rel in _scope(node).items():
                if rel.kind == R.DELTA:
                    out.setdefault(a, rel)
        node = node.parent
    return out


def _batch_columns(sel: exp.Select) -> dict[str, dict[str, list[tuple[int, str]]]]:
    """Per derived table of a SELECT's FROM that reads the batch alone (each branch of it, a SELECT
    or a UNION of them, over one Δ instance: the higher-order strategy's signed batch, post-images
    UNION ALL pre-images): per output that each branch takes as it is from its Δ, the (captured id,
    Δ column) pairs it comes from. Its values are among those columns' values, whatever the
    branches' WHEREs keep."""
    out: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for item in froms(sel):
        if not (isinstance(item, exp.Subquery) and item.alias):
            continue
        inner = item.this
        branches = [inner] if isinstance(inner, exp.Select) else (
            list(inner.find_all(exp.Select)) if isinstance(inner, exp.Union) else [])
        if not branches or any(len(b.expressions) != len(branches[0].expressions) for b in branches):
            continue
        names = [e.alias_or_name for e in branches[0].expressions]  # a UNION's columns: its first branch's
        columns: dict[str, list[tuple[int, str]]] = {}
        for branch in branches:
            sources = froms(branch)
            rel = R.relation_of(sources[0]) if len(sources) == 1 and isinstance(sources[0], exp.Table) else None
            if rel is None or rel.kind != R.DELTA or branch.find(exp.Subquery):
                columns = {}
                break
            for name, e in zip(names, branch.expressions):  # by position, as a UNION pairs them
                value = e.this if isinstance(e, exp.Alias) else e
                if isinstance(value, exp.Column):
                    columns.setdefault(name, []).append((int(rel.name), value.name))
        out[item.alias] = {name: pairs for name, pairs in columns.items() if len(pairs) == len(branches)}
    return out


class Pushdown:
    """The filters of one maintenance's base-table reads. `values(captured_id, column)` are read
    from the transaction's i-diff instance once each; `table(rel)` is a base relation's quoted
    name, `delta(captured id)` the quoted name of a table's i-diff instance."""

    def __init__(self, cursor, table: Callable[[R.Relation], str], delta: Callable[[int], str]):
        self._cur = cursor
        self._table = table
        self._delta = delta
        self._values: dict[tuple[int, str], str | None] = {}

    def _any(self, column: str, captured_id: int, delta_column: str) -> str | None:
        key = (captured_id, delta_column)
        if key not in self._values:
            values = [v for (v,) in self._cur.execute(
                f"SELECT DISTINCT {ident(delta_column)} FROM {self._delta(captured_id)} "
                f"WHERE {ident(delta_column)} IS NOT NULL LIMIT {PUSHDOWN_LIMIT + 1}").fetchall()]
            self._values[key] = (None if len(values) > PUSHDOWN_LIMIT
                                 else Literal(values).as_string(self._cur) if values else "")
        inlined = self._values[key]
        if inlined is None:
            return None
        return f"{ident(column)} = ANY({inlined})" if inlined else "FALSE"

    def _select_filters(self, sel: exp.Select) -> dict[str, str]:
        """Per base alias of the SELECT's FROM: a filter its rows must pass to matter ('' for none)."""
        here = _scope(sel)
        if any(j.args.get("side") for j in sel.args.get("joins") or []):
            return {}
        deltas = _deltas_in_scope(sel)
        where = sel.args.get("where")
        equalities = [(c.this, c.expression) for c in
                      conjuncts(where.this if where else None) + [c for j in sel.args.get("joins") or []
                                                                  for c in conjuncts(j.args.get("on"))]
                      if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column)]
        edges = [(b, o) for x, y in equalities for b, o in ((x, y), (y, x))
                 if b.table in here and here[b.table].kind in RESTRICTED]
        filters: dict[str, str] = {}
        batches = _batch_columns(sel)
        for b, o in edges:  # joined to the batch
            other = here[o.table] if o.table in here else deltas.get(o.table)
            if other is not None and other.kind == R.DELTA:
                part = self._any(b.name, int(other.name), o.name)
            elif o.name in batches.get(o.table, {}):  # a derived table over the batch
                parts = [self._any(b.name, cid, column) for cid, column in batches[o.table][o.name]]
                part = None if None in parts else "(" + " OR ".join(dict.fromkeys(parts)) + ")"
            else:
                continue
            if part is not None:
                filters[b.table] = f"{filters[b.table]} AND {part}" if b.table in filters else part
        for _ in range(len(here)):  # joined to a restricted table, one link of the chain per round
            grown = False
            for b, o in edges:
                if b.table not in filters and o.table in filters and o.table != b.table:
                    filters[b.table] = (f"{ident(b.name)} IN (SELECT {ident(o.name)} FROM "
                                        f"{self._table(here[o.table])} WHERE {filters[o.table]})")
                    grown = True
            if not grown:
                break
        return filters

    def filters(self, queries: list[exp.Expression]) -> dict[R.Relation, str]:
        """Per base relation, map or cache the queries read: the WHERE its read may take (absent: read
        it whole)."""
        per: dict[R.Relation, list[str | None]] = {}
        for query in queries:
            for sel in query.find_all(exp.Select):
                found = self._select_filters(sel)
                for a, rel in _scope(sel).items():
                    if rel.kind in RESTRICTED:
                        per.setdefault(rel, []).append(found.get(a))
        return {rel: " OR ".join(f"({f})" for f in dict.fromkeys(fs))
                for rel, fs in per.items() if all(fs)}
