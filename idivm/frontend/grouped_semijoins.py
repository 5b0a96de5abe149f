"""EXISTS / IN subqueries that group or aggregate, as semijoins over an aggregating subquery in
their FROM (a part of the view, build_plan.py), decorrelated by what their WHERE compares.

    WHERE o.id IN (SELECT l.item FROM lines l WHERE l.order = o.id GROUP BY l.item HAVING sum(l.qty) > 120)
 -> WHERE o.id IN (SELECT "__idivm_g1"."__idivm_o1" FROM (SELECT l.item AS "__idivm_o1", l.order AS "__idivm_k1"
                   FROM lines l GROUP BY l.item, l.order HAVING sum(l.qty) > 120) AS "__idivm_g1"
                   WHERE "__idivm_g1"."__idivm_k1" = o.id)

For one outer row the subquery groups the rows whose inner sides equal the outer sides of its
correlated equalities; all of them have one value of each inner side (as `=` sees it, which is
how GROUP BY sees it too), so grouping every row by the inner sides as well forms the same groups,
and the outer row finds its own by the equalities. The grouped subquery reads no outer column: it is
maintained as a part, and the EXISTS / IN over it as any semijoin over a table (idIVM Section 5:
a semijoin's input needs only its i-diff and its post-state, which a part provides).

A subquery that aggregates without GROUP BY has one row per outer row: `x IN (SELECT max(v) ...)`
is `x = (SELECT max(v) ...)` (also under NOT: both are NULL where the value is), a nested aggregate,
and EXISTS of it is TRUE. Uncorrelated, with HAVING, it is wrapped like a grouped one. An EXISTS over
one such subquery written in its FROM (`EXISTS (SELECT 1 FROM (SELECT sum(b) AS s FROM r2 WHERE
r2.a = r1.b) n WHERE r1.a < n.s)`, DBToaster's r_existsnestedagg) is its WHERE over the subquery's
values (`(r1.a < (SELECT sum(b) ...)) IS TRUE`): nested aggregates. DISTINCT
alone in an EXISTS / IN subquery changes nothing (they ask whether a row, or a value, occurs).

Left as they are, and so refused by semijoins.py: correlation otherwise than by equalities of an
inner and an outer expression, outer columns in the outputs, GROUP BY or HAVING, LIMIT / OFFSET /
ORDER BY, and subqueries inside the subquery.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.ids import HIDDEN_PREFIX as HIDDEN
from .clauses import correlation, from_item, has_aggregation, has_from, inline_columns, reads_outer, semijoin_query

_LEFT = ("limit", "offset", "order", "qualify", "windows", "with", "with_", "laterals", "fetch")


def decorrelate_grouped_semijoins(tree: exp.Expression) -> exp.Expression:
    """Each EXISTS / IN subquery of the query's WHERE (or of a set operation's branches') that
    groups or aggregates, rewritten (a copy; tree unchanged)."""
    tree = tree.copy()
    found = 0
    for select in _selects(tree):
        where = select.args.get("where")
        if where is None:
            continue
        for node in list(where.find_all(exp.Exists, exp.In)):
            inner = semijoin_query(node)
            if not isinstance(inner, exp.Select) or node.parent_select is not select or not has_from(inner):
                continue
            if isinstance(node, exp.Exists) and _over_one_aggregate_row(inner):
                node.replace(_inlined(inner))
                continue
            if any(inner.args.get(k) for k in _LEFT) or inner.find(exp.Subquery, exp.Exists):
                continue
            distinct = inner.args.get("distinct")
            if distinct is not None and not distinct.args.get("on"):
                if not (inner.args.get("group") or inner.args.get("having") or _aggregates(inner)):
                    inner.set("distinct", None)  # EXISTS / IN ask only whether a row (a value) occurs
                    continue
            if not has_aggregation(inner):
                continue
            replaced = _rewrite(node, inner, f"{HIDDEN}g{found + 1}")
            if replaced is not None:
                found += 1
                node.replace(replaced)
    return tree


def _selects(tree: exp.Expression) -> list[exp.Select]:
    """The query's own SELECTs: itself, or each branch of its set operations."""
    if isinstance(tree, exp.Select):
        return [tree]
    if isinstance(tree, exp.SetOperation):
        return _selects(tree.this) + _selects(tree.expression)
    if isinstance(tree, exp.Subquery):
        return _selects(tree.this)
    return []


def _over_one_aggregate_row(inner: exp.Select) -> bool:
    """Whether an EXISTS subquery reads only one subquery in FROM that aggregates without GROUP BY
    (so has exactly one row), and filters and projects it."""
    sub = from_item(inner)
    if inner.args.get("joins") or has_aggregation(inner) or not isinstance(sub, exp.Subquery) \
            or not isinstance(sub.this, exp.Select) or not sub.alias:
        return False
    q = sub.this
    return _aggregates(q) and not any(q.args.get(k) for k in ("group", "having", "distinct") + _LEFT) \
        and all(isinstance(e, exp.Alias) for e in q.expressions)


def _inlined(inner: exp.Select) -> exp.Expression:
    """EXISTS (SELECT .. FROM (SELECT agg AS x ...) n WHERE c(n.x)) -> (c((SELECT agg ...))) IS TRUE: the
    one row exists and passes the WHERE exactly when c holds of it (NULL is no row, under NOT too)."""
    sub = from_item(inner)
    where = inner.args.get("where")
    if where is None:
        return exp.true()
    values = {e.alias: exp.Subquery(this=sub.this.copy().select(e.this.copy(), append=False)) for e in sub.this.expressions}
    return exp.Is(this=exp.Paren(this=inline_columns(where.this, sub.alias, values)), expression=exp.true())


def _aggregates(inner: exp.Select) -> bool:
    return any(e.find(exp.AggFunc) for e in inner.expressions)


def _rewrite(node: exp.Exists | exp.In, inner: exp.Select, name: str) -> exp.Expression | None:
    """What replaces the EXISTS / IN node; None where the module docstring says it is left."""
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in inner.expressions):
        return None
    split = correlation(inner)
    if split is None:
        return None
    local, keys = split
    group = inner.args.get("group")
    outside = list(inner.expressions) + ([inner.args["having"].this] if inner.args.get("having") else []) \
        + (list(group.expressions) if group else [])
    if any(reads_outer(inner, e) for e in outside):
        return None
    if isinstance(node, exp.In) and len(inner.expressions) != 1:
        return None  # several columns: refused by semijoins.py
    if not group and keys:  # one row per outer row
        if inner.args.get("having") or inner.args.get("distinct") is not None:
            return None
        if isinstance(node, exp.Exists):
            return exp.true()
        return exp.EQ(this=node.this.copy(), expression=exp.Subquery(this=inner.copy()))
    alias = exp.to_identifier(name, quoted=True)
    grouped = inner.copy()
    outputs = []  # the subquery's own outputs, named (GROUP BY may name them, or number them)
    for i, e in enumerate(grouped.expressions, 1):
        outputs.append(e.copy() if isinstance(e, exp.Alias) else exp.alias_(e.copy(), f"{HIDDEN}o{i}", quoted=True))
    outputs += [exp.alias_(k, f"{HIDDEN}k{i}", quoted=True) for i, (k, _) in enumerate(keys, 1)]
    grouped.set("expressions", outputs)
    grouped.set("where", exp.Where(this=exp.and_(*local)) if local else None)
    if keys:
        grouped.set("group", exp.Group(expressions=list(group.expressions) + [
            k.copy() for k, _ in keys if k not in group.expressions]))

    def column(n: str) -> exp.Column:
        return exp.Column(this=exp.to_identifier(n, quoted=True), table=alias.copy())

    value = column(outputs[0].alias) if isinstance(node, exp.In) else exp.Literal.number(1)
    outer = exp.select(value).from_(exp.Subquery(this=grouped, alias=exp.TableAlias(this=alias)))
    if keys:
        outer = outer.where(exp.and_(*[exp.EQ(this=column(f"{HIDDEN}k{i}"), expression=o)
                                       for i, (_, o) in enumerate(keys, 1)]), copy=False)
    if isinstance(node, exp.Exists):
        return exp.Exists(this=outer)
    return exp.In(this=node.this.copy(), query=exp.Subquery(this=outer))
