"""Rebuilding a view and every view over it (refresh, register --replace, `idivm apply`).

A rebuild drops the views' tables and registers them again, inputs first, in one transaction that
holds their base tables against writers: readers see the old contents until it commits, then the
new. The views over a replaced view keep their definitions and are compiled against its new
columns; one that no longer compiles is named and nothing changes. Policies, modes, the
privileges granted on the views (engines/postgres/grants.py) and the indexes added to their storage tables
(engines/postgres/indexes.py) are kept.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.plan import base_tables
from ..capture.triggers import reinstall_functions
from ..catalog import repository as catalog
from ..engines.postgres.grants import restore_grants, saved_grants
from ..engines.postgres.indexes import restore_indexes, saved_indexes
from ..engines.postgres.materialize import Fill
from ..errors import IdivmError, first_line
from ..frontend.driver import compile_view_sql
from ..introspect.provider import PostgresSchema
from ..introspect.session import current_schema
from ..names import display_name, storage_table
from .dependencies import dependency_order, edges
from .view_files import tables_named
from .policy import notify_threshold
from .registry import drop_locked, drop_unread_capture, make_immediate_locked, readers_closure, register_locked
from .transactions import Transactions

Wanted = dict[int, tuple[str, str, str, bool]]  # view id -> (definition, strategy, mode, minimized)


def rebuild_plan(conn: Connection, row: sa.Row, verb: str, new: Wanted | None = None
                 ) -> tuple[list[sa.Row], Wanted, set[tuple[str, str]]]:
    """The views to rebuild (the view, then the views over it, inputs first), what each becomes
    (`new` for those it names, e.g. the view itself when replaced, or every changed file of `idivm
    apply`; else as registered), and the base tables to hold against writers. A definition that no
    longer compiles is named here, before any lock is taken; `verb` names the work in errors
    (`refresh "v"`)."""
    reads = edges(conn)
    members = {row.id} | readers_closure(row.id, reads)
    rows = {r.id: r for r in catalog.all_views(conn) if r.id in members}
    chain = [rows[v] for v in dependency_order(sorted(members), reads)]
    wanted = {r.id: (r.definition, r.strategy, r.mode, True) for r in chain}
    new = new or {}
    wanted.update({v: w for v, w in new.items() if v in wanted})
    tables: set[tuple[str, str]] = set()
    for r in chain:
        try:
            compiled = compile_view_sql(PostgresSchema(conn), wanted[r.id][0])
        except IdivmError as e:
            if r.id == row.id and r.id in new:
                raise
            if r.id in new:  # a new definition over a view rebuilt before it: it compiles once that one is
                current = current_schema(conn)
                tables |= tables_named(wanted[r.id][0], current)
                continue
            raise IdivmError(f'cannot {verb}: the definition of {display_name(r.schema_name, r.view_name)} no '
                             f"longer compiles: {e}") from None
        tables |= {(t.schema, t.name) for t in base_tables(compiled.plan)}
    tables -= {(r.schema_name, r.view_name) for r in chain}
    return chain, wanted, tables


def rebuild_locked(conn: Connection, row: sa.Row, chain: list[sa.Row], wanted: Wanted, fill: Fill, verb: str) -> None:
    """Drop and register again the views of `chain` as `wanted` says, in the caller's transaction
    (whose base tables it holds against writers)."""
    inputs = {cid for r in chain for cid in catalog.input_ids(conn, r.id)}
    grants = {r.id: saved_grants(conn, r.schema_name, r.view_name) for r in chain}
    indexes = {r.id: saved_indexes(conn, storage_table(r.id)) for r in chain}
    for r in reversed(chain):
        drop_locked(conn, r, keep_capture=True)  # logs and triggers stay: the rebuilt views read them again
    for r in chain:
        sql, strategy, mode, minimized = wanted[r.id]
        try:
            register_locked(conn, r.schema_name, r.view_name, sql, strategy, minimized, fill)
        except IdivmError as e:
            if r.id == row.id:
                raise
            raise IdivmError(f'cannot {verb}: {display_name(r.schema_name, r.view_name)} reads it '
                             f"and would no longer compile: {e}") from None
        if mode == "immediate":
            make_immediate_locked(conn, r.schema_name, r.view_name)
        catalog.copy_policy(conn, r, r.schema_name, r.view_name)
        restore_grants(conn, r.schema_name, r.view_name, grants[r.id])
        new_id = catalog.view_by_name(conn, r.schema_name, r.view_name, catalog.NAMES).id
        restore_indexes(conn, storage_table(new_id), indexes[r.id])
    drop_unread_capture(conn, inputs)  # tables a changed definition no longer reads
    reinstall_functions(conn, notify_threshold)


def query_failed(e: psycopg.Error) -> None:
    """Raise an error of the view's own query while filling it as one line naming it (else return)."""
    state = (e.sqlstate or "")[:2]
    if state in ("21", "22"):  # a data exception (or a lookup finding two rows) while filling the view: its own query failed
        raise IdivmError(f"PostgreSQL could not evaluate the view's query: {first_line(e)}") from None
    if state == "42":  # e.g. UNION branches of unmatched types
        raise IdivmError(f"PostgreSQL rejected the view's query: {first_line(e)}") from None


def rebuild(tx: Transactions, row: sa.Row, fill: Fill, verb: str, new: Wanted | None = None) -> list[str]:
    """Rebuild a view and the views over it (rebuild_plan, rebuild_locked), those named in `new` as it says,
    in one transaction; returns the rebuilt views' names, inputs first. `verb` names the work in
    errors."""
    with tx.reading() as conn:
        chain, wanted, tables = rebuild_plan(conn, row, verb, new)
    with query_errors(), tx.writers_blocked(tables, [(r.schema_name, r.view_name) for r in chain]) as conn:
        rebuild_locked(conn, row, chain, wanted, fill, verb)
    return [display_name(r.schema_name, r.view_name) for r in chain]


@contextlib.contextmanager
def query_errors() -> Iterator[None]:
    """An error of the view's own query while filling it, as one line naming it."""
    try:
        yield
    except psycopg.Error as e:
        query_failed(e)
        raise
