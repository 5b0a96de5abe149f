"""--strategy auto: the id or the higher-order strategy for a view, by a heuristic on its plan,
from what scripts/bench_higher_order.py measured (docs/benchmarks.md, "The higher-order strategy"):

- a view with nested aggregates (scalar subqueries compared in WHERE or HAVING, which the
  first-order strategies read decorrelated into parts of the view where they are correlated by
  equalities, and refuse otherwise) goes to higher-order when that strategy translates it: it
  keeps them as nested counts and sums in maps;
- every other view goes to id: the join-aggregates (Q3, V') and the EXISTS / NOT EXISTS views (Q4,
  and `late`, TPC-H Q21's shape: a NOT EXISTS correlated by an inequality) were all maintained
  faster by id than by the maps, at 100 and at 10,000 changes (the ID-based rules re-derive only
  the outer rows whose subquery rows changed);
- a view the higher-order strategy refuses goes to id.

Where the first choice refuses the view, auto takes the next strategy that maintains it
(`resolve_auto`: the heuristic's choice, then the others), so that auto maintains every view some
strategy maintains, and refuses only with each strategy's reason. The choice and its reason are
stored with the view's program; `idivm explain` prints them.
"""
from __future__ import annotations

from ..algebra.plan import Aggregate, Union, has_nested_aggregates
from collections.abc import Callable
from typing import TypeVar

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
    try:
        translate(plan)
    except UnsupportedQuery as e:
        return "id", f"the higher-order strategy refuses it ({str(e).splitlines()[0]})"
    return HIGHER_ORDER, ("nested aggregates (scalar subqueries compared in WHERE or HAVING): kept as nested counts and "
                          "sums in maps instead of parts of the view recomputed per touched group")


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
