"""`idivm schedule`: a long-running worker that keeps every deferred view within its policy.

One pass reads every view's status (operate/status.py) in one snapshot, maintains the due ones
(operate/policy.py decides) one transaction each, then sleeps until the next view becomes due.
While asleep it LISTENs on the capture functions' channel: a log crossing a view's max-pending
threshold wakes it at once.

- Views over views: a view is maintained after the maintained views it reads, and re-examined
  when one of them changed earlier in the same pass, so a change climbs a chain in one pass.
- Several workers may run: each view is maintained under its advisory lock, taken without
  waiting (a view another worker is busy with is skipped, not queued), so no view is ever
  maintained twice at once and workers spread over the views.
- A failed maintenance rolls back (nothing is lost), is counted in the catalog, and the view
  is retried after an exponential backoff (policy.backoff); the other views go on.
- When PostgreSQL is unreachable (restart, network) the worker drops its connections and retries
  with exponential backoff (1 s doubling to 30 s), then carries on where the catalog says.
- SIGTERM/SIGINT: no new maintenance starts; the running one may finish for `grace` seconds,
  then its statement is cancelled and its transaction rolled back. The worker exits 0.
- One JSON line per event on stdout (started, maintained, failed, busy, cancelled,
  database-unavailable, stopped), for log shippers and `jq`.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from typing import TextIO

import psycopg
import sqlalchemy as sa

from ..capture.triggers import NOTIFY_CHANNEL
from ..errors import EXIT_STALE, Busy, DatabaseUnavailable, first_line
from ..engines.postgres.executor import maintain_view
from ..sqltext import ident
from .dependencies import dependency_order, edges
from .policy import DEFAULT, Policy
from .status import ViewStatus, view_statuses

MAX_RECONNECT_DELAY = 30.0
MAX_SLEEP = 60.0  # re-read the catalog at least this often (new views, changed policies)
SLICE = 0.5  # waits are cut into slices this long, so a stop request is seen quickly


def connection_lost(error: BaseException) -> bool:
    """Whether an error means the database connection is gone (retry later) rather than a failed
    maintenance of one view: client-side connection failures, SQLSTATE class 08, and the server
    shutting down or starting up (57P01-57P03)."""
    if isinstance(error, DatabaseUnavailable):
        return True
    if isinstance(error, sa.exc.DBAPIError):
        if error.connection_invalidated:
            return True
        error = error.orig
    if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
        state = getattr(error, "sqlstate", None)
        return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")
    return False


class Worker:
    def __init__(self, engine, default: Policy = DEFAULT, once: bool = False, grace: float = 10.0,
                 out: TextIO | None = None, run_engine: str | None = None):
        self.engine = engine
        self.run_engine = run_engine  # as `maintain --engine`: None leaves it to each view's engine policy
        self._stages: dict = {}  # per engine; the Spark session stays warm across passes (engines/spark/session.py)
        self.default = default
        self.once = once
        self.grace = grace
        self.out = out or sys.stdout
        self.stopping = threading.Event()
        self._listener: psycopg.Connection | None = None
        self._current = None  # DBAPI connection of the running maintenance
        self._cancel_timer: threading.Timer | None = None
        self.failures = 0
        self.stale = 0  # views skipped as stale by a --once pass

    # -- events --------------------------------------------------------------------------
    def log(self, event: str, **fields) -> None:
        line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "event": event, **fields}
        self.out.write(json.dumps(line, default=str) + "\n")
        self.out.flush()

    # -- stopping ------------------------------------------------------------------------
    def stop(self, signum=None, frame=None) -> None:
        """Request a stop (signal handler): finish or, after `grace` seconds, cancel the running one."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        if self._current is not None and self._cancel_timer is None:
            self._cancel_timer = threading.Timer(self.grace, self._cancel)
            self._cancel_timer.daemon = True
            self._cancel_timer.start()

    def _cancel(self) -> None:
        conn = self._current
        if conn is not None:
            try:
                conn.cancel_safe()
            except Exception:
                pass

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> int:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self.stop)
            signal.signal(signal.SIGINT, self.stop)
        self.log("started", pid=os.getpid(), once=self.once, default_policy=str(self.default))
        attempt = 0
        while not self.stopping.is_set():
            try:
                self._listen()
                wait = self.run_pass()
                attempt = 0
            except Exception as e:
                if not connection_lost(e):
                    raise
                attempt += 1
                delay = min(2.0 ** (attempt - 1), MAX_RECONNECT_DELAY)
                self.log("database-unavailable", error=first_line(e), retry_in_s=delay)
                self._close_listener()
                self.engine.sa.dispose()
                if self.once:
                    return 1
                self.stopping.wait(delay)
                continue
            if self.once:
                break
            self._sleep(wait)
        if self._cancel_timer is not None:
            self._cancel_timer.cancel()
        self._close_listener()
        self.log("stopped", failures=self.failures)
        if not self.once:
            return 0
        return 1 if self.failures else EXIT_STALE if self.stale else 0

    def run_pass(self) -> float:
        """Maintain every due view once; return how long to sleep before the next pass."""
        with self.engine.sa.connect() as conn:
            self.engine._require_catalog(conn)
            statuses = view_statuses(conn, self.default)
            reads = edges(conn)
        maintained: set[int] = set()
        for s in order(statuses, reads):
            if self.stopping.is_set():
                break
            if reads.get(s.id, set()) & maintained:  # a view it reads just changed: look again
                with self.engine.sa.connect() as conn:
                    s = view_statuses(conn, self.default, view_ids=[s.id])[0]
            if s.decision.due and s.mode == "deferred":
                if self._maintain(s):
                    maintained.add(s.id)
            elif self.once:  # one pass: say what became of every view, not only the maintained ones
                self.stale += s.stale_reason is not None
                self.log("skipped", view=s.view, pending=s.state.pending,
                         reason="immediate mode: maintained inside every writing statement"
                         if s.mode == "immediate" else s.decision.reason)
        waits = [s.decision.wait for s in statuses if s.decision.wait is not None and not s.decision.due]
        waits += [s.policy.every for s in statuses]
        return max(min(waits + [MAX_SLEEP]), 0.05)

    def _maintain(self, s: ViewStatus) -> bool:
        age = s.state.oldest_pending_at
        lag = (datetime.now(timezone.utc) - age).total_seconds() if age else None
        try:
            used, chosen = self.engine.maintenance_engine(s.id, self.run_engine or s.policy.engine)
            if used not in self._stages:
                self._stages[used] = self.engine.maintenance_stage(used)
            report = maintain_view(self.engine.sa, s.id, s.view, wait=False, on_connection=self._started,
                                   is_failure=lambda e: not self.stopping.is_set(), stage=self._stages[used])
        except Busy:
            self.log("busy", view=s.view)
            return False
        except Exception as e:
            if connection_lost(e):
                raise
            if self.stopping.is_set():
                self.log("cancelled", view=s.view, error=first_line(e))  # rolled back at shutdown
                return False
            self.failures += 1
            self.log("failed", view=s.view, reason=s.decision.reason, error=first_line(e),
                     consecutive_failures=s.state.consecutive_failures + 1)
            return False
        finally:
            self._current = None
        self.log("maintained", view=s.view, reason=s.decision.reason, pending=s.state.pending,
                 oldest_pending_age_s=round(lag, 3) if lag is not None else None, changes=report.changes,
                 statements=report.statements, rows=report.rows_affected, ms=round(report.seconds * 1000, 2),
                 engine=report.engine, **({"chosen": chosen} if chosen else {}))
        return True

    def _started(self, dbapi_connection) -> None:
        self._current = dbapi_connection
        if self.stopping.is_set() and self._cancel_timer is None:
            self.stop()  # a stop that came just before: arm the grace timer for this one

    # -- waiting for time or a NOTIFY ----------------------------------------------------
    def _listen(self) -> None:
        if self._listener is None or self._listener.closed:
            self._listener = psycopg.connect(self.engine.dsn, autocommit=True)
            self._listener.execute(f"LISTEN {ident(NOTIFY_CHANNEL)}")

    def _close_listener(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            except Exception:
                pass
            self._listener = None

    def _sleep(self, seconds: float) -> None:
        """Sleep up to `seconds`; return early on a NOTIFY from a capture function or a stop."""
        deadline = time.monotonic() + seconds
        while not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                # (consume the generator before anything else uses the connection: it holds its lock)
                if list(self._listener.notifies(timeout=min(left, SLICE), stop_after=1)):
                    self._drain()
                    return
            except psycopg.Error as e:
                if not connection_lost(e):
                    raise
                self._close_listener()
                return  # the next pass reconnects (and backs off if the server is still away)

    def _drain(self) -> None:
        """Several writers may have crossed thresholds at once: one pass serves them all."""
        list(self._listener.notifies(timeout=0.01))


def order(statuses: list[ViewStatus], reads: dict[int, set[int]]) -> list[ViewStatus]:
    """The order views are maintained in within a pass: most pending changes first, but every view
    after the maintained views it reads."""
    by_id = {s.id: s for s in statuses}
    ranked = [s.id for s in sorted(statuses, key=lambda s: (-s.state.pending, s.view))]
    return [by_id[v] for v in dependency_order(ranked, reads)]
