"""--strategy auto: the id or the higher-order strategy for a view, by a heuristic on its plan,
from what scripts/bench_higher_order.py measured (docs/benchmarks.md, "higher-order"):

- a view with EXISTS / IN subqueries or nested aggregates (scalar subqueries compared in WHERE or
  HAVING, which the first-order strategies read decorrelated into parts of the view where they are
  correlated by equalities, and refuse otherwise) goes to higher-order when that strategy
  translates it: the id strategy re-derives every outer row a change of the subquery's table may
  affect, many times the work of the subquery's counts kept as maps (TPC-H Q4's shape,
  docs/benchmarks.md);
- every other view goes to id, which maintained the join-aggregates Q3 and V' faster than the
  maps at batches of 100 and 10,000;
- a view the higher-order strategy refuses goes to id.

Where the first choice refuses the view, auto takes the next strategy that maintains it
(`resolve_auto`: the heuristic's choice, then the others), so that auto maintains every view some
strategy maintains, and refuses only with each strategy's reason. The choice and its reason are
stored with the view's program; `idivm explain` prints them.
"""
from __future__ import annotations

from ..algebra.plan import Aggregate, Project, Union, walk
from collections.abc import Callable
from typing import TypeVar

from ..errors import UnsupportedQuery, first_line
from .higher_order.target import STRATEGY as HIGHER_ORDER
from .higher_order.translate import translate

AUTO = "auto"


def choose_strategy(plan) -> tuple[str, str]:
    """(strategy, why) for a view's plan."""
    spj = plan.cache if isinstance(plan, Aggregate) else plan
    having = isinstance(plan, Aggregate) and plan.having_subqueries
    if isinstance(spj, Union) and spj.outer_join:
        return "id", ("outer joins: their anti-joins re-derive only the preserved rows whose partners changed, "
                      "which the ID-based rules do directly")
    if not having and not any(p.subqueries for p in walk(spj) if isinstance(p, Project)):
        return "id", "no subquery in WHERE or HAVING: the ID-based rules are the faster choice (docs/benchmarks.md)"
    try:
        translate(plan)
    except UnsupportedQuery as e:
        return "id", f"the higher-order strategy refuses it ({str(e).splitlines()[0]})"
    return HIGHER_ORDER, ("subqueries in WHERE or HAVING (EXISTS / IN / nested aggregates): kept as nested counts and sums "
                          "in maps instead of re-deriving the outer rows a change may affect")


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
