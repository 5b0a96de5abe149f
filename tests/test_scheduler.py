"""The scheduler (`idivm schedule`), policies and status on a real PostgreSQL: due views only, a
NOTIFY wakes a sleeping worker, SIGTERM exits 0, several workers never double-apply, a worker
killed mid-maintenance loses nothing."""
from __future__ import annotations

import io
import json
import subprocess
import time

import psycopg
import pytest

from cli_runner import run_cli
from helpers import assert_equal_multiset
from idivm.operate.policy import decide
from idivm.operate.scheduler import Worker
from worker_process import WorkerProcess

SQL = "SELECT p.pid, p.price, p.price * 2 AS twice FROM parts p WHERE p.price > 0"
COLS = ["pid", "price", "twice"]


def _cli(dsn: str, *args: str) -> subprocess.CompletedProcess:
    return run_cli("--dsn", dsn, *args)


@pytest.fixture
def parts(db):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price int)")
    db.execute("INSERT INTO parts SELECT g, g % 7 FROM generate_series(1, 50) g")
    return db


def _status(dsn: str) -> dict:
    res = _cli(dsn, "status", "--json")
    assert res.returncode == 0, res.stderr
    return {s["view"]: s for s in json.loads(res.stdout)}


def test_once_maintains_due_views_and_status_tells(engine, parts, fresh_db):
    engine.register_view("eager", SQL)
    engine.register_view("lazy", SQL)
    res = _cli(fresh_db, "set-policy", "lazy", "--every", "3600", "--max-pending", "1000")
    assert res.returncode == 0 and "every 3600s, max pending 1000" in res.stdout, res.stderr
    engine.maintain("lazy")  # last maintained now: with 3600 s to go, it is not due
    parts.execute("UPDATE parts SET price = price + 1 WHERE pid <= 10")
    parts.execute("DELETE FROM parts WHERE pid > 45")

    before = _status(fresh_db)
    assert before["public.eager"]["pending_changes"] == 15 and before["public.eager"]["due"]
    assert before["public.lazy"]["pending_changes"] == 15 and not before["public.lazy"]["due"]
    assert before["public.lazy"]["policy"] == {"every_s": 3600.0, "max_pending": 1000, "max_staleness_s": None, "engine": None}
    assert before["public.lazy"]["oldest_pending_age_s"] >= 0 and before["public.lazy"]["mode"] == "deferred"

    out = io.StringIO()
    assert Worker(engine, once=True, out=out).run() == 0
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["view"] for e in events if e["event"] == "maintained"] == ["public.eager"]
    assert [(e["view"], e["reason"], e["pending"]) for e in events if e["event"] == "skipped"] == [
        ("public.lazy", "within policy", 15)]  # --once says what became of every view
    after = _status(fresh_db)
    assert after["public.eager"]["pending_changes"] == 0 and after["public.eager"]["consecutive_failures"] == 0
    assert after["public.lazy"]["pending_changes"] == 15
    assert_equal_multiset(parts, "eager", SQL, COLS)
    table = _cli(fresh_db, "status")
    assert table.returncode == 0 and "public.lazy" in table.stdout and "within policy" in table.stdout


def test_policy_errors_name_the_problem(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    for args, message in [(["--every", "0"], "--every must be a positive"),
                          (["--max-pending", "0"], "--max-pending must be at least 1")]:
        res = _cli(fresh_db, "set-policy", "v", *args)
        assert res.returncode == 2 and message in res.stderr
    res = _cli(fresh_db, "set-policy", "nope", "--every", "5")
    assert res.returncode == 2 and 'no maintained view named "nope"' in res.stderr
    assert _status(fresh_db)["public.v"]["policy"]["every_s"] == 60.0  # unchanged default


def test_failures_are_counted_and_backed_off(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    parts.execute("UPDATE parts SET price = price + 1 WHERE pid = 1")
    storage = parts.execute("SELECT 'idivm.view_' || id FROM idivm.views WHERE view_name = 'v'").fetchone()[0]
    parts.execute(f"ALTER TABLE {storage} ADD CONSTRAINT small CHECK (twice < 30)")  # on the view's storage
    parts.execute("UPDATE parts SET price = 20 WHERE pid = 2")  # its view row breaks the constraint
    out = io.StringIO()
    assert Worker(engine, once=True, out=out).run() == 1
    failed = [json.loads(line) for line in out.getvalue().splitlines() if '"failed"' in line]
    assert failed and 'violates check constraint "small"' in failed[0]["error"]
    s = _status(fresh_db)["public.v"]
    assert s["consecutive_failures"] == 1 and "small" in s["last_error"] and s["pending_changes"] == 2  # nothing consumed
    # not due while it backs off, judged at the failed attempt's time (the status command above may
    # take longer than the 2 s backoff to start on a busy machine)
    state = next(v for v in engine.status() if v.view == "public.v")
    decision = decide(state.state, state.policy, state.state.last_attempt_at)
    assert not decision.due and decision.reason == "backing off after 1 failures", decision
    parts.execute(f"ALTER TABLE {storage} DROP CONSTRAINT small")
    engine.maintain("v")
    s = _status(fresh_db)["public.v"]
    assert s["consecutive_failures"] == 0 and s["last_error"] is None
    assert_equal_multiset(parts, "v", SQL, COLS)


def test_notify_wakes_a_sleeping_worker_and_sigterm_exits_0(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    engine.set_policy("v", every=3600, max_pending=5)
    engine.maintain("v")
    with WorkerProcess(fresh_db, "--every", "3600") as w:
        w.wait_for("started")
        parts.execute("INSERT INTO parts SELECT g, 1 FROM generate_series(101, 103) g")  # 3 < 5: no wake-up
        time.sleep(2)
        assert _status(fresh_db)["public.v"]["pending_changes"] == 3
        parts.execute("INSERT INTO parts SELECT g, 1 FROM generate_series(104, 106) g")  # 6 crosses 5
        e = w.wait_for("maintained", timeout=30)  # without the NOTIFY it would sleep 60 s
        assert e["view"] == "public.v" and e["reason"] == "max-pending" and e["changes"] == 6
        started = time.monotonic()
        assert w.terminate() == 0
        assert time.monotonic() - started < 10
        assert w.events[-1]["event"] == "stopped"
    assert_equal_multiset(parts, "v", SQL, COLS)


def test_two_workers_never_apply_twice(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    engine.register_view("w", "SELECT price, count(*) AS n FROM parts GROUP BY price")
    with WorkerProcess(fresh_db, "--every", "0.2") as a, WorkerProcess(fresh_db, "--every", "0.2") as b:
        a.wait_for("started"), b.wait_for("started")
        for i in range(30):
            parts.execute("UPDATE parts SET price = price + 1 WHERE pid %% 5 = %s", (i % 5,))
            parts.execute("INSERT INTO parts VALUES (%s, %s) ON CONFLICT (pid) DO UPDATE SET price = 0",
                          (200 + i % 7, i))
            time.sleep(0.05)
        deadline = time.monotonic() + 30
        while _status(fresh_db)["public.v"]["pending_changes"] or _status(fresh_db)["public.w"]["pending_changes"]:
            assert time.monotonic() < deadline, "the workers did not catch up"
            time.sleep(0.2)
        assert a.terminate() == 0 and b.terminate() == 0
    maintained = [e for e in a.events + b.events if e["event"] == "maintained"]
    assert maintained and not [e for e in a.events + b.events if e["event"] == "failed"]
    assert_equal_multiset(parts, "v", SQL, COLS)
    assert_equal_multiset(parts, "w", "SELECT price, count(*) AS n FROM parts GROUP BY price", ["price", "n"])


def _wait_until_blocked_on_view(db) -> None:
    deadline = time.monotonic() + 30
    while not db.execute("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                         "AND datname = current_database() AND (query LIKE '%%\"v\"%%' "
                         "OR query LIKE '%%idivm.maintain\\_locked%%' OR query LIKE '%%idivm.maintain\\_call%%')").fetchone():
        # the view's compiled maintenance, from the statement path or the one-call path
        assert time.monotonic() < deadline, "the worker never reached the view"
        time.sleep(0.1)


def test_sigterm_cancels_a_stuck_maintenance_after_the_grace_period(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    parts.execute("UPDATE parts SET price = price + 3 WHERE pid <= 20")
    with psycopg.connect(fresh_db) as blocker:
        blocker.execute("LOCK TABLE v IN ACCESS EXCLUSIVE MODE")  # the worker blocks on its first write to v
        with WorkerProcess(fresh_db, "--every", "0.2", "--grace", "1") as w:
            w.wait_for("started")
            _wait_until_blocked_on_view(parts)
            started = time.monotonic()
            assert w.terminate() == 0
            assert time.monotonic() - started < 10
        assert [e["event"] for e in w.events][-2:] == ["cancelled", "stopped"]
        blocker.rollback()
    s = _status(fresh_db)["public.v"]
    assert s["pending_changes"] == 20 and s["consecutive_failures"] == 0  # rolled back, not the view's fault
    assert engine.maintain("v").changes == 20
    assert_equal_multiset(parts, "v", SQL, COLS)


def test_worker_killed_mid_maintenance_loses_nothing(engine, parts, fresh_db):
    engine.register_view("v", SQL)
    parts.execute("UPDATE parts SET price = price + 3 WHERE pid <= 20")
    with psycopg.connect(fresh_db) as blocker:
        blocker.execute("LOCK TABLE v IN ACCESS EXCLUSIVE MODE")  # the worker blocks on its first write to v
        with WorkerProcess(fresh_db, "--every", "0.2") as w:
            w.wait_for("started")
            _wait_until_blocked_on_view(parts)
            w.kill()  # SIGKILL inside the maintenance transaction
        blocker.rollback()
    parts.execute("UPDATE parts SET price = 1 WHERE pid = 30")
    report = engine.maintain("v")  # waits for the orphaned backend's lock
    # The worker had sent its whole maintenance as one call (CALL idivm.maintain_call): its orphaned
    # backend, unblocked, finishes and commits it (PostgreSQL notices a vanished client only when it
    # writes to it). Either way nothing is lost or applied twice: the next run consumes the rest.
    assert report.changes == 1
    assert_equal_multiset(parts, "v", SQL, COLS)
    assert _status(fresh_db)["public.v"]["pending_changes"] == 0
