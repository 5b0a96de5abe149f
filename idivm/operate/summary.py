"""The summary at the top of `idivm explain`: what a user wants to know first, in plain words.

Which strategy maintains the view and why; for a grouped view, which aggregation rule (the
specialized SUM/COUNT/AVG rules of Tables 9, 11 and 12, or the general rule of Table 7, and what
rules the specialized ones out); the storage it takes (its table, caches and maps with their rows
and sizes, the logs it reads and how much of each it has not consumed); and for each base table,
which of its changes reach the view without a join and which are joined with which tables (the
joins are what a change costs). The detailed plan, rule DAG and Δ-script follow it.
"""
from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlglot import exp

from ..algebra.plan import Aggregate, all_parts
from ..catalog import repository as catalog
from ..compiler import Compilation
from ..engines.postgres.server_maintenance import MEASURING_BATCH, PRIOR_CHANGE_MS, PROBE_SHARE
from ..errors import IdivmError
from ..frontend.driver import compile_view_sql
from ..introspect.provider import PostgresSchema
from ..introspect.session import relation_bytes, row_count
from ..names import PART_SCHEMA, SELF, counted, display_name, size_text, storage_table
from ..program.relations import BASE, table_key
from ..program.serialize import from_json
from ..program.steps import Program, relations_read
from ..sqltext import qualified
from ..strategies.choose import choose_strategy
from ..strategies.higher_order.target import STRATEGY as HIGHER_ORDER
from .storage import log_sizes

_KIND = re.compile(r"Δ([+\-u])_")
_KIND_WORDS = {"+": "inserts", "-": "deletes", "u": "updates"}


def summary(conn: Connection, row: sa.Row) -> str:
    try:
        plan = compile_view_sql(PostgresSchema(conn), row.definition).plan
    except IdivmError:
        plan = None  # stale: the definition no longer compiles; the rest is still known
    program_json = catalog.program_of(conn, row.id)
    program = from_json(program_json) if program_json is not None else None
    tables = {i.id: (i.schema_name, i.table_name) for i in catalog.view_inputs(conn, row.id)}
    lines = [("strategy", _strategy(conn, row, plan)), ("mode", _mode(row))]
    lines += [("recompute", _recompute(row))] if row.mode == "deferred" else []
    lines += _compiled(row.strategy, plan, program)
    lines += [("storage", s) for s in _storage(conn, row)]
    lines += [("changes", s) for s in _changes(program, tables)] if program is not None else []
    return _format(lines)


def compilation_summary(c: Compilation) -> str:
    """The summary of a view compiled but not registered (a dry run): no mode, storage or logs yet."""
    strategy = f"{c.strategy}, chosen by --strategy auto: {c.why}" if c.why is not None else f"{c.strategy}, as given"
    tables = {table_key(schema, name): (schema, name) for schema, name in c.tables()}
    tables.update({table_key(PART_SCHEMA, p.part): (SELF, p.part) for p in all_parts(c.plan)})
    return _format([("strategy", strategy)] + _compiled(c.strategy, c.plan, c.program)
                   + [("changes", s) for s in _changes(c.program, tables)])


def _compiled(strategy: str, plan, program: Program | None) -> list[tuple[str, str]]:
    parts = [("parts", f"{SELF}.{p.part} AS {p.alias}: ({p.definition.sql('postgres')}), maintained first; its rows' "
                       "changes reach the view as a table's") for p in all_parts(plan)] if plan is not None else []
    return parts + _compiled_by_strategy(strategy, plan, program)


def _compiled_by_strategy(strategy: str, plan, program: Program | None) -> list[tuple[str, str]]:
    if strategy == HIGHER_ORDER:
        return [("maps", "DBToaster's viewlet transform: every aggregate and nested count is a map that each "
                         "change adds its delta to; the view is read from the maps")]
    if isinstance(plan, Aggregate) and program is not None:
        return [("aggregates", _aggregates(plan, program))]
    return []


def _format(lines: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in lines)
    shown = [(k if i == 0 or lines[i - 1][0] != k else "", v) for i, (k, v) in enumerate(lines)]
    return "summary:\n" + "\n".join(f"  {k.ljust(width)}  {v}" for k, v in shown)


def _strategy(conn: Connection, row: sa.Row, plan) -> str:
    chosen = [d for d in catalog.derivations(conn, row.id) if d.startswith("strategy auto:")]
    if chosen:
        return f"{row.strategy}, chosen by --strategy auto: {chosen[0].split(', because ', 1)[-1]}"
    if plan is None:
        return f"{row.strategy}, as registered"
    auto, why = choose_strategy(plan)
    same = "would choose it too" if auto == row.strategy else f"would choose {auto}"
    return f"{row.strategy}, as registered (--strategy auto {same}: {why})"


def _mode(row: sa.Row) -> str:
    if row.mode == "immediate":
        return "immediate: every writing statement maintains the view before it returns"
    engine = row.policy_engine or "the default engine (IDIVM_ENGINE, else postgres)"
    return f"deferred: `idivm maintain` or the scheduler applies the logged changes, on {engine}"


def _recompute(row: sa.Row) -> str:
    """When a maintenance recomputes the view instead of running its Δ-script, and the costs that decide it."""
    policy = row.policy_recompute or "auto"
    if row.caches_stale and policy == "auto":  # server_maintenance.prepare_maintenance's rent-or-buy rule
        rebuild = f" ({row.rebuild_ms:.1f} ms)" if row.rebuild_ms is not None else ""
        return ("its cache was left stale by the last recomputation: batches are recomputed again without it until "
                "what that cost beyond the Δ-script's estimates repays rebuilding the cache" + rebuild + "; then one is "
                "recomputed with the cache, and the Δ-script takes over")
    if row.caches_stale:
        return ("its cache was left stale by the last recomputation: the next maintenance that would run the Δ-script "
                "recomputes with the cache instead; then as its policy says")
    if policy != "auto":
        return f"{policy} (its policy: `idivm set-policy --recompute`)"
    per_change = (f"{row.change_ms * 1000:.1f} µs per logged change, as measured" if row.change_ms is not None else
                  f"{PRIOR_CHANGE_MS * 1000:.1f} µs per logged change until a batch of {MEASURING_BATCH} measures it")
    if row.recompute_ms is None:
        return f"auto: never yet, recomputing has not been measured; the Δ-script costs {per_change}"
    per = row.change_ms if row.change_ms is not None else PRIOR_CHANGE_MS
    if not row.recompute_measured:  # server_maintenance.PROBE_SHARE
        return (f"auto: when more than {int(row.recompute_ms * PROBE_SHARE / per):,} logged changes wait, to measure "
                f"what recomputing costs (its i-diffs and Δ-script cost {per_change}; its registration's fill took "
                f"{row.recompute_ms:.1f} ms, which for a grouped view includes the cache a recomputation skips); then "
                "when the Δ-script is estimated to cost more than the recomputation measured")
    return (f"auto: when more than {int(row.recompute_ms / per):,} logged changes wait (its i-diffs and Δ-script cost "
            f"{per_change}; recomputing {row.recompute_ms:.1f} ms, as measured)")


def _aggregates(plan: Aggregate, program: Program) -> str:
    if any(d.startswith("γ (specialized") for d in program.derivations):
        return ("specialized SUM/COUNT/AVG rules (Tables 9, 11, 12): each change adds to or subtracts from its "
                "group's totals; groups are not re-read")
    return ("general rule (Table 7): each change marks its groups, which are recomputed from "
            + ("the base tables" if plan.no_cache else "the intermediate cache") + f", because {_why_general(plan)}")


def _why_general(plan: Aggregate) -> str:
    if plan.no_cache:
        return f"there is no intermediate cache ({plan.no_cache})"
    if plan.having is not None:
        return "HAVING needs the totals of groups that are not in the view"
    others = sorted({type(a).__name__.upper() for _, e in plan.outputs for a in e.find_all(exp.AggFunc)
                     if not isinstance(a, (exp.Count, exp.Sum, exp.Avg))})
    if others:
        return f"{', '.join(others)} needs each group's rows"
    if plan.sum_count_args() is None:
        return "an aggregate has DISTINCT or an expression over the cache"
    return "a summed argument is not an exact number (float or double precision)"


def _storage(conn: Connection, row: sa.Row) -> list[str]:
    tables = [storage_table(row.id)] + [("idivm", name) for name in catalog.auxiliary_tables(conn, row.id)]
    out = []
    for schema, name in tables:
        table = qualified(schema, name)
        size = relation_bytes(conn, table)
        if size is None:
            continue
        rows = row_count(conn, table)
        what = f"view {display_name(row.schema_name, row.view_name)}, stored in" if (schema, name) == storage_table(row.id) else (
            "cache" if name.startswith("cache_") else "map")
        out.append(f"{what} {display_name(schema, name)}: {counted(rows, 'row')}, {size_text(size)}")
    inputs = [i for i in catalog.all_inputs(conn) if i.view_id == row.id]
    sizes = log_sizes(conn, {i.log_table for i in inputs})
    for i in inputs:
        if i.log_table not in sizes:
            out.append(f"log of {display_name(i.schema_name, i.table_name)}: none (only immediate views read it)")
            continue
        size, rows = sizes[i.log_table]
        waiting = 0 if row.mode == "immediate" else catalog.unconsumed_count(conn, i.log_table, row.id, row.last_snapshot)
        out.append(f"log of {display_name(i.schema_name, i.table_name)}: {counted(rows, 'row')}, {size_text(size)}; "
                   f"{waiting} not yet consumed by this view")
    return out


def _changes(program: Program, tables: dict) -> list[str]:
    """Per base table: the change kinds whose steps read no other base table, and the tables the
    others join. `tables`: each step's driven_by (a captured id, or a table key as compiled) ->
    (schema, table)."""
    by_table: dict[object, dict[str, set[str]]] = {}
    for step in program.steps:
        if step.driven_by is None:
            continue
        found = _KIND.search(step.purpose)
        kind = _KIND_WORDS[found.group(1)] if found else "changes"
        joined = {r.label() for r in relations_read(step) if r.kind == BASE}
        by_table.setdefault(step.driven_by, {}).setdefault(kind, set()).update(joined)
    out = []
    for (schema, name), kinds in sorted((tables[d], kinds) for d, kinds in by_table.items()):
        own = f"{schema}.{name}"
        direct = [k for k, joined in kinds.items() if not joined - {own}]
        joins = [f"{k} join {', '.join(sorted(joined - {own}))}" for k, joined in kinds.items() if joined - {own}]
        parts = ([f"{_words(direct)} reach the view without a join"] if direct else []) + joins
        out.append(f"{display_name(schema, name)}: {'; '.join(parts)}")
    return out


def _words(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
