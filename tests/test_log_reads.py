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
    window = f"SELECT l.old_row, l.new_row FROM {log} AS l WHERE {catalog.unconsumed('l', view_id, snapshot)}"
    plan = "\n".join(r[0] for r in db.execute(f"EXPLAIN {window}").fetchall())  # as capture/fold.fold_log reads it
    assert "log_1_xid" in plan and "Seq Scan" not in plan and "Gather" not in plan, plan
    assert db.execute(f"SELECT count(*) FROM ({window}) AS w").fetchone()[0] == 20
    engine.maintain("busy")
    assert_equal_multiset(db, "busy", BUSY, ["grp", "n", "total"])


def test_the_log_fold_equals_the_general_fold_on_random_writes(engine, db):
    """capture/fold.py's fold_log (an update of unread columns dropped at once, keys grouped by their
    typed values, the general rule for keys with more images) gives exactly fold_select's effective
    changes: random write streams with keys changed, deleted and inserted again, several changes to
    one key, numerics rewritten at another scale (1.5 -> 1.50 is a change) and updates of a column
    the view does not read."""
    import random

    from idivm.capture.fold import fold_log, fold_select
    from idivm.catalog import repository as catalog
    from idivm.introspect.reflect import table_info

    # columns named as the fold's own aliases (k0, g, w, n, img): its references must all be qualified
    db.execute("CREATE TABLE items (k0 int PRIMARY KEY, g int, w numeric, n text, img int)")
    db.execute("INSERT INTO items SELECT x, x % 3, x * 1.5, 'n', 0 FROM generate_series(1, 30) x")
    engine.register_view("read", "SELECT k0 AS id, g AS grp, w AS val, img FROM items WHERE g <> 2")
    rng = random.Random(23)
    statements = [
        ("UPDATE items SET w = w + 1 WHERE k0 = %s", 1), ("UPDATE items SET n = n || 'x' WHERE k0 = %s", 1),
        ("UPDATE items SET w = CAST(w AS numeric(20,4)) WHERE k0 = %s", 1),
        ("UPDATE items SET k0 = k0 + 40 WHERE k0 = %s", 1), ("DELETE FROM items WHERE k0 = %s", 1),
        ("INSERT INTO items VALUES (%s, 1, 2.50, 'i', 0) ON CONFLICT (k0) DO UPDATE SET g = excluded.g", 1),
        ("UPDATE items SET g = g + 1, n = 'y' WHERE k0 %% 7 = %s", 1)]
    for round_ in range(6):
        with db.transaction():
            for _ in range(rng.randint(1, 25)):
                sql, _ = rng.choice(statements)
                db.execute(sql, (rng.randint(0, 75),))
        with engine.sa.connect() as conn:
            view_id = conn.exec_driver_sql("SELECT id FROM idivm.views").scalar()
            (t,) = catalog.view_inputs(conn, view_id, reflect=True)
            info = table_info(t.schema_name, t.table_name, t.columns).reading(t.read_columns)
            cols = list(info.column_names)

            def rows(select: str) -> list:
                return sorted(map(repr, conn.exec_driver_sql(f"SELECT * FROM ({select}) AS f").fetchall()))

            signed = (f"SELECT x.img, x.n FROM {t.log_table} AS l CROSS JOIN LATERAL (VALUES (l.old_row, -1), "
                      "(l.new_row, 1)) AS x(img, n) WHERE x.img IS NOT NULL")  # each image, signed (fold.py)
            general = rows(fold_select(info, signed, cols))
            assert rows(fold_log(info, t.log_table, "true", cols)) == general, round_
            assert general  # the stream changed something the view reads


def test_an_update_of_columns_no_view_reads_logs_nothing(engine, db):
    """Capture leaves out an updated row whose values are unchanged on every column a view over the
    table reads (capture/triggers.py), compared as text (1.5 -> 1.50 is logged); a view registered
    later that reads another column widens what is compared, and sees its changes."""
    db.execute("CREATE TABLE items (id int PRIMARY KEY, val numeric, note text, extra int)")
    db.execute("INSERT INTO items SELECT g, g * 1.5, 'n', 0 FROM generate_series(1, 10) g")
    engine.register_view("vals", "SELECT id, val FROM items")
    log = db.execute("SELECT log_table FROM idivm.captured_tables").fetchone()[0]
    logged = lambda: db.execute(f"SELECT count(*) FROM {log}").fetchone()[0]  # noqa: E731
    db.execute("UPDATE items SET note = 'changed', extra = extra + 1")
    assert logged() == 0
    db.execute("UPDATE items SET val = CAST(val AS numeric(10,2)) WHERE id = 1")  # 1.5 -> 1.50
    db.execute("UPDATE items SET val = NULL WHERE id = 2")
    assert logged() == 2
    engine.register_view("notes", "SELECT id, note FROM items WHERE extra > 0")
    db.execute("UPDATE items SET note = 'again' WHERE id <= 3")
    db.execute("UPDATE items SET extra = 5 WHERE id = 9")  # extra: read by the WHERE of notes
    engine.maintain()
    assert_equal_multiset(db, "vals", "SELECT id, val FROM items", ["id", "val"])
    assert_equal_multiset(db, "notes", "SELECT id, note FROM items WHERE extra > 0", ["id", "note"])
