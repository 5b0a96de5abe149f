"""The scheduler's decision (operate/policy.py) as a pure function of a view's state."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from idivm.operate.policy import Policy, ViewState, backoff, decide

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
P = Policy(every=60, max_pending=100, max_staleness=30)


def state(pending=1, oldest=5.0, last=10.0, attempt=None, failures=0, stale=False) -> ViewState:
    ago = lambda s: NOW - timedelta(seconds=s) if s is not None else None  # noqa: E731
    return ViewState(pending=pending, oldest_pending_at=ago(oldest), last_maintained_at=ago(last),
                     last_attempt_at=ago(attempt), consecutive_failures=failures, stale=stale)


def test_nothing_pending_is_never_due():
    d = decide(state(pending=0, oldest=None, last=3600), P, NOW)
    assert not d.due and d.wait is None


def test_max_pending_wins_at_once():
    d = decide(state(pending=100, last=1), P, NOW)
    assert d.due and d.reason == "max-pending"


def test_staleness_and_every():
    assert decide(state(oldest=30, last=1), P, NOW).reason == "max-staleness"
    assert decide(state(oldest=5, last=60), P, NOW).reason == "every"
    assert decide(state(last=None), P, NOW).due  # never maintained
    d = decide(state(oldest=5, last=10), P, NOW)
    assert not d.due and d.wait == 25  # staleness comes first: 30 - 5 < 60 - 10


def test_failures_back_off_exponentially_up_to_a_cap():
    assert [backoff(f) for f in (0, 1, 2, 5, 20)] == [0, 2, 4, 32, 300]
    waiting = decide(state(pending=1000, attempt=3, failures=3), P, NOW)
    assert not waiting.due and waiting.wait == 5 and "3 failures" in waiting.reason
    assert decide(state(pending=1000, attempt=9, failures=3), P, NOW).due


def test_stale_views_wait_for_refresh():
    d = decide(state(pending=1000, stale=True), P, NOW)
    assert not d.due and "refresh" in d.reason
