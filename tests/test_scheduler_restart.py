"""PostgreSQL restarted under a running scheduler: the worker reports the outage, backs off,
reconnects, and maintains what was written before and after; the view equals recomputation.

Runs on a throwaway cluster of its own (the shared test server must not be restarted)."""
from __future__ import annotations

import time

import psycopg
import pytest

import idivm
from helpers import assert_equal_multiset, throwaway_cluster
from worker_process import WorkerProcess

SQL = "SELECT k, sum(v) AS total, count(*) AS n FROM items GROUP BY k"


@pytest.fixture
def cluster():
    with throwaway_cluster("idivm-restart-") as started:
        yield started


def test_scheduler_survives_a_server_restart(cluster):
    from idivm.embedded import start_cluster, stop_cluster

    datadir, dsn = cluster
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("CREATE TABLE items (id int PRIMARY KEY, k int NOT NULL, v int)")
        db.execute("INSERT INTO items SELECT g, g % 5, g FROM generate_series(1, 100) g")
    engine = idivm.connect(dsn)
    engine.register_view("totals", SQL)
    engine.close()
    with WorkerProcess(dsn, "--every", "0.2") as w:
        w.wait_for("started")
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute("UPDATE items SET v = v + 1 WHERE id <= 30")
        w.wait_for("maintained", timeout=30)

        stop_cluster(datadir)
        down = w.wait_for("database-unavailable", timeout=30)
        assert down["retry_in_s"] >= 1
        time.sleep(2)  # a few failed reconnects: backoff grows
        start_cluster(datadir, quiet=True)
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute("INSERT INTO items SELECT g, g % 7, 1 FROM generate_series(101, 150) g")
            db.execute("DELETE FROM items WHERE id % 9 = 0")
        w.wait_for("maintained", timeout=60)  # recovered, no restart of the worker needed
        engine = idivm.connect(dsn)
        deadline = time.monotonic() + 30
        while engine.status()[0].state.pending:
            assert time.monotonic() < deadline, "the worker did not catch up after the restart"
            time.sleep(0.2)
        engine.close()
        assert w.terminate() == 0
    with psycopg.connect(dsn, autocommit=True) as db:
        assert_equal_multiset(db, "totals", SQL, ["k", "total", "n"])
