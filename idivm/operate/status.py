"""What `idivm status` and the scheduler know about each view, read in one snapshot.

Pending changes are the committed log rows a view has not consumed (before folding several
changes of one row into one); their age is that of the oldest one's writing transaction.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from ..catalog import repository as catalog
from ..introspect.session import server_now
from ..names import display_name, storage_table
from .policy import DEFAULT, Decision, Policy, ViewState, decide, policy_of
from .storage import Storage, log_share, log_sizes


@dataclass
class ViewStatus:
    id: int
    view: str  # schema.name
    strategy: str
    mode: str
    policy: Policy
    state: ViewState
    decision: Decision
    last_duration_ms: float | None
    last_changes: int | None
    last_error: str | None
    stale_reason: str | None
    inputs: list[str]  # schema.table of the base tables it reads
    storage: Storage | None = None  # view_statuses(storage=True)

    def as_json(self, now: datetime) -> dict:
        s = self.state
        age = (now - s.oldest_pending_at).total_seconds() if s.oldest_pending_at else None
        return {
            "view": self.view, "strategy": self.strategy, "mode": self.mode,
            "pending_changes": s.pending, "oldest_pending_age_s": age,
            "last_maintained_at": s.last_maintained_at.isoformat() if s.last_maintained_at else None,
            "last_duration_ms": self.last_duration_ms, "last_changes": self.last_changes,
            "consecutive_failures": s.consecutive_failures, "last_error": self.last_error,
            "stale": s.stale, "stale_reason": self.stale_reason,
            "policy": {"every_s": self.policy.every, "max_pending": self.policy.max_pending,
                       "max_staleness_s": self.policy.max_staleness, "engine": self.policy.engine},
            "due": self.decision.due, "due_reason": self.decision.reason,
            "inputs": self.inputs, "storage_table": ".".join(storage_table(self.id)),
            **({"storage": self.storage.as_json()} if self.storage is not None else {}),
        }


def view_statuses(conn: Connection, default: Policy = DEFAULT, now: datetime | None = None,
                  view_ids: list[int] | None = None, storage: bool = False) -> list[ViewStatus]:
    """Every view's status (those of view_ids only, if given); with storage, the bytes it uses too
    (operate/storage.py: sizes of its tables and a count of its logs, so not on the scheduler's path)."""
    rows = [r for r in catalog.all_views(conn, order="name", columns=catalog.STATUS)
            if view_ids is None or r.id in view_ids]
    inputs = catalog.all_inputs(conn)
    now = now or server_now(conn)  # the catalog's times are the server's; the client's may differ
    sizes = catalog.storage_bytes(conn) if storage else {}
    log_bytes = log_sizes(conn, {i.log_table for i in inputs}) if storage else {}
    inputs_of: dict[int, list] = {}
    for i in inputs:
        inputs_of.setdefault(i.view_id, []).append(i)
    # an immediate view consumes no log: its changes were applied by the writers themselves
    pending_logs = catalog.pending_by_log(conn, [(r.id, r.last_snapshot, [i.log_table for i in inputs_of.get(r.id, [])])
                                                 for r in rows if r.mode == "deferred"])
    out = []
    for r in rows:
        logs = inputs_of.get(r.id, [])
        by_log = pending_logs.get(r.id, {})
        pending = sum(n for n, _ in by_log.values())
        oldest = min((t for _, t in by_log.values() if t is not None), default=None)
        state = ViewState(pending=pending, oldest_pending_at=oldest, last_maintained_at=r.last_maintained_at,
                          last_attempt_at=r.last_attempt_at, consecutive_failures=r.consecutive_failures,
                          stale=r.stale_reason is not None)
        policy = policy_of(r, default)
        out.append(ViewStatus(
            id=r.id, view=display_name(r.schema_name, r.view_name), strategy=r.strategy, mode=r.mode, policy=policy,
            state=state, decision=decide(state, policy, now), last_duration_ms=r.last_duration_ms,
            last_changes=r.last_changes, last_error=r.last_error, stale_reason=r.stale_reason,
            inputs=[display_name(i.schema_name, i.table_name) for i in logs],
            storage=Storage(*sizes.get(r.id, (0, 0)), log_share({k: n for k, (n, _) in by_log.items()}, log_bytes))
            if storage else None))
    return out
