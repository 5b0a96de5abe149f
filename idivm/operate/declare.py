"""Registering and dropping views inside a transaction someone else opened: the alembic operations
of migration_ops.py (`op.register_view`, `op.drop_view`) run in the user's migration transaction,
so that a failed migration leaves no view behind and a view is there exactly when its tables are.

The API (api.py) opens its own transactions and takes a REPEATABLE READ snapshot after locking the
base tables; here the transaction is the caller's (READ COMMITTED, as alembic runs it). Every
statement after the LOCK sees the tables as they stand with writers held out, so the fill and the
first logged change still meet. One case cannot be made exact and is refused: the same transaction
already wrote a base table whose changes are logged (another view reads it). Those writes are in
the fill and would also be in the view's first window.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.plan import base_tables
from ..capture.triggers import log_table
from ..catalog import repository as catalog
from ..engines.postgres.materialize import create_as
from ..errors import IdivmError, UnknownObject
from ..frontend.build_plan import compile_view_sql
from ..introspect.provider import PostgresSchema
from ..names import display_name, parse_name
from ..sqltext import qualified, run
from .dependencies import dependents
from .folder import what_differs
from .install import install_or_upgrade
from .rebuild import rebuild_locked, rebuild_plan
from .registry import MODES, drop_locked, make_immediate_locked, register_locked


def register_in(conn: Connection, name: str, sql: str, strategy: str = "id", mode: str = "deferred",
                replace: bool = False, if_not_exists: bool = False) -> str:
    """register_view's work in the caller's transaction; returns "created", "exists", "unchanged"
    or "replaced" as Engine.register_view does."""
    if mode not in MODES:
        raise IdivmError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    install_or_upgrade(conn)
    schema, view = parse_name(name)
    schema = schema or conn.execute(sa.text("SELECT current_schema()")).scalar()
    compiled = compile_view_sql(PostgresSchema(conn), sql)
    row = catalog.view_by_name(conn, schema, view)
    if row is not None and if_not_exists:
        return "exists"
    if row is not None and replace:
        why = what_differs(conn, row, sql, strategy, mode, lambda: compiled.plan)
        if not why:
            return "unchanged"
        chain, wanted, tables = rebuild_plan(conn, row, f'replace "{name}"', {row.id: (sql, strategy, mode, True)})
        _lock(conn, tables)
        rebuild_locked(conn, row, chain, wanted, create_as, f'replace "{name}"')
        _own_writes_pending(conn, [(r.schema_name, r.view_name) for r in chain])
        return "replaced"
    tables = {(t.schema, t.name) for t in base_tables(compiled.plan)}
    _lock(conn, tables)
    register_locked(conn, schema, view, sql, strategy, True, create_as)
    if mode == "immediate":
        make_immediate_locked(conn, schema, view)
    _own_writes_pending(conn, [(schema, view)])
    return "created"


def drop_in(conn: Connection, name: str) -> None:
    """drop_view's work in the caller's transaction."""
    schema, view = parse_name(name)
    row = catalog.view_by_name(conn, schema, view) if _installed(conn) else None
    if row is None:
        raise UnknownObject(f'no maintained view named "{name}"')
    readers = dependents(conn, row.id)
    if readers:
        raise IdivmError(f'cannot drop "{name}": the maintained view(s) {", ".join(readers)} read it; drop them first')
    drop_locked(conn, row)


def _own_writes_pending(conn: Connection, views: list[tuple[str, str]]) -> None:
    """A view registered here has consumed what its snapshot shows, and a snapshot shows its own
    transaction's writes: those the migration makes after this operation would count as consumed
    and never reach the view. Its own xid is added to the in-progress list of each view's stored
    snapshot, so they are its first window (the writes before it were refused by _lock)."""
    own = int(conn.execute(sa.text("SELECT CAST(pg_current_xact_id() AS text)")).scalar())
    for schema, view in views:
        row = catalog.view_by_name(conn, schema, view)
        xmin, xmax, xip = row.last_snapshot.split(":")
        running = sorted({int(x) for x in xip.split(",") if x} | {own})
        conn.execute(sa.text("UPDATE idivm.views SET last_snapshot = :s WHERE id = :v"),
                     {"s": f"{min(int(xmin), own)}:{max(int(xmax), own + 1)}:{','.join(map(str, running))}", "v": row.id})


def _installed(conn: Connection) -> bool:
    return conn.execute(sa.text("SELECT to_regclass('idivm.views') IS NOT NULL")).scalar()


def _lock(conn: Connection, tables: set[tuple[str, str]]) -> None:
    """Hold the base tables against writers; refuse when this transaction already wrote one whose
    changes are logged (see the module's docstring)."""
    if not tables:
        return
    names = [qualified(s, t) for s, t in sorted(tables)]
    run(conn, f"LOCK TABLE {', '.join(names)} IN SHARE ROW EXCLUSIVE MODE")
    moved = conn.execute(sa.text("SELECT idivm.rewritten_since_snapshot(CAST(:t AS regclass[]))"),
                         {"t": names}).scalar()
    if moved is not None:  # a REPEATABLE READ migration whose snapshot predates a TRUNCATE: it would fill from nothing
        raise IdivmError(f"cannot register the view in this transaction: {moved} was truncated or rewritten after "
                         "its snapshot; run the migration again")
    for schema, table in sorted(tables):
        cid = catalog.captured_id(conn, schema, table)
        if cid is None or conn.execute(sa.text("SELECT to_regclass(:q) IS NULL"), {"q": log_table(cid)}).scalar():
            continue
        if run(conn, f"SELECT 1 FROM {log_table(cid)} WHERE xid = pg_current_xact_id_if_assigned() LIMIT 1").fetchone():
            raise IdivmError(f"register the view before writing to {display_name(schema, table)} in the same "
                             "transaction: its writes so far would be counted twice")
