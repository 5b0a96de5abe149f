"""Aggregates with FILTER (WHERE ...), written as the aggregate of a CASE.

    count(*) FILTER (WHERE c)           ->  count(CASE WHEN c THEN 1 END)
    sum(x) FILTER (WHERE c)             ->  sum(CASE WHEN c THEN x END)       (avg, min, max, count(x) alike)
    count(DISTINCT x) FILTER (WHERE c)  ->  count(DISTINCT CASE WHEN c THEN x END)

count, sum, avg, min and max skip NULL arguments, so a row whose condition is not true adds
nothing, exactly as FILTER leaves it out (a group where no row passes: count 0, the others NULL,
both ways). What follows is an ordinary aggregate, for every rule and strategy. FILTER on any
other aggregate is left as it is, and refused where the aggregate is (frontend/aggregates.py).
"""
from __future__ import annotations

from sqlglot import exp

_SKIPPING_NULLS = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


def inline_aggregate_filters(tree: exp.Expression) -> exp.Expression:
    """Every FILTER of count, sum, avg, min and max in tree, moved into its argument (a copy)."""
    tree = tree.copy()
    for node in list(tree.find_all(exp.Filter)):
        agg, where = node.this, node.expression
        if not isinstance(agg, _SKIPPING_NULLS) or not isinstance(where, exp.Where):
            continue
        agg = agg.copy()
        arg = agg.this
        if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
            arg.set("expressions", [_when(where.this, arg.expressions[0])])
        elif isinstance(arg, exp.Star):
            agg.set("this", _when(where.this, exp.Literal.number(1)))
        elif arg is not None and not isinstance(arg, exp.Distinct):
            agg.set("this", _when(where.this, arg))
        else:
            continue
        node.replace(agg)
    return tree


def _when(condition: exp.Expression, value: exp.Expression) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
