"""Where registration's work runs (operate/registration.py, rebuild.py, mode_switch.py): the API's
own transactions, or the one a migration opened.

- `OwnTransactions` (the API): a throwaway transaction to compile and look up in, then a
  REPEATABLE READ transaction that locks the base tables against writers before its snapshot, so
  nothing slips between the fill and the first logged change;
- `CallerTransaction` (a migration): everything in the transaction alembic opened (READ
  COMMITTED), so a failed migration leaves no view behind. Every statement after the LOCK sees the
  tables as they stand with writers held out, so the fill and the first logged change still meet.
  One case cannot be made exact and is refused: the same transaction already wrote a base table
  whose changes are logged (another view reads it); those writes are in the fill and would also
  be in the view's first window.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog import repository as catalog
from ..engines.postgres.table_locks import begin_with_writers_locked_out, lock_against_writers
from ..errors import IdivmError
from ..introspect.session import current_xid
from ..names import display_name

Tables = set[tuple[str, str]]  # (schema, name)


class Transactions(Protocol):
    """Where registration's work runs (see the module's docstring)."""
    snapshot_isolated: bool  # the locked transaction is REPEATABLE READ: a mode switch can catch up in place

    def reading(self) -> contextlib.AbstractContextManager[Connection]:
        """A connection to compile and look up on before any lock is taken."""

    def writers_blocked(self, tables: Tables, views: list[tuple[str, str]]
                        ) -> contextlib.AbstractContextManager[Connection]:
        """A connection whose base tables `tables` are held against writers, for the work on
        `views` (schema, name)."""


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
