"""A view recomputed in a deferred maintenance, as PostgreSQL runs it: idivm.recompute_<id>, the
view's refills (program/steps.Refill) rendered, called by finish_maintenance instead of
apply_<id> when the batch would cost the Δ-script more than recomputing (server_maintenance.py
decides; docs/maintenance.md, "Recomputing instead").

Each table is brought to its query's rows in the maintenance's snapshot, which is the state the
consumed window leads to. The view's own table, which applications and other views read, gets
only the difference: the query's rows go to a temporary table, then the table's rows that are not
among them are deleted and those missing are inserted (a hash anti-join on the columns that
identify a row, the whole rows compared by their binary images, `*=`, which tells 1.0 from 1.00
and holds NULLs equal; merge anti-joins where no column identifies a row, with nested loops off
for the two statements, whose quadratic plan a mis-estimate could otherwise pick). Its parts,
cache and maps, which only this view's maintenance reads (under its lock), are emptied and
filled again, as REFRESH MATERIALIZED VIEW fills a view: comparing them would cost more than the
recomputation it serves. A grouped view's cache is not even refilled where the view can be
computed from the cache's query (Refill.direct): it is left stale, and the next maintenance
recomputes with it (server_maintenance.py), so a run of large batches never fills a cache it
never reads.
"""
from __future__ import annotations

from sqlglot import exp

from ...program.steps import CACHE_ROLE, Refill
from ...sqltext import ident, qualified, string_literal
from .render import sql

FRESH = qualified("pg_temp", "idivm_fresh")


def refill_statements(r: Refill, source: exp.Query) -> tuple[list[str], list[str]]:
    """The statements that refill one table from `source` (r.source, or r.direct): (those before
    the ones that write it, those that write it and whose rows count as written); for the view's
    table the temporary table is dropped after them (DROP_FRESH)."""
    table = sql(r.target)
    cols = ", ".join(ident(c) for c in r.columns)
    if r.role == CACHE_ROLE:
        return [f"TRUNCATE {table}"], [f"INSERT INTO {table} ({cols})\n{sql(source)}"]
    old_row = f"ROW({', '.join(f'idivm_o.{ident(c)}' for c in r.columns)})"
    same = " AND ".join([f"idivm_n.{ident(k)} = idivm_o.{ident(k)}" for k in r.keys] + [f"idivm_n.* *= {old_row}"])
    before = [f"CREATE TEMP TABLE idivm_fresh AS SELECT {cols} FROM {table} WITH NO DATA",
              f"INSERT INTO {FRESH} ({cols})\n{sql(source)}",
              f"ANALYZE {FRESH}"]
    writes = [f"DELETE FROM {table} AS idivm_o WHERE NOT EXISTS (SELECT 1 FROM {FRESH} AS idivm_n WHERE {same})",
              f"INSERT INTO {table} ({cols}) SELECT {', '.join(f'idivm_n.{ident(c)}' for c in r.columns)} "
              f"FROM {FRESH} AS idivm_n WHERE NOT EXISTS (SELECT 1 FROM {table} AS idivm_o WHERE {same})"]
    return before, writes


DROP_FRESH = f"DROP TABLE {FRESH}"


def _refill(r: Refill, source: exp.Query) -> str:
    """PL/pgSQL: one table refilled from `source`, its statements and rows counted, its time added
    to the cache's or the view's."""
    before, writes = refill_statements(r, source)
    compared = r.role != CACHE_ROLE
    lines = [f"    EXECUTE {string_literal(s)};" for s in before]
    lines += ["    PERFORM set_config('enable_nestloop', 'off', true);"] if compared else []
    for s in writes:
        lines.append(f"    EXECUTE {string_literal(s)};\n"
                     "    GET DIAGNOSTICS idivm_n = ROW_COUNT; idivm_touched := idivm_touched + idivm_n;")
    if compared:
        lines.append("    PERFORM set_config('enable_nestloop', idivm_nestloop, true);")
        lines.append(f"    EXECUTE {string_literal(DROP_FRESH)};")
    timer = "idivm_cache_ms" if r.role == CACHE_ROLE else "idivm_view_ms"
    lines.append(f"    idivm_statements := idivm_statements + {len(before) + len(writes) + compared};\n"
                 f"    {timer} := {timer} + extract(epoch FROM clock_timestamp() - idivm_mark) * 1000; "
                 "idivm_mark := clock_timestamp();")
    return "\n".join(lines)


def recompute_body(refills: list[Refill]) -> str:
    """The body of idivm.recompute_<id>(idivm_with_caches boolean) RETURNS float8[]: the refills, as
    ARRAY[statements, rows written, cache ms, view ms] like apply_<id> (no i-diff was built:
    prepare_maintenance decided before), then 1 when the caches were left stale, else 0. Without
    idivm_with_caches, a view whose refill has a direct source is computed from it, its caches left
    as they are (Refill.direct)."""
    nl = "\n"
    view = refills[-1]
    full = nl.join(_refill(r, r.source) for r in refills)
    if view.direct is None:
        script = f"{full}\n    idivm_stale := 0;"
    else:
        script = (f"    IF idivm_with_caches THEN\n{full}\n      idivm_stale := 0;\n    ELSE\n"
                  f"{_refill(view, view.direct)}\n      idivm_stale := 1;\n    END IF;")
    return f"""
DECLARE
  idivm_n bigint;
  idivm_statements bigint := 0;
  idivm_touched bigint := 0;
  idivm_stale int;
  idivm_nestloop text := current_setting('enable_nestloop');
  idivm_mark timestamptz := clock_timestamp();
  idivm_cache_ms float8 := 0;
  idivm_view_ms float8 := 0;
BEGIN
{script}
  RETURN ARRAY[idivm_statements, idivm_touched, idivm_cache_ms, idivm_view_ms, idivm_stale]::float8[];
END
"""
