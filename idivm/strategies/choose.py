"""--strategy auto: the id or the higher-order strategy for a view, by a heuristic on its plan,
from what scripts/bench_higher_order.py measured (docs/benchmarks.md, "The higher-order strategy";
tests/test_strategy_choice.py holds the heuristic to the committed run):

- a view with an uncorrelated nested aggregate (a scalar subquery compared in WHERE or HAVING that
  reads no outer column, `x > (SELECT avg(y) FROM t)`) goes to higher-order when that strategy
  translates it: one value for every row, which the first-order strategies keep as a part of the
  view with a single group, so that any change of its table re-derives every outer row (20x
  slower than the maps' nested sum at 100 changes, 4x at 10,000);
- every other view goes to id: join-aggregates (Q3, V'), EXISTS / NOT EXISTS (Q4, and `late`,
  TPC-H Q21's shape: a NOT EXISTS correlated by an inequality) and nested aggregates correlated by
  equalities (TPC-H Q17's and Q22's shapes, decorrelated into parts of the view whose touched groups
  alone are re-derived) were all maintained faster by id than by the maps, at 100 and at 10,000
  changes, and registered several times faster;
- a view the higher-order strategy refuses goes to id.

Where the first choice refuses the view (id refuses a nested aggregate correlated by an
inequality), auto takes the next strategy that maintains it (`resolve_auto`: the heuristic's
choice, then the others), so that auto maintains every view some strategy maintains, and refuses
only with each strategy's reason. The choice and its reason are stored with the view's program;
`idivm explain` prints them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlglot import exp

from ..algebra.plan import Aggregate, Union, has_nested_aggregates, nested_aggregates
from ..errors import UnsupportedQuery, first_line
from .higher_order.target import STRATEGY as HIGHER_ORDER
from .higher_order.translate import translate

AUTO = "auto"


def choose_strategy(plan) -> tuple[str, str]:
    """(strategy, why) for a view's plan."""
    spj = plan.cache if isinstance(plan, Aggregate) else plan
    if isinstance(spj, Union) and spj.outer_join:
        return "id", ("outer joins: their anti-joins re-derive only the preserved rows whose partners changed, "
                      "which the ID-based rules do directly")
    if not has_nested_aggregates(plan):
        return "id", ("no nested aggregate (a scalar subquery compared in WHERE or HAVING): the ID-based rules were the "
                      "faster choice for joins, aggregates and EXISTS / IN subqueries (docs/benchmarks.md)")
    if not any(_uncorrelated(sq) for sq in nested_aggregates(plan)):
        return "id", ("nested aggregates correlated by equalities: kept as parts of the view whose touched groups alone "
                      "are re-derived, which was faster than the maps (docs/benchmarks.md)")
    try:
        translate(plan)
    except UnsupportedQuery as e:
        return "id", f"the higher-order strategy refuses it ({str(e).splitlines()[0]})"
    return HIGHER_ORDER, ("an uncorrelated nested aggregate: one nested sum in a map, where a part of the view would "
                          "re-derive every row at each change of its table")


def _uncorrelated(sq) -> bool:
    """Whether a nested aggregate reads no column of the outer query."""
    own = {alias for alias, _ in sq.tables()}
    return sq.where is None or all(c.table in own for c in sq.where.find_all(exp.Column))


# every strategy auto may take, in the order it falls back to them after its first choice
FALLBACKS = ("id", HIGHER_ORDER, "tuple")

T = TypeVar("T")


def resolve_auto(plan, attempt: Callable[[str], T]) -> tuple[str, str, T]:
    """(strategy, why, what attempt(strategy) returned) for the first strategy whose attempt (a
    compilation, which raises UnsupportedQuery to refuse) succeeds: the heuristic's choice first,
    then the others in FALLBACKS order. When every strategy refuses, one UnsupportedQuery names
    each one's reason."""
    first, why = choose_strategy(plan)
    refused: list[tuple[str, str]] = []
    for strategy in dict.fromkeys((first, *FALLBACKS)):
        try:
            result = attempt(strategy)
        except UnsupportedQuery as e:
            refused.append((strategy, first_line(e).split("; use --strategy ")[0]))  # its advice: the next tries
            continue
        if refused:
            why = "; ".join(f"--strategy {s} refuses it ({r})" for s, r in refused)
        return strategy, why, result
    raise UnsupportedQuery("no strategy maintains this view: " + "; ".join(f"--strategy {s}: {r}" for s, r in refused))
