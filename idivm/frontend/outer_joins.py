"""LEFT, RIGHT and FULL outer joins -> a bag union of inner-join branches, NULL-padded.

The idIVM paper's rules cover inner joins only. An outer join is an inner join plus the rows of
the preserved side that have no partner, padded with NULLs (Larson and Zhou, ICDE 2007, §2;
Gupta and Mumick's survey):

    R ⟕_φ S  =  (R ⋈_φ S)  ⊎  ((R ▷_φ S) × NULL_S)          R ▷_φ S = R WHERE NOT EXISTS (S WHERE φ)
    R ⟗_φ S  =  (R ⋈_φ S)  ⊎  ((R ▷_φ S) × NULL_S)  ⊎  (NULL_R × (S ▷_φ R))
    R ⟖_φ S  =  S ⟕_φ R (columns in R's order)

so a chain of joins becomes a UNION ALL of branches, each an inner join of the tables it keeps,
with the tables it pads read as typed NULLs and one `NOT EXISTS` per padding. Every branch is
then an SPJ view with a semijoin, maintained by the rules that already exist (rules/union.py,
rules/semijoin.py): a padded row's identity is its branch b (hidden `__idivm_b`) with the
IDs of the tables it keeps; a row that moves between matched and padded (its last partner
deleted, a first one inserted, a join key updated) leaves one branch and enters another. The
rules behind each transition are those of ⋈ (Table 10) and of the antijoin, composed by the
union (footnote 2); docs/sql-support.md lists the shapes.

The condition φ of an outer join stays where it is: in the branch that matches, it joins; in the
branch that pads, it is the condition of the `NOT EXISTS` (so `ON a.k = b.k AND b.x > 0` pads
rows whose partners all have b.x <= 0, unlike the same conjunct in WHERE). WHERE applies to
every branch's rows, with the padded columns NULL; a branch in which a conjunct is a comparison
with a padded column can hold no row and is left out.

RIGHT and FULL joins add a branch of the right side's rows that no row of everything on the left
matches: a `NOT EXISTS` over the left side's rows in which the tables the condition reads are not
padded. Those are the rows of one inner join (`_left_rows`): walking the left side's joins back,
a LEFT (or FULL) join of a table nobody needs is left out (it drops no row of what it joins),
a table that is needed, or inner-joined, joins with its condition, and a RIGHT or FULL joined
table needed alone is all its rows. So `a JOIN b ON a.k = b.k RIGHT JOIN c ON c.k = b.k` pads the
c rows with `NOT EXISTS (SELECT 1 FROM a JOIN b ON a.k = b.k WHERE c.k = b.k)`, an antijoin over a
join (rules/semijoin.py). This needs every condition on that path to be false when a table
it reads is padded (a comparison is); a condition that could hold on NULLs is refused by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from ..algebra.tables import TableInfo
from .checks import refuse
from .clauses import conjuncts, from_item, where_conjuncts

OUTER_SIDES = ("LEFT", "RIGHT", "FULL")


def side_of(join: exp.Join) -> str:
    return (join.side or "").upper()


def has_outer_join(tree: exp.Select) -> bool:
    return any(side_of(j) in OUTER_SIDES for j in tree.args.get("joins") or [])


@dataclass
class OuterBranch:
    """One branch of the union: an inner join of `tables` (the first has no condition), a WHERE, and
    the scans it pads (alias -> table), whose columns it reads as typed NULLs."""

    tables: list[tuple[exp.Table, list[exp.Expression]]]
    where: list[exp.Expression] = field(default_factory=list)
    padded: dict[str, TableInfo] = field(default_factory=dict)

    def pad(self, e: exp.Expression) -> exp.Expression:
        """e with every column of a padded scan replaced by a NULL of the column's type."""
        return pad(e, self.padded)

    def select(self) -> exp.Select:
        """The branch as a SELECT (outputs left to the caller): its FROM, inner JOINs and WHERE."""
        first, _ = self.tables[0]
        # every part is a fresh copy, so the builders need not copy again (copy=False)
        q = exp.select(exp.Literal.number(1)).from_(first.copy(), copy=False)
        for t, on in self.tables[1:]:
            q = q.join(t.copy(), on=exp.and_(*[c.copy() for c in on], copy=False) if on else None,
                       join_type="inner" if on else "cross", copy=False)
        if self.where:
            q = q.where(exp.and_(*[exp.paren(c.copy(), copy=False) for c in self.where], copy=False), copy=False)
        return q

    def joined(self, t: exp.Table, on: list[exp.Expression]) -> "OuterBranch | None":
        """This branch inner-joined with t; None when the condition compares with a padded column."""
        padded_on = [self.pad(c) for c in on]
        if any(never_true(c) for c in padded_on):
            return None
        return replace(self, tables=self.tables + [(t, padded_on)])

    def padding(self, t: exp.Table, info: TableInfo, on: list[exp.Expression]) -> "OuterBranch":
        """This branch's rows that no t row matches, with t's columns NULL."""
        padded_on = [self.pad(c) for c in on]
        where = list(self.where)
        if not any(never_true(c) for c in padded_on):  # else no t row can match: every row is padded
            where.append(not_exists(t, padded_on))
        return replace(self, where=where, padded={**self.padded, t.alias_or_name: info})


def not_exists(t: exp.Table, on: list[exp.Expression]) -> exp.Expression:
    inner = exp.select(exp.Literal.number(1)).from_(t.copy(), copy=False)
    if on:
        inner = inner.where(exp.and_(*[exp.paren(c.copy(), copy=False) for c in on], copy=False), copy=False)
    return exp.Not(this=exp.Exists(this=inner))


def pad(e: exp.Expression, padded: dict[str, TableInfo]) -> exp.Expression:
    def fn(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column) or node.table not in padded:
            return node
        inner = node.find_ancestor(exp.Select)
        if inner is not None and any(s.alias_or_name == node.table for s in inner.find_all(exp.Table)
                                     if s.find_ancestor(exp.Select) is inner):
            return node  # a subquery's own table that shadows the padded scan's alias
        sql_type = padded[node.table].type_of(node.name)
        return exp.Cast(this=exp.null(), to=exp.DataType.build(sql_type, dialect="postgres", udt=True))

    return e.transform(fn)


_STRICT_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.DPipe)


def _is_null(e: exp.Expression) -> bool:
    """NULL, a cast of NULL, arithmetic with a NULL operand (NULL whatever the other is), or a CASE
    without ELSE none of whose branches can be taken (a padded subquery output, guard_derived_outputs:
    `CASE WHEN <NULL> IS NOT NULL THEN ... END`)."""
    e = e.unnest()
    if isinstance(e, _STRICT_ARITHMETIC):
        return _is_null(e.this) or _is_null(e.expression)
    if isinstance(e, exp.Case) and e.args.get("default") is None and not e.this:
        return all(_never_taken(i.this) or _is_null(i.args["true"]) for i in e.args.get("ifs") or [])
    return isinstance(e, exp.Null) or (isinstance(e, exp.Cast) and _is_null(e.this))


def _never_taken(c: exp.Expression) -> bool:
    """A CASE condition that is never TRUE: `x IS NOT NULL` of a NULL x, or a comparison with NULL."""
    c = c.unnest()
    if isinstance(c, exp.Not) and isinstance(c.this.unnest(), exp.Is):
        test = c.this.unnest()
        return isinstance(test.expression, exp.Null) and _is_null(test.this)
    return never_true(c)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)


def never_true(c: exp.Expression) -> bool:
    """A comparison with a NULL operand: NULL, so never TRUE (what padding does to a join condition)."""
    c = c.unnest()
    return isinstance(c, _COMPARISONS) and (_is_null(c.this) or _is_null(c.expression))


def _filtered_table(q: exp.Expression) -> tuple[exp.Table, exp.Expression, dict[str, exp.Expression]] | None:
    """(table, WHERE, output name -> its expression) of `(SELECT e AS name, ... FROM t WHERE ...)`,
    None if the subquery is anything else. Its computed outputs are guarded by t's key already
    (guard_derived_outputs), so they are NULL on a padded row wherever they are used."""
    if not isinstance(q, exp.Subquery) or not isinstance(q.this, exp.Select):
        return None
    inner = q.this
    if any(inner.args.get(k) for k in ("joins", "group", "having", "distinct", "limit", "order", "with", "offset")):
        return None
    src = (inner.args.get("from_") or inner.args.get("from"))
    where = inner.args.get("where")
    if src is None or not isinstance(src.this, exp.Table) or where is None or where.find(exp.Subquery, exp.Exists):
        return None
    names = {}
    for e in inner.expressions:
        c = e.this if isinstance(e, exp.Alias) else e
        if c.find(exp.Subquery, exp.Exists, exp.AggFunc, exp.Window):
            return None
        names[e.alias_or_name] = c
    return src.this, where.this, names


def guard_derived_outputs(tree: exp.Select, key_of) -> exp.Select:
    """In a query with outer joins, each computed output of a subquery in FROM becomes `CASE WHEN
    <a key column of its table> IS NOT NULL THEN <output> END` (key_of: table node -> a NOT NULL
    column), before sqlglot's merge_subqueries moves it into the outer SELECT.

    Why: where the subquery's side is NULL-padded its row does not exist, so every output of it
    is NULL. Merged, the output is computed over the padded (NULL) columns instead, which gives the
    same NULL only for strict expressions (`y + 1`): `COALESCE(y, 0)`, `y IS NULL`, a `CASE` or a
    constant would give a value on every padded row. A key column is NULL exactly on padded rows
    (a primary key never is), so the guard keeps matched rows as they are and padded ones NULL,
    in every branch the expansion makes. A subquery whose FROM is not a table is left alone (and
    refused later if it cannot be merged)."""
    if not any(side_of(j) in OUTER_SIDES for j in tree.find_all(exp.Join)):
        return tree
    for sq in list(tree.find_all(exp.Subquery)):
        if not isinstance(sq.parent, (exp.From, exp.Join)) or not isinstance(sq.this, exp.Select):
            continue
        body = sq.this
        src = from_item(body)
        if not isinstance(src, exp.Table):
            continue
        key = exp.column(key_of(src), src.alias_or_name, quoted=True)
        for e in list(body.expressions):
            inner = e.this if isinstance(e, exp.Alias) else e
            if isinstance(inner, exp.Column):
                continue
            guarded = exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=key.copy(), expression=exp.null())),
                                           true=inner.copy())])
            e.replace(exp.alias_(guarded, e.alias_or_name, quoted=True))
    return tree


def merge_filtered_sides(tree: exp.Select) -> exp.Select:
    """A filtering subquery over one table on a side of a query with outer joins becomes the table,
    its filter moved where it means the same (sqlglot's merge_subqueries leaves them):
    `x LEFT JOIN (SELECT ... FROM t WHERE p) q ON φ` is `x LEFT JOIN t q ON φ AND p` (p decides
    which rows of t can match), as for an inner join; a preserved side's filter joins WHERE when no
    later RIGHT or FULL join can pad that side. Other cases stay as they are (and are refused)."""
    if not has_outer_join(tree):
        return tree
    joins = tree.args.get("joins") or []
    src = tree.args.get("from_") or tree.args.get("from")
    sides = [(src, "FROM")] + [(j, side_of(j)) for j in joins]
    for pos, (node, side) in enumerate(sides):
        found = _filtered_table(node.this)
        if found is None:
            continue
        table, where, names = found
        alias = node.this.alias_or_name
        padded_later = any(sd in ("RIGHT", "FULL") for _, sd in sides[pos + 1:])
        if side in ("", "LEFT"):
            target = "on"
        elif side in ("FROM", "RIGHT") and not padded_later:
            target = "where"
        else:
            continue
        inner_alias = table.alias_or_name

        def rebind(e: exp.Expression) -> exp.Expression:  # the subquery's columns, as the outer query names them
            return e.transform(lambda c: exp.column(c.name, alias, quoted=True)
                                      if isinstance(c, exp.Column) and c.table == inner_alias else c)

        where = rebind(where)
        for c in list(tree.find_all(exp.Column)):
            if c.table == alias and c.name in names and c.find_ancestor(exp.Subquery) is not node.this:
                e = names[c.name]
                if isinstance(e, exp.Column):
                    c.set("this", exp.to_identifier(e.name, quoted=True))
                else:
                    c.replace(exp.paren(rebind(e)))
        table = table.copy()
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
        node.set("this", table)
        if target == "on":
            on = node.args.get("on")
            node.set("on", exp.and_(exp.paren(on), exp.paren(where)) if on is not None else where)
            if (node.kind or "").upper() == "CROSS":
                node.set("kind", None)
        else:
            tree.where(exp.paren(where), copy=False)
    return tree


def expand(tree: exp.Select, info_of) -> list[OuterBranch]:
    """The branches of a qualified SELECT whose FROM has outer joins (info_of: table node -> TableInfo).
    The WHERE of the query is every branch's, padded; branches it can never satisfy are left out."""
    src = from_item(tree)
    joins = tree.args.get("joins") or []
    for t in [src] + [j.this for j in joins]:
        if not isinstance(t, exp.Table):
            raise refuse("a subquery in FROM of a query with outer joins (join its tables directly)")
    branches = [OuterBranch(tables=[(src, [])])]
    left: list[tuple[exp.Table, str, list[exp.Expression]]] = [(src, "FROM", [])]  # the joins so far
    for j in joins:
        t, side, on = j.this, side_of(j), conjuncts(j.args.get("on"))
        if j.args.get("using"):  # qualify writes USING as ON; a join without its condition would be a cross join
            raise refuse("JOIN ... USING that could not be resolved")
        out: list[OuterBranch] = []
        for b in branches:
            matched = b.joined(t, on)
            if matched is not None:
                out.append(matched)
            if side in ("LEFT", "FULL"):
                out.append(b.padding(t, info_of(t), on))
        if side in ("RIGHT", "FULL"):
            out.append(_right_only(t, on, left, info_of, side))
        left.append((t, side, on))
        branches = out
    where = where_conjuncts(tree)
    result = []
    for b in branches:
        padded_where = [b.pad(c) for c in where]
        if not any(never_true(c) for c in padded_where):
            result.append(replace(b, where=b.where + padded_where))
    return result


def _right_only(t: exp.Table, on: list[exp.Expression], left: list[tuple[exp.Table, str, list[exp.Expression]]],
                info_of, side: str) -> OuterBranch:
    """The branch of t's rows that no row on the left matches: every table on the left padded."""
    names = {s.alias_or_name for s, _, _ in left}
    need = _reads(on, names)
    _require_null_rejecting(on, need, left, info_of, f"the {side} JOIN of {t.alias_or_name}")
    rows = _left_rows(left, need, info_of)
    inner = exp.select(exp.Literal.number(1)).from_(rows[0][0].copy(), copy=False)
    for s, cond in rows[1:]:
        inner = inner.join(s.copy(), on=exp.and_(*[c.copy() for c in cond], copy=False) if cond else None,
                           join_type="inner" if cond else "cross", copy=False)
    if on:
        inner = inner.where(exp.and_(*[exp.paren(c.copy(), copy=False) for c in on], copy=False), copy=False)
    padded = {s.alias_or_name: info_of(s) for s, _, _ in left}
    return OuterBranch(tables=[(t, [])], where=[exp.Not(this=exp.Exists(this=inner))], padded=padded)


def _reads(on: list[exp.Expression], names: set[str]) -> set[str]:
    return {c.table for e in on for c in e.find_all(exp.Column) if c.table in names}


def _require_null_rejecting(on: list[exp.Expression], tables: set[str], left, info_of, what: str) -> None:
    """Refuse a condition that may hold when one of `tables` is padded with NULLs."""
    info = {s.alias_or_name: s for s, _, _ in left}
    for name in sorted(tables):
        if not _may_be_padded(name, left):
            continue
        if not any(never_true(pad(c, {name: info_of(info[name])})) for c in on):
            raise refuse(f"a RIGHT or FULL JOIN after a join whose condition may hold when {name} is NULL-padded "
                         f"({what})", "compare the columns of the tables it reads with =, <, ... so that NULLs never match")


def _may_be_padded(name: str, left: list[tuple[exp.Table, str, list[exp.Expression]]]) -> bool:
    """Some row of the left side has this table's columns NULL: it was LEFT or FULL joined, or a
    RIGHT or FULL join came after it."""
    pos = next(i for i, (s, _, _) in enumerate(left) if s.alias_or_name == name)
    return left[pos][1] in ("LEFT", "FULL") or any(side in ("RIGHT", "FULL") for _, side, _ in left[pos + 1:])


def _left_rows(left: list[tuple[exp.Table, str, list[exp.Expression]]], need: set[str],
               info_of) -> list[tuple[exp.Table, list[exp.Expression]]]:
    """An inner join (first table, then each table with its condition) whose rows, projected on the
    tables of `need`, are the rows of the left side in which none of them is padded; walked from the
    last join back (module docstring)."""
    need = set(need)
    kept: list[tuple[exp.Table, list[exp.Expression]]] = []
    for pos in range(len(left) - 1, -1, -1):
        t, side, on = left[pos]
        name = t.alias_or_name
        if side == "FROM" or (side == "RIGHT" and need <= {name}) or (side == "FULL" and need == {name}):
            kept.append((t, []))  # all its rows are on the left
            break
        if side == "FULL" and not need:
            raise refuse("a RIGHT or FULL JOIN whose condition reads only tables joined ON TRUE (or on themselves alone) "
                         "after a FULL JOIN")
        if name not in need and side in ("LEFT", "FULL"):
            continue  # drops no row of what it joins
        earlier = {s.alias_or_name for s, _, _ in left[:pos]}
        reads = _reads(on, earlier)
        _require_null_rejecting(on, reads, left[:pos], info_of, f"the {side or 'inner'} JOIN of {name}")
        kept.append((t, on))
        need = (need - {name}) | reads
    kept.reverse()
    return kept
