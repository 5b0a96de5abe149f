"""Locking base tables against writers, for the transactions that must see them hold still
(registration, refresh, switching a view's mode).

Such a transaction takes SHARE ROW EXCLUSIVE on every base table before its snapshot, so that no
change slips between what it reads and the next change capture logs. PostgreSQL takes the tables
of one LOCK statement one after the other: a writer that holds one of them (its transaction wrote
it) and then writes another that this transaction already holds closes a cycle, and PostgreSQL
breaks it by aborting whichever waited first, usually this transaction. Nothing was done yet, so
it is simply begun again, after a short random wait, until the locks are held (the writer, having
got its table, commits meanwhile). A demanding user's writers keep running through a registration;
the registration waits for them, it does not fail because of them.
"""
from __future__ import annotations

import random
import time

import psycopg
from sqlalchemy.engine import Connection, RootTransaction

from ...errors import IdivmError
from ...names import display_name
from ...sqltext import qualified, run

LOCK_ATTEMPTS = 20  # each lost deadlock costs deadlock_timeout (1 s by default) and a short wait


def lock_against_writers(conn: Connection, tables: set[tuple[str, str]]) -> None:
    """Lock these tables (schema, name) against writers in the transaction `conn` is in (readers go
    on); for a transaction someone else began, which cannot be begun again past a deadlock."""
    run(conn, _lock_statement(tables))


def _lock_statement(tables: set[tuple[str, str]]) -> str:
    return f"LOCK TABLE {', '.join(qualified(s, t) for s, t in sorted(tables))} IN SHARE ROW EXCLUSIVE MODE"


def begin_with_writers_locked_out(conn: Connection, tables: set[tuple[str, str]]) -> RootTransaction:
    """Begin a transaction on `conn` (its isolation level as set) whose first statement locks these
    tables (schema, name) in SHARE ROW EXCLUSIVE mode (readers go on); retried when it loses a
    deadlock with writers. Returns the begun transaction, to be used as a context manager."""
    statement = _lock_statement(tables)
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        tx = conn.begin()
        try:
            if tables:
                run(conn, statement)
            return tx
        except psycopg.errors.DeadlockDetected:
            tx.rollback()
            time.sleep(random.uniform(0.0, 0.05 * 2 ** min(attempt, 5)))
    names = ", ".join(display_name(s, t) for s, t in sorted(tables))
    raise IdivmError(f"could not lock {names} against writers: {LOCK_ATTEMPTS} tries in a row each deadlocked with "
                     "a writing transaction; try again when fewer transactions write to several of them")
