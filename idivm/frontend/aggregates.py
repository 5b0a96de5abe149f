"""GROUP BY, aggregates, HAVING and DISTINCT -> an Aggregate over an intermediate cache.

The SPJ part of the query becomes the cache: one column per group-key expression
(``g<i>``) and per distinct aggregate argument (``a<j>``). The select list and
HAVING are rewritten over those columns, so recomputing a group reads the cache
only (Figure 7's shape: base-table changes reach the cache, the cache reaches the
view). DISTINCT without GROUP BY is grouping on every output column (Section 4,
pass 1 remark).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.placeholders import CACHE, SUBQUERY, cache_column, subquery_value
from ..algebra.plan import Aggregate, Node, Project
from ..errors import UnsupportedQuery
from .checks import refuse

SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


def build_aggregate(tree: exp.Select, core: Node, outputs: list[tuple[str, exp.Expression]],
                    having_subqueries: list | None = None) -> Aggregate:
    """having_subqueries: the scalar subqueries of HAVING (semijoins.extract_having_subqueries),
    each left in HAVING as the placeholder placeholders.SUBQUERY; their correlated columns
    are rewritten to the group keys they must be."""
    for bad, name in ((exp.Filter, "aggregate FILTER (WHERE ...)"), (exp.WithinGroup, "ordered-set aggregates")):
        if tree.find(bad):
            raise refuse(name)
    for agg in tree.find_all(exp.AggFunc):
        if agg.find_ancestor(exp.Subquery) is not None:
            continue  # an aggregate of a scalar subquery in HAVING: it aggregates its own table
        if not isinstance(agg, SUPPORTED_AGGREGATES):
            raise UnsupportedQuery(f"aggregate {agg.sql('postgres')} not supported yet; supported: count, sum, avg, min, max")
        if agg.find(exp.AggFunc) is not agg or any(a is not agg for a in agg.find_all(exp.AggFunc)):
            raise refuse("nested aggregates")
    distinct = tree.args.get("distinct")
    group = tree.args.get("group")
    if distinct is not None:
        if distinct.args.get("on"):
            raise refuse("DISTINCT ON")
        if group is not None or any(e.find(exp.AggFunc) for _, e in outputs):
            raise refuse("DISTINCT together with GROUP BY or aggregates")
        key_exprs = [e for _, e in outputs]
    else:
        key_exprs = list(group.expressions) if group is not None else []

    # the cache's columns by the expression they hold (equal trees are one column)
    cache_cols: list[tuple[str, exp.Expression]] = []
    key_names: dict[exp.Expression, str] = {}
    arg_names: dict[exp.Expression, str] = {}
    for e in key_exprs:
        if e not in key_names:
            key_names[e.copy()] = f"g{len(key_names)}"
            cache_cols.append((key_names[e], e.copy()))
    keys = list(key_names.values())

    def arg_col(e: exp.Expression) -> exp.Expression:
        if e not in arg_names:
            arg_names[e.copy()] = f"a{len(arg_names)}"
            cache_cols.append((arg_names[e], e.copy()))
        return cache_column(arg_names[e])

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.AggFunc):
            node = node.copy()
            arg = node.this
            if isinstance(arg, exp.Distinct):  # a row value (count(DISTINCT (a, b))): a cache column each
                node.set("this", exp.Distinct(expressions=[
                    exp.Tuple(expressions=[arg_col(y) for y in x.expressions]) if isinstance(x, exp.Tuple)
                    else arg_col(x) for x in arg.expressions]))
            elif arg is not None and not isinstance(arg, exp.Star):
                node.set("this", arg_col(arg))
            return node
        if node in key_names:
            return cache_column(key_names[node])
        return node

    def over_cache(e: exp.Expression, where: str) -> exp.Expression:
        out = e.transform(rewrite)
        for c in out.find_all(exp.Column):
            if not (CACHE.marks(c) or SUBQUERY.marks(c)):
                raise UnsupportedQuery(
                    f"column {c.sql('postgres')} in {where} must appear in GROUP BY or be used in an aggregate")
        return out

    new_outputs = [(n, over_cache(e, "the select list")) for n, e in outputs]
    having = tree.args.get("having")
    having_expr = None
    if having is not None:
        body = exp.Paren(this=having.this.copy())
        for node, sq in zip(list(body.find_all(exp.Subquery)), having_subqueries or []):
            if sq.where is not None:  # its outer columns are the group's keys
                def outer(c: exp.Expression, alias=sq.alias) -> exp.Expression:
                    if isinstance(c, exp.Column) and c.table != alias:
                        if c not in key_names:
                            raise UnsupportedQuery(f"column {c.sql('postgres')} in a HAVING subquery must appear in GROUP BY")
                        return cache_column(key_names[c])
                    return c
                sq.where = sq.where.transform(outer)
            node.replace(subquery_value(sq.alias))
        having_expr = over_cache(body.this, "HAVING")
    cache = Project(child=core, outputs=cache_cols, stable=frozenset(keys))
    return Aggregate(cache=cache, keys=keys, outputs=new_outputs, having=having_expr,
                     having_subqueries=list(having_subqueries or []))
