"""The one path from "maintain this query as that view" to a stored, filled view, and from "drop it"
or "rebuild it" to the result. The API (`Engine.register_view`, `refresh`, `drop_view`, `apply`),
and through it the CLI, and the alembic operations (migration_ops.py) all call `register`,
`rebuild` and `drop` here; they differ only in where the transactions come from:

- `OwnTransactions` (the API): a throwaway transaction to compile and look up in, then a
  REPEATABLE READ transaction that locks the base tables against writers before its snapshot, so
  nothing slips between the fill and the first logged change;
- `CallerTransaction` (a migration): everything in the transaction alembic opened (READ
  COMMITTED), so a failed migration leaves no view behind. Every statement after the LOCK sees the
  tables as they stand with writers held out, so the fill and the first logged change still meet.
  One case cannot be made exact and is refused: the same transaction already wrote a base table
  whose changes are logged (another view reads it); those writes are in the fill and would also
  be in the view's first window.

A replace of a view whose query and strategy are as registered, and whose mode alone differs,
switches the mode in place where the transaction is REPEATABLE READ (catching up to immediate needs
one snapshot for the log window and the tables); in a migration's transaction it rebuilds the view
instead, which is as exact and needs no such snapshot.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Protocol

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog import repository as catalog
from ..engines.postgres.executor import MaintenanceReport, run_maintenance
from ..engines.postgres.maintenance_lock import lock_view
from ..engines.postgres.materialize import Fill
from ..engines.postgres.table_locks import begin_with_writers_locked_out, lock_against_writers
from ..errors import IdivmError
from ..frontend.build_plan import compile_view_sql
from ..introspect.provider import PostgresSchema
from ..introspect.session import current_schema, current_xid
from ..names import display_name, parse_name
from ..strategies.targets import STRATEGIES
from .dependencies import dependents
from .view_files import what_differs
from .rebuild import Wanted, query_failed, rebuild_locked, rebuild_plan
from .registry import MODES, compile_in, drop_locked, make_immediate_locked, register_locked, sync_immediate

Tables = set[tuple[str, str]]  # (schema, name)


@dataclass(frozen=True)
class Request:
    """What a user asked to register (the CLI's register-view, the API's register_view, a file of
    `idivm apply`, `op.register_view`)."""
    name: str
    sql: str
    strategy: str = "id"
    mode: str = "deferred"
    minimized: bool = True  # False skips minimization (only useful to test that it preserves results)
    replace: bool = False
    if_not_exists: bool = False

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise IdivmError(f"unknown strategy {self.strategy!r}; choose one of: {', '.join(STRATEGIES)}")
        check_mode(self.mode)
        if self.replace and self.if_not_exists:
            raise IdivmError("choose one of --replace and --if-not-exists")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise IdivmError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")


class Transactions(Protocol):
    """Where registration's work runs (see the module's docstring)."""
    snapshot_isolated: bool  # the locked transaction is REPEATABLE READ: a mode switch can catch up in place

    def reading(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection to compile and look up on before any lock is taken."""

    def writers_blocked(self, tables: Tables, views: list[tuple[str, str]]
                        ) -> contextlib.AbstractContextManager[Connection]:
        """A connection whose base tables `tables` are held against writers, for the work on
        `views` (schema, name)."""


def register(tx: Transactions, request: Request, fill: Fill) -> str:
    """Compile, create and fill a maintained view and install capture on its base tables. Returns
    "created", or, for a name already registered, "exists" (if_not_exists), "unchanged" (replace:
    same query as parsed, strategy and mode) or "replaced" (replace: rebuilt with the views over it,
    or only its mode switched)."""
    request.check()
    schema, view = parse_name(request.name)
    with tx.reading() as conn:
        schema = schema or current_schema(conn)
        existing = catalog.view_by_name(conn, schema, view) if (request.replace or request.if_not_exists) else None
        if existing is None:  # compiled before any lock: a refusal holds nothing
            compiled = compile_in(conn, request.sql, request.strategy, request.minimized)
        else:  # a view of that name: the query must still compile, and may differ from the registered one
            plan = compile_view_sql(PostgresSchema(conn), request.sql).plan
            why = "" if request.if_not_exists else (
                what_differs(conn, existing, request.sql, request.strategy, request.mode, lambda: plan)
                if request.minimized else "unminimized")
    if existing is not None:
        if request.if_not_exists:
            return "exists"
        if not why:
            return "unchanged"
        if why.startswith("mode") and tx.snapshot_isolated:
            switch_mode(tx, existing, request.mode)
        else:
            rebuild(tx, existing, fill, f'replace "{display_name(schema, view)}"',
                    {existing.id: (request.sql, request.strategy, request.mode, request.minimized)})
        return "replaced"
    with query_errors(), tx.writers_blocked(set(compiled.tables()), [(schema, view)]) as conn:
        register_locked(conn, schema, view, request.sql, request.strategy, request.minimized, fill, compiled)
        if request.mode == "immediate":
            make_immediate_locked(conn, schema, view)
    return "created"


def rebuild(tx: Transactions, row: sa.Row, fill: Fill, verb: str, new: Wanted | None = None) -> list[str]:
    """Rebuild a view and the views over it (operate/rebuild.py), those named in `new` as it says,
    in one transaction; returns the rebuilt views' names, inputs first. `verb` names the work in
    errors."""
    with tx.reading() as conn:
        chain, wanted, tables = rebuild_plan(conn, row, verb, new)
    with query_errors(), tx.writers_blocked(tables, [(r.schema_name, r.view_name) for r in chain]) as conn:
        rebuild_locked(conn, row, chain, wanted, fill, verb)
    return [display_name(r.schema_name, r.view_name) for r in chain]


def switch_mode(tx: Transactions, row: sa.Row, mode: str) -> None:
    """Switch a view between deferred and immediate maintenance, holding its base tables against
    writers: to immediate, the pending changes are applied first; to deferred, everything committed
    so far counts as consumed."""
    with tx.reading() as conn:
        tables = {(t.schema_name, t.table_name) for t in catalog.view_inputs(conn, row.id)}
    with tx.writers_blocked(tables, [(row.schema_name, row.view_name)]) as conn:
        lock_view(conn, row.id)
        if mode == "immediate":
            report = MaintenanceReport(view=display_name(row.schema_name, row.view_name))
            run_maintenance(conn, row.id, report, None)  # catch up, in this transaction
            make_immediate_locked(conn, row.schema_name, row.view_name)
        else:
            catalog.set_deferred_from_now(conn, row.id)
            sync_immediate(conn)


def drop(conn: Connection, row: sa.Row, name: str) -> None:
    """Drop a maintained view (`name` as the user wrote it) that no other maintained view reads, in the
    caller's transaction."""
    readers = dependents(conn, row.id)
    if readers:
        raise IdivmError(f'cannot drop "{name}": the maintained view(s) {", ".join(readers)} read it; drop them first')
    drop_locked(conn, row)


@contextlib.contextmanager
def query_errors() -> Iterator[None]:
    """An error of the view's own query while filling it, as one line naming it."""
    try:
        yield
    except psycopg.Error as e:
        query_failed(e)
        raise


class OwnTransactions:
    """The API's: each piece of work in a transaction of its own (see the module's docstring)."""
    snapshot_isolated = True

    def __init__(self, engine: sa.Engine):
        self.engine = engine

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn
            conn.rollback()

    @contextlib.contextmanager
    def writers_blocked(self, tables: Tables, views: list[tuple[str, str]]) -> Iterator[Connection]:
        """A REPEATABLE READ transaction whose first statement locks the tables against writers
        (SHARE ROW EXCLUSIVE; readers go on). Its snapshot, taken after the locks, sees every
        committed write and none in flight."""
        with self.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            with begin_with_writers_locked_out(conn, tables):
                yield conn


class CallerTransaction:
    """A migration's: everything in the transaction the caller opened (see the module's docstring)."""
    snapshot_isolated = False

    def __init__(self, conn: Connection):
        self.conn = conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        yield self.conn

    @contextlib.contextmanager
    def writers_blocked(self, tables: Tables, views: list[tuple[str, str]]) -> Iterator[Connection]:
        self._lock(tables)
        yield self.conn
        self._own_writes_pending(views)

    def _lock(self, tables: Tables) -> None:
        """Hold the base tables against writers; refuse when this transaction already wrote one whose
        changes are logged."""
        if not tables:
            return
        conn = self.conn
        lock_against_writers(conn, tables)
        moved = catalog.rewritten_since_snapshot(conn, tables)
        if moved is not None:  # a REPEATABLE READ migration whose snapshot predates a TRUNCATE: it would fill from nothing
            raise IdivmError(f"cannot register the view in this transaction: {moved} was truncated or rewritten "
                             "after its snapshot; run the migration again")
        for schema, table in sorted(tables):
            cid = catalog.captured_id(conn, schema, table)
            if cid is not None and catalog.logged_in_this_transaction(conn, cid):
                raise IdivmError(f"register the view before writing to {display_name(schema, table)} in the same "
                                 "transaction: its writes so far would be counted twice")

    def _own_writes_pending(self, views: list[tuple[str, str]]) -> None:
        """A view registered here has consumed what its snapshot shows, and a snapshot shows its own
        transaction's writes: those the migration makes after this operation would count as consumed
        and never reach the view. Its own xid is added to the in-progress list of each view's stored
        snapshot, so they are its first window (the writes before it were refused by _lock)."""
        conn = self.conn
        own = current_xid(conn)
        for schema, view in views:
            row = catalog.view_by_name(conn, schema, view)
            xmin, xmax, xip = row.last_snapshot.split(":")
            running = sorted({int(x) for x in xip.split(",") if x} | {own})
            catalog.set_last_snapshot(conn, row.id, f"{min(int(xmin), own)}:{max(int(xmax), own + 1)}:"
                                                     f"{','.join(map(str, running))}")
