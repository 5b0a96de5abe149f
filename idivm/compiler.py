"""The compiler as one function: a view's SQL, a schema provider and a strategy in, its plan, target
and Δ-program out, with no connection and no catalog id inside.

Every stage is a value handed to the next: the frontend asks the schema provider (never the
database) for the tables and turns the SQL into a logical plan with IDs (frontend/); the strategy
turns the plan into a target (the view's own tables and what fills them) and a Δ-program over
symbolic relations (strategies/, program/relations.py): base tables' Δs by table name, the view's
own tables as `self`, `self.cache`, `self.map_<name>`. A dry run (`idivm explain --sql`) prints that
program as it is; registration binds it to the ids the catalog gives (`bound`) and stores it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .algebra.plan import base_tables, has_nested_aggregates
from .errors import IdivmError, UnsupportedQuery
from .frontend.build_plan import CompiledView
from .frontend.driver import FIRST_ORDER_REWRITES, compile_view_sql
from .frontend.schema import SchemaProvider
from .program.bind import bind
from .program.steps import Program
from .strategies.choose import AUTO, resolve_auto
from .strategies.higher_order.target import STRATEGY as HIGHER_ORDER
from .strategies.refills import refills
from .strategies.targets import bind_target, compile_target

ColumnTypes = Callable[[object], list[int]]  # a query tree -> the type OIDs of its columns


@dataclass
class Compilation:
    view: CompiledView  # the SQL, its plan with IDs and the tables it reads, as reflected
    strategy: str  # the strategy that maintains it (auto resolved)
    why: str | None  # auto's reason for choosing it; None when the strategy was given
    target: object  # strategies/targets.py: the view's own tables, symbolically named
    program: Program | None  # symbolic relations; `bound` binds them (and takes them over)

    @property
    def plan(self):
        return self.view.plan

    def tables(self) -> list[tuple[str, str]]:
        """(schema, table) of every base table the view reads, in the plan's order, once each."""
        return list(dict.fromkeys((t.schema, t.name) for t in base_tables(self.plan)))

    def bound(self, view_id: int, captured: dict[tuple[str, str], int]) -> tuple[object, Program]:
        """The target and program bound to a registered view's ids (captured: (schema, table) ->
        captured table id, for each of `tables()`). Binding takes the program over (its trees are
        bound in place): the compilation has no program afterwards."""
        program, self.program = self.program, None
        if program is None:
            raise ValueError("this compilation was bound already: compile again to bind it to other ids")
        target, program = bind_target(self.target, view_id), bind(program, view_id, captured)
        program.refills = refills(target)
        return target, program


def compile_view(sql: str, schema: SchemaProvider, strategy: str, column_types: ColumnTypes | None = None,
                 minimized: bool = True) -> Compilation:
    """Compile `sql` under `strategy` (auto: the first strategy that maintains it, strategies/choose.py).
    UnsupportedQuery (and the frontend's errors) refuse the view, with one line naming the construct."""
    try:
        view = compile_view_sql(schema, sql)
    except UnsupportedQuery as e:  # a nested aggregate the higher-order strategy's form refuses (one over
        try:  # joins): the first-order strategies' form may still read it, decorrelated
            view = compile_view_sql(schema, sql, FIRST_ORDER_REWRITES)
        except IdivmError:
            raise e from None
    first_order: list[CompiledView] = []

    def view_for(name: str) -> CompiledView:
        """The higher-order strategy keeps nested aggregates as nested counts; the first-order ones
        read them decorrelated into parts of the view (frontend/scalar_subqueries.py)."""
        if name == HIGHER_ORDER or not has_nested_aggregates(view.plan):
            return view
        if not first_order:
            try:
                first_order.append(compile_view_sql(schema, sql, FIRST_ORDER_REWRITES))
            except UnsupportedQuery:  # its decorrelated form has what they refuse: they refuse the
                first_order.append(view)  # nested aggregate (strategies/targets.make_target says so)
        return first_order[0]

    def attempt(name: str):
        compiled = view_for(name)
        return compiled, compile_target(compiled.plan, name, column_types, sql, minimized)

    why = None
    if strategy == AUTO:
        strategy, why, (view, (target, program)) = resolve_auto(view.plan, attempt)
        program.derivations.insert(0, f"strategy auto: {strategy}, because {why}")
    else:
        view, (target, program) = attempt(strategy)
    return Compilation(view, strategy, why, target, program)
