"""Deferred maintenance of one view: consume the logs, run the Δ-script, atomically.

1. A session-level advisory lock serialises maintainers of the same view
   (taken before the transaction's snapshot, so a waiter never works from a
   snapshot older than the previous maintainer's commit).
2. One REPEATABLE READ transaction: its snapshot fixes both what the base
   tables contain and which log rows are consumed (those not visible in the
   view's previous snapshot). The view's catalog row is locked FOR UPDATE as
   a second guard against double application.
3. Build the effective i-diff instances, run the Δ-script, record the new
   snapshot, commit: the view's compiled functions (server_maintenance.py), called by
   idivm.maintain_locked, or by its two halves, idivm.prepare_maintenance and
   idivm.finish_maintenance, when another engine (Spark) computes part of the script between them
   (a `stage`). Any failure rolls all of it back: view and unconsumed log stay exactly as before.
4. After commit, log rows every view over the table has consumed are pruned
   (READ COMMITTED, best effort: a failure there loses nothing).

On this engine, 1-4 are one round trip: CALL idivm.maintain_call (server_maintenance.py), a
procedure that commits between its steps. The two-connection form below serves a stage and a
caller's before_commit hook (verify).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ...errors import SQLSTATE_STALE, Busy, IdivmError, Restart, Stale, first_line
from ...catalog import repository as catalog
from ...names import counted, display_name
from ...sqltext import qualified, run
from .maintenance_lock import LOCK_CLASS
from .server_maintenance import (ATTEMPTS, RECOMPUTED_BY_ESTIMATE, RECOMPUTED_BY_POLICY, RECOMPUTED_STALE_CACHES,
                                 RECOMPUTED_AGAIN, RECOMPUTED_TO_MEASURE, RESULT, input_arrays, input_changes)

__all__ = ["LOCK_CLASS", "MaintenanceReport", "Stage", "maintain_view", "run_maintenance"]


@dataclass
class MaintenanceReport:
    view: str
    changes: int = 0
    statements: int = 0
    rows_affected: int = 0
    seconds: float = 0.0
    per_table: dict[str, int] = field(default_factory=dict)
    # seconds spent building the i-diff instances, maintaining the intermediate cache, and the view
    breakdown: dict[str, float] = field(default_factory=lambda: {"i-diffs": 0.0, "cache": 0.0, "view": 0.0})

    engine: str = "postgres"  # the engine that computed the diffs (DESIGN: a run names the engine it used)
    offloaded: int = 0  # statements whose diffs another engine computed (the Spark engine)
    chosen: str | None = None  # why this engine, when `--engine auto` chose it (operate/engine_choice.py)
    # the view was recomputed instead of running its Δ-script: the logged changes and why (None: it was not;
    # then `changes` counts logged changes, as far as they were counted)
    recomputed: str | None = None

    skipped: str | None = None  # why the view was not maintained (maintaining all views skips stale ones)
    stale: bool = False  # skipped because a schema change made it stale: `idivm refresh` is needed
    failed: str | None = None  # why its maintenance failed (rolled back; maintaining several views goes on)

    def __str__(self) -> str:
        if self.failed:
            return f"{self.view}: FAILED: {self.failed}"
        if self.skipped:
            return f"{self.view}: skipped: {self.skipped}"
        on = (f" on {self.engine} ({counted(self.offloaded, 'diff source')} computed there)"
              if self.engine != "postgres" else "")
        why = f"; {self.chosen}" if self.chosen else ""
        changes = counted(self.changes, "effective change") if self.recomputed is None else self.recomputed
        return (f"{self.view}: {changes}, {counted(self.statements, 'statement')}, "
                f"{counted(self.rows_affected, 'view row')} touched in {self.seconds * 1000:.1f} ms{on}{why}")


# What another engine computes of a maintenance, between its two halves (engines/spark/executor.py):
# stage(conn, view id, inputs, report) with inputs by captured id: (effective changes, kind mask) of
# its i-diff instance; returns the indexes of the offloads (program/offload.py) whose rows it staged.
# Its attribute `engine` names it in the report.
Stage = Callable[[Connection, int, dict[int, tuple[int, int]], MaintenanceReport], list[int]]


def maintain_view(engine: Engine, view_id: int, name: str,
                  before_commit: Callable[[Connection], None] | None = None, wait: bool = True,
                  on_connection: Callable[[object], None] | None = None,
                  is_failure: Callable[[BaseException], bool] | None = None, stage: Stage | None = None) -> MaintenanceReport:
    """Maintain one view (see the module docstring). wait=False raises Busy instead of queueing behind
    another maintainer; on_connection receives the DBAPI connection of the maintenance transaction (the
    scheduler cancels its query on shutdown). A failure is recorded in the view's catalog row
    (consecutive_failures, last_error) unless is_failure says it was none (the scheduler's own
    cancellation at shutdown) or the database connection itself was lost. `stage`: another engine's
    part, run once the i-diff instances exist (it computes some of the script's sources there, in
    the same transaction)."""
    report = MaintenanceReport(view=name, engine=getattr(stage, "engine", "postgres"))
    if stage is None and before_commit is None:
        _maintain_in_one_call(engine, view_id, report, wait, on_connection, is_failure)
        return report
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as lock_conn:
        lock = "pg_advisory_lock" if wait else "pg_try_advisory_lock"
        got = lock_conn.execute(sa.text(f"SELECT {lock}(:c, :v)"), {"c": LOCK_CLASS, "v": view_id}).scalar()
        if got is False:
            raise Busy(f"view {name} is being maintained by another session")
        unlocked = False
        try:
            with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
                if on_connection is not None:
                    on_connection(conn.connection.driver_connection)
                for attempt in range(1, ATTEMPTS + 1):
                    try:
                        with conn.begin():
                            inputs = run_maintenance(conn, view_id, report, before_commit, stage)
                        break
                    except BaseException as e:
                        if isinstance(e, Restart) and attempt < ATTEMPTS:
                            continue  # a new transaction, whose snapshot sees the DDL
                        if isinstance(e, Restart):
                            e = Restart(f"view {name}: a table it reads was truncated or rewritten during each of "
                                        f"{ATTEMPTS} attempts to maintain it ({e}); maintain it again")
                        if is_failure is None or is_failure(e):
                            _record_failure(lock_conn, view_id, e)
                        raise e
            if report.changes:  # nothing consumed, nothing to prune
                unlocked = _prune_and_unlock(lock_conn, inputs, view_id)
        finally:
            if not unlocked and not lock_conn.closed and not lock_conn.invalidated:
                lock_conn.execute(sa.text("SELECT pg_advisory_unlock(:c, :v)"), {"c": LOCK_CLASS, "v": view_id})
    return report


def _maintain_in_one_call(engine: Engine, view_id: int, report: MaintenanceReport, wait: bool,
                          on_connection, is_failure) -> None:
    """This engine's maintenance as one round trip: CALL idivm.maintain_call (server_maintenance.py)
    takes the lock, maintains in its own REPEATABLE READ transaction, prunes and unlocks."""
    started = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if on_connection is not None:
            on_connection(conn.connection.driver_connection)
        try:
            outcome, message, result, ids, schemas, names = run(
                conn, "CALL idivm.maintain_call(%(v)s, %(shown)s, %(wait)s)",
                {"v": view_id, "shown": report.view, "wait": wait}).fetchone()
        except BaseException as e:
            error = _server_error(e, report.view) or e
            if not conn.closed and not conn.invalidated:
                try:  # the session may still hold the view's lock: an error ends the CALL before its unlock
                    if is_failure is None or is_failure(error):
                        _record_failure(conn, view_id, error)
                    run(conn, "SELECT pg_advisory_unlock(l.classid::int, l.objid::int) FROM pg_locks AS l "
                              "WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted "
                              "AND l.classid = %(c)s AND l.objid = %(v)s AND l.objsubid = 2", {"c": LOCK_CLASS, "v": view_id})
                except (sa.exc.DBAPIError, psycopg.Error):
                    pass  # the connection is gone, and the session's locks with it
            if error is e:
                raise
            raise error from None
    if outcome == "busy":
        raise Busy(f"view {report.view} is being maintained by another session")
    _read_outcome(report, outcome, message, result, schemas, names)
    report.seconds = time.perf_counter() - started


def _server_error(e: BaseException, shown: str) -> IdivmError | None:
    """The idivm error a failure of the server-side maintenance stands for (None: report it as it is)."""
    if isinstance(e, psycopg.Error) and e.sqlstate == SQLSTATE_STALE:
        return Stale(first_line(e))
    if isinstance(e, psycopg.errors.UndefinedObject):
        return IdivmError(first_line(e))
    return None


def _read_outcome(report: MaintenanceReport, outcome: str, message: str, result, schemas, names) -> None:
    """Fill the report from maintain_locked's outcome ("skipped" or "maintained")."""
    if outcome == "skipped":  # immediate: its writers maintain it; consuming the log would apply changes twice
        report.skipped = message.split(": skipped: ", 1)[1]
        return
    figures = dict(zip(RESULT, result))
    report.changes, report.statements = int(figures["changes"]), int(figures["statements"])
    report.rows_affected = int(figures["view_rows"])
    for part in ("i-diffs", "cache", "view"):
        report.breakdown[part] = figures[part] / 1000
    if figures["recomputed"] == RECOMPUTED_BY_POLICY:
        report.recomputed = f"{counted(report.changes, 'logged change')}, recomputed (its policy)"
    elif figures["recomputed"] == RECOMPUTED_STALE_CACHES:
        report.recomputed = (f"{counted(report.changes, 'logged change')}, recomputed with its cache (the last "
                             "recomputation left it stale)")
    elif figures["recomputed"] == RECOMPUTED_BY_ESTIMATE:
        report.recomputed = (f"more than {report.changes - 1} logged changes, recomputed (the i-diffs and Δ-script "
                             f"were estimated at more than {figures['script_estimate']:.1f} ms, recomputing at "
                             f"{figures['recompute_estimate']:.1f} ms)")
    elif figures["recomputed"] == RECOMPUTED_AGAIN:
        report.recomputed = (f"{counted(report.changes, 'logged change')}, recomputed again without its cache (the "
                             f"Δ-script, estimated at {figures['script_estimate']:.1f} ms against recomputing's "
                             f"{figures['recompute_estimate']:.1f} ms, takes over once what recomputing cost beyond "
                             "it repays rebuilding the cache)")
    elif figures["recomputed"] == RECOMPUTED_TO_MEASURE:
        report.recomputed = (f"more than {report.changes - 1} logged changes, recomputed to measure what that costs "
                             f"(the i-diffs and Δ-script were estimated at more than {figures['script_estimate']:.1f} "
                             f"ms, over half the registration's fill, {figures['recompute_estimate']:.1f} ms)")
    for s_, t_, n in zip(schemas, names, result[len(RESULT):]):  # the function's inputs, in captured id order
        report.per_table[display_name(s_, t_)] = int(n)


def _record_failure(conn: Connection, view_id: int, error: BaseException) -> None:
    """Count a failed attempt in the catalog (autocommit), best effort: if the connection is gone too,
    there is nothing to record it with, and the scheduler's reconnect loop takes over."""
    if not isinstance(error, Exception) or isinstance(error, Stale):
        return  # the process is stopping, or the view waits for a refresh: no failed attempt
    try:
        catalog.record_failure(conn, view_id, first_line(error) or type(error).__name__)
    except Exception:
        pass


def _call(conn: Connection, sql: str, params: dict, shown: str):
    """The row of a server-side maintenance function whose first two items are its outcome and
    message (maintain_locked, begin_maintenance): Restart raised for 'restart', its errors raised
    as idivm's (Stale, a dropped view)."""
    try:
        row = run(conn, sql, params).fetchone()  # psycopg's errors, as batches raise
    except psycopg.Error as e:
        error = _server_error(e, shown)
        if error is None:
            raise
        raise error from None
    if row[0] == "restart":
        raise Restart(f"view {shown}: {row[1]}")
    return row


def run_maintenance(conn: Connection, view_id: int, report: MaintenanceReport, before_commit,
                    stage: Stage | None = None) -> list[int]:
    """The maintenance transaction's work, in a transaction the caller opened (REPEATABLE READ, its
    snapshot taken after any locks the caller needs); returns the captured ids of the view's inputs
    (for pruning). Raises Restart when the caller must begin it again in a new transaction."""
    started = time.perf_counter()
    params = {"v": view_id, "shown": report.view}
    if stage is None:  # the whole maintenance in one server call
        outcome, message, result, ids, schemas, names = _call(
            conn, f"SELECT m.outcome, m.message, m.figures, {input_arrays('%(v)s')} "
                  "FROM idivm.maintain_locked(%(v)s, true, %(shown)s) AS m", params, report.view)
    else:
        outcome, message, inputs, snapshot, page_cost, began, idiffs_ms, recompute, estimates, ids, schemas, names = _call(
            conn, "SELECT p.outcome, p.message, p.inputs, p.new_snapshot, p.page_cost, p.started, p.idiffs_ms, "
                  f"p.recompute, p.estimates, {input_arrays('%(v)s')} "
                  "FROM idivm.prepare_maintenance(%(v)s, true, %(shown)s) AS p", params, report.view)
        result = None
        if outcome == "ready":  # a view recomputed instead of its Δ-script has nothing for the other engine to stage
            staged = stage(conn, view_id, input_changes(inputs, ids), report) if inputs[0] and not recompute else []
            outcome, message, result = _call(
                conn, "SELECT f.outcome, f.message, f.figures FROM idivm.finish_maintenance(%(v)s, %(shown)s, "
                      "CAST(%(inputs)s AS bigint[]), %(snapshot)s, %(page_cost)s, %(began)s, %(ms)s, "
                      "CAST(%(staged)s AS int[]), %(recompute)s, CAST(%(estimates)s AS float8[])) AS f",
                {**params, "inputs": inputs, "snapshot": snapshot, "page_cost": page_cost, "began": began,
                 "ms": idiffs_ms, "staged": staged, "recompute": recompute, "estimates": estimates}, report.view)
    _read_outcome(report, outcome, message, result, schemas, names)
    if before_commit:
        before_commit(conn)
    report.seconds = time.perf_counter() - started
    return list(ids) if outcome == "maintained" else []


def rebuild_stale_caches(conn: Connection, view_id: int) -> None:
    """The view's caches recomputed, in the caller's transaction, if its last recomputation left them
    stale (recompute.py): what reads them next (immediate mode's statements, which maintain them
    change by change) needs them current."""
    if catalog.caches_stale(conn, view_id):
        run(conn, f"SELECT {qualified('idivm', f'recompute_{int(view_id)}')}(true)")
        catalog.set_caches_fresh(conn, view_id)


def _prune_and_unlock(conn: Connection, captured_ids: list[int], view_id: int) -> bool:
    """Delete log rows that every view over the tables has consumed (catalog.prune_logs) and release the
    view's lock, in one round trip (autocommit, committed asynchronously: a prune lost in a crash is
    simply done again by the next one). Pruning is an optimisation: if it fails, the lock is still
    released (the caller's finally)."""
    try:
        catalog.prune_logs(conn, captured_ids, asynchronous=True,
                           then=f"SELECT pg_advisory_unlock({LOCK_CLASS}, {int(view_id)})")
    except (sa.exc.DBAPIError, psycopg.Error):
        return False
    return True
