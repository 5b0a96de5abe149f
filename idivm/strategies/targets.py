"""From a view's plan to its targets and Δ-program, for every plan shape.

- Project: an SPJ view maintained by the i-diff rules.
- Union: UNION ALL, one SPJ program per branch.
- Aggregate: a grouped view (GROUP BY / DISTINCT / UNION) over an intermediate
  cache, which is itself a Project or a Union.
- Under the higher-order strategy, any of them: its maps and view table (higher_order/).
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..algebra.plan import ROW_KEY, Aggregate, Project, Union, all_parts, bind_parts, has_nested_aggregates, part_scans
from ..errors import IdivmError, UnsupportedQuery
from ..names import SELF, own_part, own_table
from ..program.steps import Program
from ..rules import RULES
from ..program.numeric_scale import EXACT_TYPE_OIDS, fixed_scale
from ..rules.aggregate_sum import choose_rule
from ..rules.aggregate_target import AggregateTarget
from ..rules.part import part_program
from ..rules.diff_schemas import base_diff_schemas
from .higher_order.scope import SumType
from .higher_order.target import STRATEGY as HIGHER_ORDER, HigherOrderTarget, higher_order_program, make_higher_order_target
from .id import id_program
from ..rules.spj import SpjTarget, full_query
from ..program.relations import VIEW, relation_of
from ..program.trees import alias, col, select, subquery
from .tuple import tuple_program
from ..rules.union import UnionTarget


def compile_target(plan, strategy: str, column_types=None, definition: str | None = None,
                   minimized: bool = True) -> tuple[object, Program]:
    """The view's target and Δ-program under a strategy, its own tables named symbolically
    (names.own_table): nothing here knows a catalog id. column_types(query) -> type OIDs of a
    query's columns: lets a grouped view use the specialized SUM/COUNT/AVG rules when its
    arguments are exact numbers (without it, the general rule), and tells the higher-order
    strategy which sums it can keep exactly. `definition`: the view's SQL (the higher-order
    strategy types its table by it)."""
    if strategy != HIGHER_ORDER:
        parts = all_parts(plan)
        if parts and column_types is not None:
            column_types = _over_part_definitions(column_types, parts)
        target = make_target(plan, strategy, column_types)
        program = build_program(target, strategy, minimized)
        if not parts:
            return target, program
        target.parts = [make_target(p.plan, strategy, column_types, part=p.part) for p in parts]
        programs = [part_program(t, p.part, build_program(t, strategy, minimized), list(p.table.column_names), k)
                    for k, (p, t) in enumerate(zip(parts, target.parts))]
        for st in program.steps:
            st.stage = len(parts)
        return target, Program(strategy=program.strategy, steps=[st for pr in programs for st in pr.steps] + program.steps,
                               derivations=[d for pr in programs for d in pr.derivations] + program.derivations)
    schema, name = own_table(None, SELF)
    target = make_higher_order_target(schema, name, plan, definition or "", _sum_types(plan, column_types))
    return target, higher_order_program(target)


def make_target(plan, strategy: str, column_types=None, part: str = SELF):
    """A first-order strategy's target for the plan (compile_target)."""
    schema, name = own_table(None, part)
    if has_nested_aggregates(plan):  # one the first-order frontend could not decorrelate (compiler.py)
        raise UnsupportedQuery("a scalar subquery compared in WHERE or HAVING (a nested aggregate) that the first-order "
                               "strategies cannot decorrelate (correlated otherwise than by equalities, or in a query "
                               "whose decorrelated form they refuse) is maintained only by --strategy higher-order "
                               "(or auto)")
    if isinstance(plan, Aggregate):
        cache = make_target(plan.cache, strategy, part="cache" if part == SELF else f"{part}_cache")
        target = AggregateTarget(schema=schema, name=name, agg=plan, cache=cache)
        if column_types is not None:
            choose_rule(target, column_types)
        return target
    if isinstance(plan, Union):
        return UnionTarget(schema=schema, name=name, union=plan)
    return SpjTarget(schema=schema, name=name, plan=plan)


def bind_target(target, view_id: int):
    """The target with its own tables bound to the view's id (as program/bind.py binds its program):
    what registration creates and fills. Its plan's parts are named as bound, in place (the
    queries that fill its tables read them)."""
    schema, name = own_table(view_id, own_part(target.name))
    changes = {"schema": schema, "name": name}
    if isinstance(target, HigherOrderTarget):
        changes["view_id"] = view_id
    if isinstance(target, AggregateTarget):
        changes["cache"] = bind_target(target.cache, view_id)
    if getattr(target, "parts", None):
        changes["parts"] = [bind_target(p, view_id) for p in target.parts]
    if not isinstance(target, HigherOrderTarget):
        bind_parts(target.operator, view_id, own_table)  # also a part's own parts (a part in its FROM)
    return replace(target, **changes)


def _over_part_definitions(column_types, parts):
    """column_types for queries that read parts, which do not exist before registration: each
    part's table read as its defining subquery (with a row number of the same type)."""
    by_name = {own_table(None, p.part)[1]: p for p in parts}

    def fn(node: exp.Expression) -> exp.Expression:
        rel = relation_of(node)
        if rel is None or rel.kind != VIEW or rel.name not in by_name:
            return node
        rows = select([exp.Star(), alias(exp.cast(exp.null(), "bigint"), ROW_KEY)],
                      [subquery(by_name[rel.name].definition.copy(), "d")])
        return subquery(rows, node.alias_or_name)

    return lambda query: column_types(query.transform(fn))


SUM_TYPE_NAMES = {20: "bigint", 1700: "numeric"}  # the types SUM over an exact type has


def _sum_types(plan, column_types):
    """sum_type(cache column) for the higher-order strategy: the type PostgreSQL gives SUM of the
    column and the scale all its values share (None: each value has its own), if the column's own
    type is exact (integers, numeric), else None."""
    if column_types is None or not isinstance(plan, Aggregate) or not isinstance(plan.cache, Project):
        return None
    cache = SpjTarget(*own_table(None, "cache"), plan=plan.cache)

    def sum_type(column: str) -> SumType | None:
        query = select([col("q", column), exp.Sum(this=col("q", column))], [subquery(full_query(cache), "q")])
        argument, total = column_types(query.group_by(col("q", column), copy=False))
        if argument.oid not in EXACT_TYPE_OIDS:
            return None
        return SumType(SUM_TYPE_NAMES[total.oid], fixed_scale(argument))

    return sum_type


STRATEGIES = ("id", "tuple", HIGHER_ORDER, "auto")  # auto: resolved at registration (choose.py)


def compile_program(target: SpjTarget, strategy: str, minimized: bool = True) -> Program:
    """An SPJ target's program under a strategy (grouped views and unions build on it)."""
    if strategy == "id":
        return id_program(target, minimized)
    if strategy == "tuple":
        return tuple_program(target)
    raise IdivmError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def build_program(target, strategy: str, minimized: bool = True, row_ids: dict | None = None) -> Program:
    """A first-order target's program: an SPJ target's, the strategy's composition of the SPJ
    operators' i-diff rules (compile_program); any other operator's (γ, ∪), its rule in rules.RULES
    over its inputs' programs (an aggregate without an intermediate cache has no input program: an
    empty one stands for it). row_ids: the rows each step of a union writes, which the rules of an
    aggregate over it read."""
    if not isinstance(target, SpjTarget):
        row_ids = {} if row_ids is None else row_ids
        inputs = [build_program(t, strategy, minimized, row_ids) for t in target.inputs] or [Program(strategy=strategy)]
        return RULES[type(target.operator)].program(target, inputs, row_ids)
    return compile_program(target, strategy, minimized)


def diff_schemas_of(plan):
    """Base-table i-diff schemas of every SPJ part of a plan (a part's table's among them), and of
    its parts' plans."""
    return _diff_schemas(plan) + [s for p in part_scans(plan) for s in diff_schemas_of(p.plan)]


def _diff_schemas(plan):
    if isinstance(plan, Aggregate):
        return _diff_schemas(plan.cache)
    if isinstance(plan, Union):
        return [s for b in plan.branches for s in base_diff_schemas(b)]
    assert isinstance(plan, Project)
    return base_diff_schemas(plan)
