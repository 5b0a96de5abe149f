"""From a view's plan to its target tables and Δ-script, for every plan shape.

- Project: an SPJ view maintained by the i-diff rules.
- Union: UNION ALL, one SPJ Δ-script per branch.
- Aggregate: a grouped view (GROUP BY / DISTINCT / UNION) over an intermediate
  cache, which is itself a Project or a Union.
"""
from __future__ import annotations

from ..algebra.plan import Aggregate, Project, Union
from ..program.steps import Program
from .aggregate import AggregateTarget, aggregate_program, cache_name
from .aggregate_sum import choose_rule
from .diff_schemas import base_diff_schemas
from .render import Target
from .strategies import compile_program
from .union import UnionTarget, union_program


def make_target(schema: str, name: str, plan, captured: dict, view_id: int, column_types=None):
    """column_types(sql) -> type OIDs of a query's columns: lets a grouped view use the specialized
    SUM/COUNT/AVG rules when its arguments are exact numbers (without it, the general rule)."""
    if isinstance(plan, Aggregate):
        cache = make_target("idivm", cache_name(view_id), plan.cache, captured, view_id)
        target = AggregateTarget(schema=schema, name=name, view_id=view_id, agg=plan, cache=cache)
        if column_types is not None:
            choose_rule(target, column_types)
        return target
    if isinstance(plan, Union):
        return UnionTarget(schema=schema, name=name, union=plan, captured=captured)
    return Target(schema=schema, name=name, plan=plan, captured=captured)


def build_program(target, strategy: str, minimized: bool = True) -> Program:
    if isinstance(target, AggregateTarget):
        if target.agg.no_cache:  # footnote 6: no cache to maintain
            return aggregate_program(target, Program(strategy=strategy))
        return aggregate_program(target, build_program(target.cache, strategy, minimized))
    if isinstance(target, UnionTarget):
        return union_program(target, lambda b: compile_program(b, strategy, minimized))
    return compile_program(target, strategy, minimized)


def diff_schemas_of(plan):
    """Base-table i-diff schemas of every SPJ part of a plan."""
    if isinstance(plan, Aggregate):
        return diff_schemas_of(plan.cache)
    if isinstance(plan, Union):
        return [s for b in plan.branches for s in base_diff_schemas(b)]
    assert isinstance(plan, Project)
    return base_diff_schemas(plan)
