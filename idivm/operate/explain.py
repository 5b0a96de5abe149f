"""What `idivm explain` prints: a view's plan with IDs, i-diff schemas, rule DAG, Δ-program and its
PostgreSQL rendering, from the catalog (or compiled afresh, before minimization); for a query that
is not registered, its compilation (a dry run)."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.plan import format_plan
from ..catalog import repository as catalog
from ..engines.postgres.render import format_rendered
from ..engines.spark.executor import InputTypes, spark_input_types, spark_plan
from ..frontend.driver import ignored_clauses
from ..names import display_name
from ..program.printer import format_program
from ..program.serialize import from_json
from ..program.steps import Program
from ..strategies.higher_order.target import STRATEGY as HIGHER_ORDER
from ..strategies.targets import diff_schemas_of
from .engine_choice import engine_summary
from .compile_in import compile_in
from .registry import compile_program
from .summary import compilation_summary, summary


def explain_view(conn: Connection, row: sa.Row, spark_settings=None) -> str:
    """The stored view: plan, i-diff schemas, rule DAG, Δ-program and the statements maintenance runs;
    with the Spark settings in effect, its engine policy and the cost model's choice too."""
    text = catalog.program_of(conn, row.id)
    program = from_json(text) if text is not None else None
    parts = _explained(f"view {display_name(row.schema_name, row.view_name)}  (strategy: {row.strategy})",
                       summary(conn, row), row.definition, row.strategy, row.plan_text,
                       catalog.diff_schema_labels(conn, row.id), catalog.derivations(conn, row.id), program,
                       spark_input_types(conn, row.id, program) if program is not None else InputTypes())
    if spark_settings is not None and row.mode == "deferred":
        parts.append("engine (docs/spark.md, \"Choosing the engine\"):\n" + _indent(engine_summary(conn, row, spark_settings)))
    return "\n\n".join(parts)


def explain_query(conn: Connection, sql: str, strategy: str) -> str:
    """What registering `sql` with `strategy` would create: its compilation (compiler.py), which
    writes nothing, takes no lock and needs no catalog (a database where idivm is not installed
    too). Refusals are registration's own. The program names the view's own tables and the base
    tables' Δs as compiled (self, self.cache, Δ[public.parts]); registration binds them to ids."""
    c = compile_in(conn, sql, strategy)
    schemas = [] if c.strategy == HIGHER_ORDER else [ds.label() for ds in diff_schemas_of(c.plan)]
    parts = _explained(f"view (the view)  (strategy: {c.strategy})", compilation_summary(c), sql, c.strategy,
                       format_plan(c.plan), schemas, c.program.derivations, c.program)
    return "\n\n".join(["dry run: what `idivm register-view` would create; nothing was created or kept\n"
                        "(the view's own tables and the base tables' Δs are named as compiled: self, self.cache, "
                        "Δ[schema.table]; registration binds them to ids)"] + parts)


def _explained(title: str, summary_text: str, definition: str, strategy: str, plan_text: str, schemas: list[str],
               derivations: list[str], program: Program | None, types: InputTypes = InputTypes()) -> list[str]:
    """The parts explain prints for a view, registered or only compiled: its summary, definition,
    plan, i-diff schemas, derivations, Δ-program and how PostgreSQL and Spark run it."""
    chosen = [d for d in derivations if d.startswith("strategy auto:")]  # the compiler records auto's choice
    derivs = [d for d in derivations if d not in chosen]
    parts = [title, summary_text, f"definition:\n  {definition}"]
    parts += [f"note: {n}" for n in ignored_clauses(definition)]
    parts += chosen
    if strategy != HIGHER_ORDER:  # its AGCA translation, below, takes the plan's place
        parts.append("plan (pass 1: IDs):\n" + _indent(plan_text))
    if schemas:
        parts.append("base-table i-diff schemas:\n" + _indent("\n".join(schemas)))
    if derivs:
        parts.append(f"{_derivations_title(strategy)}:\n" + _indent("\n".join(derivs)))
    if program is not None:  # step numbers as in the Δ-script
        parts.append("Δ-program:\n" + _indent(format_program(program)))
        parts.append("Δ-script (PostgreSQL):\n" + _indent(format_rendered(program)))
        parts.append("under --engine spark (docs/spark.md), Spark computes:\n" + _indent(spark_plan(program, types)))
    return parts


def explain_unminimized(conn: Connection, row: sa.Row) -> str:
    program = compile_program(conn, row, minimized=False)
    parts = [f"view {display_name(row.schema_name, row.view_name)}  (strategy: {row.strategy}), BEFORE minimization (pass 4)"]
    if program.derivations:
        parts.append(f"{_derivations_title(row.strategy, minimized=False)}:\n" + _indent("\n".join(program.derivations)))
    parts.append("Δ-program before minimization:\n" + _indent(format_program(program)))
    parts.append("Δ-script (PostgreSQL) before minimization:\n" + _indent(format_rendered(program)))
    return "\n\n".join(parts)


def _derivations_title(strategy: str, minimized: bool = True) -> str:
    if strategy == HIGHER_ORDER:
        return "higher-order compilation (VLDBJ'14 Sections 3-5: AGCA, viewlet transform, trigger programs)"
    if minimized:
        return "rule DAG (pass 2-4: instantiated rules, composed and minimized)"
    return "rule DAG (pass 2-3: instantiated and composed)"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
