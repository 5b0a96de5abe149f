"""When a deferred view is due for maintenance: its policy and the pure decision over its state.

A view is due when changes wait for it and one of these holds:
- `max_pending`: at least this many logged changes wait (the capture function also NOTIFYs a
  sleeping scheduler when a table's log crosses the smallest such threshold, see capture/triggers);
- `max_staleness`: the oldest waiting change is at least this many seconds old;
- `every`: this many seconds passed since the view was last maintained (or it never was).
After a failure, the view waits min(2^failures, 300) seconds before it is tried again, so a
broken view neither spins nor starves the others.

Views without a stored policy get DEFAULT (the scheduler's `--every` replaces its `every`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from ..catalog import repository as catalog

MAX_BACKOFF = 300.0


@dataclass(frozen=True)
class Policy:
    every: float = 60.0
    max_pending: int = 10_000
    max_staleness: float | None = None
    engine: str | None = None  # postgres, spark or auto (operate/engine_choice.py); None: the default engine
    # when a maintenance recomputes the view instead of running its Δ-script: auto (when estimated
    # cheaper, engines/postgres/server_maintenance.py), never or always
    recompute: str = "auto"

    def __str__(self) -> str:
        stale = f"{self.max_staleness:g}s" if self.max_staleness is not None else "none"
        engine = f", engine {self.engine}" if self.engine else ""
        return f"every {self.every:g}s, max pending {self.max_pending}, max staleness {stale}{engine}, recompute {self.recompute}"


RECOMPUTE = ("auto", "never", "always")


DEFAULT = Policy()


def policy_of(row, default: Policy = DEFAULT) -> Policy:
    """A view's effective policy from its catalog row (NULL columns take the default's values)."""
    return Policy(
        every=row.policy_every if row.policy_every is not None else default.every,
        max_pending=row.policy_max_pending if row.policy_max_pending is not None else default.max_pending,
        max_staleness=row.policy_max_staleness if row.policy_max_staleness is not None else default.max_staleness,
        engine=row.policy_engine if row.policy_engine is not None else default.engine,
        recompute=row.policy_recompute if row.policy_recompute is not None else default.recompute,
    )


@dataclass(frozen=True)
class ViewState:
    """What the decision needs to know about a view, as status reads it (times in UTC)."""

    pending: int
    oldest_pending_at: datetime | None
    last_maintained_at: datetime | None
    last_attempt_at: datetime | None
    consecutive_failures: int
    stale: bool


@dataclass(frozen=True)
class Decision:
    due: bool
    reason: str  # why due ("max-pending", "max-staleness", "every"), or why not
    wait: float | None  # seconds until it would become due with no new changes; None: only on change


def backoff(failures: int) -> float:
    return min(2.0 ** failures, MAX_BACKOFF) if failures else 0.0


def decide(state: ViewState, policy: Policy, now: datetime) -> Decision:
    if state.stale:
        return Decision(False, "stale: needs `idivm refresh`", None)
    if state.consecutive_failures and state.last_attempt_at is not None:
        retry_in = backoff(state.consecutive_failures) - (now - state.last_attempt_at).total_seconds()
        if retry_in > 0:
            return Decision(False, f"backing off after {state.consecutive_failures} failures", retry_in)
    if state.pending <= 0:
        return Decision(False, "no pending changes", None)
    if state.pending >= policy.max_pending:
        return Decision(True, "max-pending", 0.0)
    waits = []
    if policy.max_staleness is not None and state.oldest_pending_at is not None:
        left = policy.max_staleness - (now - state.oldest_pending_at).total_seconds()
        if left <= 0:
            return Decision(True, "max-staleness", 0.0)
        waits.append(left)
    if state.last_maintained_at is None:
        return Decision(True, "every", 0.0)
    left = policy.every - (now - state.last_maintained_at).total_seconds()
    if left <= 0:
        return Decision(True, "every", 0.0)
    waits.append(left)
    return Decision(False, "within policy", min(waits))


def notify_threshold(conn, captured_id: int, default: Policy = DEFAULT) -> int:
    """The smallest max-pending of the views over a captured table (the capture function's NOTIFY
    threshold); the default when no view reads it yet."""
    return catalog.notify_threshold(conn, captured_id, default.max_pending)


def with_every(default: Policy, every: float | None) -> Policy:
    return replace(default, every=every) if every is not None else default
