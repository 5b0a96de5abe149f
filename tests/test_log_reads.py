"""Logs are read and pruned through their xid index: a view maintained often does not pay for the
rows kept for a view over the same table that is maintained rarely (catalog.unconsumed,
catalog.prune_log; the numbers are in scripts/bench_log_size.py's output)."""
from __future__ import annotations

import time

from helpers import assert_equal_multiset

BUSY = "SELECT grp, count(*) AS n, sum(val) AS total FROM items GROUP BY grp"
IDLE = "SELECT id, val FROM items WHERE val % 2 = 0"


def _setup(db, engine, rows: int = 2000) -> str:
    db.execute("CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val bigint NOT NULL)")
    db.execute("INSERT INTO items SELECT g, g %% 10, g FROM generate_series(1, %s) g", (rows,))
    engine.register_view("busy", BUSY)
    engine.register_view("idle", IDLE)
    return db.execute("SELECT log_table FROM idivm.captured_tables").fetchone()[0]


def _pruned_below(db):
    return db.execute("SELECT CAST(pruned_below AS text) FROM idivm.captured_tables").fetchone()[0]


def test_prune_keeps_what_the_idle_view_needs_and_starts_where_it_stopped(engine, db):
    log = _setup(db, engine)
    db.execute("UPDATE items SET val = val + 1 WHERE id <= 100")
    engine.maintain("busy")
    assert db.execute(f"SELECT count(*) FROM {log}").fetchone()[0] == 100  # kept for the idle view
    engine.maintain("idle")
    assert db.execute(f"SELECT count(*) FROM {log}").fetchone()[0] == 0
    first = _pruned_below(db)
    assert first is not None
    db.execute("UPDATE items SET val = val + 1 WHERE id <= 50")
    db.execute("DELETE FROM items WHERE id = 7")
    engine.maintain("busy")
    assert db.execute(f"SELECT count(*) FROM {log}").fetchone()[0] == 51
    idle_xmin = db.execute("SELECT CAST(pg_snapshot_xmin(CAST(last_snapshot AS pg_snapshot)) AS text) "
                           "FROM idivm.views WHERE view_name = 'idle'").fetchone()[0]
    assert int(first) <= int(_pruned_below(db)) == int(idle_xmin)  # the idle view's snapshot holds it
    engine.maintain("idle")
    assert db.execute(f"SELECT count(*) FROM {log}").fetchone()[0] == 0
    assert int(_pruned_below(db)) >= int(first)  # (snapshots of other sessions on the server may hold it)
    assert_equal_multiset(db, "busy", BUSY, ["grp", "n", "total"])
    assert_equal_multiset(db, "idle", IDLE, ["id", "val"])


def test_a_maintenance_reads_its_window_through_the_log_index(engine, db):
    """With many rows kept for the idle view, the busy view's window is one index range: the bound
    is a literal the planner estimates from the index, not a subquery it guesses a third of the log
    for (which chose a parallel bitmap scan of the whole log)."""
    from idivm.capture.fold import log_images
    from idivm.catalog import repository as catalog

    log = _setup(db, engine, rows=20_000)
    with db.transaction():
        for _ in range(3):
            db.execute("UPDATE items SET val = val + 1")  # 60k rows kept for the idle view
        written = int(db.execute("SELECT CAST(pg_current_xact_id() AS text)").fetchone()[0])
    # the busy view's next window starts at its snapshot's xmin, which a transaction of another test
    # on the server (xids are the cluster's) may hold below the 60k rows: then reading them is right
    deadline = time.monotonic() + 120
    while True:
        engine.maintain("busy")
        xmin = int(db.execute("SELECT CAST(pg_snapshot_xmin(CAST(last_snapshot AS pg_snapshot)) AS text) "
                              "FROM idivm.views WHERE view_name = 'busy'").fetchone()[0])
        if xmin > written:
            break
        assert time.monotonic() < deadline, "another transaction on the server stayed open for two minutes"
        db.execute("UPDATE items SET val = val WHERE id = 1")  # something for the next maintenance
        time.sleep(0.5)
    db.execute(f"ANALYZE {log}")
    db.execute("UPDATE items SET val = val + 1 WHERE id <= 20")
    snapshot, view_id = db.execute("SELECT last_snapshot, id FROM idivm.views WHERE view_name = 'busy'").fetchone()
    window = log_images(log, catalog.unconsumed("l", view_id, snapshot))
    plan = "\n".join(r[0] for r in db.execute(f"EXPLAIN {window}").fetchall())
    assert "log_1_xid" in plan and "Seq Scan" not in plan and "Gather" not in plan, plan
    assert db.execute(f"SELECT count(*) FROM ({window}) AS w").fetchone()[0] == 40  # 20 old and 20 new images
    engine.maintain("busy")
    assert_equal_multiset(db, "busy", BUSY, ["grp", "n", "total"])
