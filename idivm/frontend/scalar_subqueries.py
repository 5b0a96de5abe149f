"""Scalar subqueries used as values in the outputs, decorrelated into a LEFT JOIN with a subquery
that groups by what the correlation compares.

    SELECT r.a, (SELECT sum(s.v) FROM s WHERE s.k = r.b AND s.v > 0) AS t FROM r
 -> SELECT r.a, ("__idivm_s1"."__idivm_v1") AS t FROM r
      LEFT JOIN (SELECT s.k AS "__idivm_k1", SUM(s.v) AS "__idivm_v1" FROM s WHERE s.v > 0 GROUP BY s.k)
        AS "__idivm_s1" ON "__idivm_s1"."__idivm_k1" = r.b

A subquery that aggregates without GROUP BY has exactly one row for each outer row: its aggregates
over the rows its correlated equalities select. Grouped by the inner sides of those equalities, the
same rows form one group per value, which the outer row finds by the join (a NULL on either side of
an equality matches nothing in both forms). Where no row matches, the LEFT JOIN gives NULL, which
is what SUM, AVG, MIN and MAX of no rows are; COUNT of no rows is 0, so a count is read through
COALESCE (the "count bug" of decorrelation, Kim's and Ganski-Wong's, avoided): each aggregate is
replaced by its own value for no rows, and the expression around them is evaluated as written.
The grouped subquery is then a part of the view (build_plan.py, algebra/plan.PartScan), maintained
by the i-diff rules; the same holds inside an aggregate of a grouped query (`SUM(b * (SELECT ...))`:
the value joins each row before the grouping), and outside the aggregates of a query with GROUP BY
(its correlation can only read group keys, so its value is one per group and joins the GROUP BY).

An EXISTS used as a value (`SELECT r.a, EXISTS (SELECT 1 FROM s WHERE s.k = r.b) AS e`) is first
`(SELECT count(*) FROM s WHERE s.k = r.b) > 0`, the same truth value (never NULL).

A subquery grouped only by inner sides of its correlated equalities (`(SELECT count(*) FROM s WHERE
s.k = r.k GROUP BY s.k)`) has at most one group for an outer row, and no row (so NULL, also for a
count) where none matches: decorrelated the same way, its counts read without COALESCE and its value
NULL where no group joined (a matched group's key is never NULL: it equals the outer row's).

Left as they are, and so refused by checks.py: subqueries correlated otherwise than by equalities
of an inner and an outer expression, with another GROUP BY, DISTINCT, HAVING, LIMIT or a subquery in FROM,
with no aggregate (they may return several rows), whose aggregates read the outer row, and a
subquery outside the aggregates of a query that aggregates without GROUP BY (one row even over no
rows, which a join cannot give).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.ids import HIDDEN_PREFIX as HIDDEN
from .clauses import conjuncts, correlation, from_item, has_from, reads_outer, reads_outside, semijoin_query
from .single_row_subqueries import single_row_value

_CLAUSES = ("group", "having", "distinct", "limit", "offset", "order", "qualify", "windows", "with", "with_",
            "laterals", "fetch")


def decorrelate_scalar_subqueries(tree: exp.Expression) -> exp.Expression:
    """The scalar subqueries of the outputs (every strategy's frontend: none keeps them otherwise)."""
    if isinstance(tree, exp.SetOperation):
        return _branches(tree, decorrelate_scalar_subqueries)
    return _decorrelated(tree, where=False)


def decorrelate_nested_aggregates(tree: exp.Expression) -> exp.Expression:
    """Those of the outputs, WHERE and HAVING: the first-order strategies' frontend. A scalar subquery
    compared in WHERE or HAVING (a nested aggregate) is the same value per row or group; the
    higher-order strategy keeps those as nested counts and sums instead (compiler.py chooses).
    Also those in the WHERE of the query's EXISTS / IN subqueries, where only an inner join may
    stand (semijoins.py): one there that would need a LEFT JOIN is left as it is (and refused)."""
    if isinstance(tree, exp.SetOperation):
        return _branches(tree, decorrelate_nested_aggregates)
    tree = _decorrelated(tree, where=True)
    if not isinstance(tree, exp.Select) or tree.args.get("where") is None:
        return tree
    for k, node in enumerate(list(tree.args["where"].find_all(exp.Exists, exp.In)), 1):
        inner = semijoin_query(node)
        if isinstance(inner, exp.Select) and node.parent_select is tree:
            inner.replace(_decorrelated(inner, where=True, prefix=f"e{k}_", outer_join=False))
    return tree


def _branches(tree: exp.SetOperation, rewrite) -> exp.SetOperation:
    """A UNION / EXCEPT / INTERSECT (a copy) with each branch rewritten: each is a query of its own."""
    tree = tree.copy()
    for side in ("this", "expression"):
        tree.set(side, rewrite(tree.args[side]))
    return tree


def _decorrelated(tree: exp.Expression, where: bool, prefix: str = "s", outer_join: bool = True) -> exp.Expression:
    """tree (a copy) with its scalar subqueries decorrelated into joins with parts named
    __idivm_<prefix><k>, those inside each of them first; `outer_join`: whether one that needs a
    LEFT JOIN may be (else it is left as it is)."""
    if not isinstance(tree, exp.Select) or not has_from(tree):
        return tree
    tree = tree.copy()
    if any(isinstance(e, exp.Star) for e in tree.expressions):  # `*` must not take the joined parts' columns:
        joins = tree.args.get("joins") or []  # the FROM items' own, in order (not under USING or NATURAL,
        if any(j.args.get("using") or j.args.get("method") for j in joins):  # which merge columns)
            return tree
        stars = [exp.Column(this=exp.Star(), table=exp.to_identifier(s.alias_or_name))
                 for s in [from_item(tree)] + [j.this for j in joins]]
        tree.set("expressions", [x for e in tree.expressions for x in (stars if isinstance(e, exp.Star) else [e])])
    for e in tree.expressions:
        for node in list(e.find_all(exp.Exists)):
            if not any(isinstance(a, (exp.Subquery, exp.Exists)) for a in _ancestors(node, e)):
                _exists_as_count(node)
    grouped = bool(tree.args.get("group") or tree.args.get("distinct") or tree.args.get("having")) or any(
        a.find_ancestor(exp.Subquery) is None for e in tree.expressions for a in e.find_all(exp.AggFunc))
    # (expression, whether it is evaluated per group: outputs and HAVING of a grouped query; WHERE per row)
    places = [(e, grouped) for e in tree.expressions]
    if where:
        places += [(tree.args[k].this, k == "having") for k in ("where", "having") if tree.args.get(k) is not None]
    found = 0
    for place, per_group in places:
        for sq in _outermost_subqueries(place):
            inside_aggregate = sq.find_ancestor(exp.AggFunc) is not None
            if per_group and not inside_aggregate and not tree.args.get("group"):
                continue
            name = f"{prefix}{found + 1}"
            # its own nested aggregates first: each a part of the part it becomes (a part in a part's FROM)
            decorrelated = _decorrelate(_decorrelated(sq.this, where=True, prefix=f"{name}_"), f"{HIDDEN}{name}")
            if decorrelated is None:
                continue
            part, on, value, columns = decorrelated
            inner = not per_group and tree.args.get("where") is not None and place is tree.args["where"].this \
                and _dropped_without_match(sq, place, value)
            if not inner and not outer_join:
                continue
            found += 1
            _cross_joins(tree)
            tree.join(part, on=on, join_type="inner" if inner else "left", copy=False)
            sq.replace(value)
            if per_group and not inside_aggregate:
                group = tree.args["group"]
                group.set("expressions", group.expressions + columns)
    return tree


_STRICT = (exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _dropped_without_match(sq: exp.Subquery, where: exp.Expression, value: exp.Expression) -> bool:
    """Whether the WHERE drops every row the subquery finds no rows for: it stands, through arithmetic
    only, in a comparison that is a conjunct of the WHERE, and its value over no rows is NULL (no
    count, only arithmetic over its aggregates). Then an inner join with its grouping means the
    same as the LEFT JOIN (at most one group matches a row: it is grouped by what the row is
    compared with) and is cheaper to maintain, and it is what an EXISTS / IN subquery may hold."""
    value = value.copy()
    for call in list(value.find_all(exp.Dot)):  # idivm.single_row(count, v) is NULL exactly when v is
        if (v := single_row_value(call)) is not None:
            call.replace(v)
    if any(not isinstance(n, _STRICT + (exp.Column, exp.Literal, exp.Identifier)) for n in value.walk()):
        return False
    at = sq.parent
    while isinstance(at, _STRICT):
        at = at.parent
    return isinstance(at, _COMPARISONS) and any(c is at for c in conjuncts(where))


def _exists_as_count(node: exp.Exists) -> None:
    """EXISTS (SELECT .. FROM .. WHERE c) used as a value -> (SELECT count(*) FROM .. WHERE c) > 0, in
    place: both are true exactly when a row qualifies and false otherwise, never NULL (a count of
    no rows is 0), so the value is a scalar subquery the decorrelation below reads."""
    inner = node.this
    if not isinstance(inner, exp.Select) or not has_from(inner) or any(inner.args.get(k) for k in _CLAUSES) \
            or any(e.find(exp.AggFunc) for e in inner.expressions):
        return
    count = inner.copy().select(exp.Count(this=exp.Star()), append=False)
    node.replace(exp.Paren(this=exp.GT(this=exp.Subquery(this=count), expression=exp.Literal.number(0))))


def _outermost_subqueries(e: exp.Expression) -> list[exp.Subquery]:
    """The scalar subqueries of an output expression that are not inside another subquery."""
    return [sq for sq in e.find_all(exp.Subquery)
            if isinstance(sq.this, exp.Select) and not isinstance(sq.parent, (exp.In, exp.Exists, exp.From, exp.Join))
            and not any(isinstance(a, (exp.Subquery, exp.Exists)) for a in _ancestors(sq, e))]


def _ancestors(node: exp.Expression, top: exp.Expression) -> list[exp.Expression]:
    """node's ancestors up to top, top included."""
    out, at = [], node.parent
    while at is not None:
        out.append(at)
        if at is top:
            break
        at = at.parent
    return out


def _cross_joins(tree: exp.Select) -> None:
    """`FROM a, b` as `FROM a CROSS JOIN b`: a join appended after a comma could not read `a` in ON."""
    for join in tree.args.get("joins") or []:
        if not any(join.args.get(k) for k in ("on", "using", "method", "side", "kind")):
            join.set("kind", "CROSS")


def _decorrelate(inner: exp.Select, name: str):
    """(the grouped subquery aliased `name`, the join condition, the value, its columns) for a
    subquery of the shape the module docstring says; None for any other."""
    group = inner.args.get("group")
    if any(inner.args.get(k) for k in _CLAUSES if k != "group") or not has_from(inner) or len(inner.expressions) != 1:
        return None
    sources = [from_item(inner)] + [j.this for j in inner.args.get("joins") or []]
    if not all(isinstance(s, exp.Table) or (isinstance(s, exp.Subquery) and s.alias and not reads_outside(s.this))
               for s in sources):
        return None  # (a subquery: a part its own nested aggregates became, or one it had; not a lateral one)
    split = correlation(inner)
    if split is None:
        return None
    local, keys = split  # the correlated equalities' (inner side, outer side)

    def inner_only(e: exp.Expression) -> bool:
        return not e.find(exp.Subquery, exp.Exists) and not reads_outer(inner, e)

    if group is not None and not all(any(g == k for k, _ in keys) for g in group.expressions):
        return None  # several groups for one outer row: PostgreSQL fails on the second
    value = inner.expressions[0].unalias().copy()
    aggregates = list(value.find_all(exp.AggFunc))
    if not aggregates or not all(inner_only(a) for a in aggregates) or value.find(exp.Subquery, exp.Exists):
        return None
    alias = exp.to_identifier(name, quoted=True)
    # the grouped subquery's columns, named as no column of the outer query can be (its unqualified
    # names would turn ambiguous): idivm's reserved prefix
    outs = [exp.alias_(k, f"{HIDDEN}k{i}", quoted=True) for i, (k, _) in enumerate(keys, 1)]
    columns = []
    for j, a in enumerate(aggregates, 1):
        outs.append(exp.alias_(a.copy(), f"{HIDDEN}v{j}", quoted=True))
        column = exp.Column(this=exp.to_identifier(f"{HIDDEN}v{j}", quoted=True), table=alias.copy())
        columns.append(column)
        empty = exp.Coalesce(this=column.copy(), expressions=[exp.Literal.number(0)]) \
            if isinstance(a, exp.Count) and group is None else column.copy()  # grouped: no group is no row, NULL
        if a is value:
            value = empty
        else:
            a.replace(empty)
    if any(not reads_outer(inner, c) for c in value.find_all(exp.Column)):
        # an inner column outside the aggregates: PostgreSQL rejects it
        return None
    if group is not None:  # no group, no row: the value is NULL, not the expression over NULL aggregates
        matched = exp.Column(this=exp.to_identifier(f"{HIDDEN}k1", quoted=True), table=alias.copy())
        value = exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=matched, expression=exp.null())), true=value)])
    part = exp.select(*outs).from_(sources[0].copy())
    for j in inner.args.get("joins") or []:
        part.append("joins", j.copy())
    if local:
        part = part.where(exp.and_(*local), copy=False)
    if keys:
        part = part.group_by(*[k.copy() for k, _ in keys], copy=False)
    on = exp.and_(*[exp.EQ(this=exp.Column(this=exp.to_identifier(f"{HIDDEN}k{i}", quoted=True), table=alias.copy()),
                           expression=o) for i, (_, o) in enumerate(keys, 1)]) if keys else exp.true()
    return exp.Subquery(this=part, alias=exp.TableAlias(this=alias)), on, exp.Paren(this=value), columns
