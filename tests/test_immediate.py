"""Immediate mode: views equal recomputation right after every writing transaction (committed or
rolled back, several statements each, key updates), with no maintenance call; concurrent writers;
switching modes both ways loses nothing; TRUNCATE and REPEATABLE READ writers are refused with a
message; capture for deferred views over the same tables keeps working."""
from __future__ import annotations

import random
import threading

import psycopg
import pytest

import idivm
from helpers import assert_equal_multiset

VIEWS = {
    "joined": ("SELECT p.pid, p.price, s.name FROM parts p JOIN suppliers s ON s.sid = p.sid WHERE p.price > 20",
               ["pid", "price", "name"], "id"),
    "sums": ("SELECT s.name, count(*) AS n, sum(p.price) AS total FROM parts p JOIN suppliers s ON s.sid = p.sid "
             "GROUP BY s.name", ["name", "n", "total"], "id"),
    "extremes": ("SELECT sid, min(price) AS lo, max(price) AS hi FROM parts GROUP BY sid", ["sid", "lo", "hi"], "id"),
    "tuple_joined": ("SELECT p.pid, p.price, s.name FROM parts p JOIN suppliers s ON s.sid = p.sid",
                     ["pid", "price", "name"], "tuple"),
}


@pytest.fixture
def tables(db):
    db.execute("CREATE TABLE suppliers (sid int PRIMARY KEY, name text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int)")
    db.execute("INSERT INTO suppliers SELECT g, 's' || (g % 3) FROM generate_series(1, 6) g")
    db.execute("INSERT INTO parts SELECT g, 1 + g % 6, (g * 13) % 50 FROM generate_series(1, 40) g")
    return db


def _register(engine, mode="immediate"):
    for name, (sql, _, strategy) in VIEWS.items():
        engine.register_view(name, sql, strategy=strategy, mode=mode)


def _check(db):
    for name, (sql, cols, _) in VIEWS.items():
        assert_equal_multiset(db, name, sql, cols)


def _random_transaction(db, rng: random.Random) -> None:
    try:
        with db.transaction():
            for _ in range(rng.randint(1, 5)):
                op = rng.random()
                if op < 0.25:
                    db.execute("INSERT INTO parts VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                               (rng.randint(1, 80), rng.randint(1, 6), rng.choice([None, rng.randint(0, 60)])))
                elif op < 0.5:
                    db.execute("UPDATE parts SET price = %s WHERE pid %% 7 = %s", (rng.randint(0, 60), rng.randint(0, 6)))
                elif op < 0.6:
                    db.execute("UPDATE parts SET pid = pid + 100 WHERE pid = %s", (rng.randint(1, 80),))  # key update
                elif op < 0.7:
                    db.execute("UPDATE parts SET sid = %s WHERE pid = %s", (rng.randint(1, 6), rng.randint(1, 80)))
                elif op < 0.85:
                    db.execute("DELETE FROM parts WHERE pid = %s", (rng.randint(1, 80),))
                else:
                    db.execute("UPDATE suppliers SET name = %s WHERE sid = %s", (f"s{rng.randint(0, 4)}", rng.randint(1, 6)))
            if rng.random() < 0.2:
                raise RuntimeError("roll back")
    except RuntimeError:
        pass
    except psycopg.errors.DeadlockDetected:
        pass  # concurrent writers serialise at the view; PostgreSQL aborts one of a deadlocked pair
    except psycopg.errors.UniqueViolation:
        pass  # a key moved onto one another writer (or an earlier move) took: that transaction rolls back


@pytest.mark.parametrize("seed", [1, 2])
def test_views_are_fresh_after_every_transaction(engine, tables, seed):
    _register(engine)
    assert {s.view: s.mode for s in engine.status()} == {f"public.{n}": "immediate" for n in VIEWS}
    rng = random.Random(seed)
    for _ in range(25):
        _random_transaction(tables, rng)
        _check(tables)  # no maintain() call anywhere
    assert all(s.state.pending == 0 for s in engine.status())
    reports = engine.maintain()  # a no-op for immediate views: consuming the log would apply it twice
    assert all(r.skipped and "immediately" in r.skipped and r.changes == 0 for r in reports)
    assert all(engine.verify(name).ok for name in VIEWS)
    _check(tables)


def test_concurrent_writers(engine, tables, fresh_db):
    _register(engine)

    failures: list[BaseException] = []

    def write(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with psycopg.connect(fresh_db, autocommit=True) as conn:
                for _ in range(30):
                    _random_transaction(conn, rng)
        except BaseException as e:  # a writer that died would leave the test checking less than it says
            failures.append(e)

    threads = [threading.Thread(target=write, args=(s,)) for s in (11, 12, 13)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    _check(tables)


def test_switching_modes_loses_nothing(engine, tables):
    _register(engine, mode="deferred")
    engine.register_view("deferred_too", VIEWS["sums"][0])  # shares the capture of the same tables
    rng = random.Random(5)
    for round_ in range(3):
        for _ in range(4):
            _random_transaction(tables, rng)  # deferred: pending changes pile up
        for name in VIEWS:
            engine.set_mode(name, "immediate")  # applies them, then stays fresh
        _check(tables)
        for _ in range(4):
            _random_transaction(tables, rng)
        _check(tables)
        for name in VIEWS:
            engine.set_mode(name, "deferred")
        for _ in range(4):
            _random_transaction(tables, rng)
        engine.maintain()
        _check(tables)
        assert_equal_multiset(tables, "deferred_too", VIEWS["sums"][0], VIEWS["sums"][1])


@pytest.mark.parametrize("name", ["sums", "extremes"])
def test_switching_to_immediate_after_a_recomputation_rebuilds_the_cache(engine, tables, name):
    """A deferred maintenance that recomputed a grouped view may leave its cache stale (docs/maintenance.md,
    "Recomputing instead"), and so may the catch-up maintenance of a switch to immediate mode, when
    recomputing again is estimated cheaper than rebuilding the cache; immediate mode maintains the
    cache change by change, so the switch rebuilds it first. Without that, later writes reached the
    view through a stale cache (found by bench_capture's nested updates). The costs are set in the
    catalog so that the catch-up recomputes without the cache whatever this machine's speed."""
    sql, cols, strategy = VIEWS[name]
    engine.register_view(name, sql, strategy=strategy)
    rng = random.Random(9)
    for switch in range(3):
        for _ in range(3):
            _random_transaction(tables, rng)
        tables.execute("UPDATE idivm.views SET recompute_ms = 1e6, rebuild_ms = 1e9, recompute_measured = true, "
                       "caches_stale = true, stale_regret_ms = 0 WHERE view_name = %s", (name,))
        engine.set_mode(name, "immediate")  # its catch-up: recomputed again, without the cache
        for _ in range(4):
            _random_transaction(tables, rng)
            assert_equal_multiset(tables, name, sql, cols)
        engine.set_mode(name, "deferred")


def test_refusals_name_the_problem(engine, tables, fresh_db):
    engine.register_view("joined", VIEWS["joined"][0], mode="immediate")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match=r"TRUNCATE of \"public\".\"parts\" is not supported "
                       r"while view public.joined is maintained immediately"):
        tables.execute("TRUNCATE parts")
    with psycopg.connect(fresh_db) as rr:
        rr.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="needs writers at READ COMMITTED"):
            rr.execute("UPDATE parts SET price = 1 WHERE pid = 1")
    with pytest.raises(idivm.IdivmError, match="unknown mode 'eager'; choose one of: deferred, immediate"):
        engine.set_mode("joined", "eager")
    _check_one = VIEWS["joined"]
    assert_equal_multiset(tables, "joined", _check_one[0], _check_one[1])
    engine.drop_view("joined")
    assert tables.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'idivm_%%'").fetchone()[0] == 0
    tables.execute("TRUNCATE parts")  # no view left: allowed again


def test_refresh_keeps_an_immediate_view_immediate(engine, tables):
    sql, cols, _ = VIEWS["sums"]
    engine.register_view("sums", sql, mode="immediate")
    tables.execute("ALTER TABLE parts ALTER COLUMN price TYPE bigint")
    tables.execute("UPDATE parts SET price = price + 1 WHERE pid <= 10")  # stale: not maintained now
    assert {s.view: s.state.stale for s in engine.status()}["public.sums"]
    engine.refresh("sums")
    assert {s.view: s.mode for s in engine.status()}["public.sums"] == "immediate"
    tables.execute("DELETE FROM parts WHERE pid > 30")
    assert_equal_multiset(tables, "sums", sql, cols)


def test_small_and_bulk_statements_alternate_between_kept_and_fresh_plans(engine, tables):
    """A round of up to SMALL_CHANGES folded changes runs the Δ-script as static SQL (plans kept for
    the session), a larger one with EXECUTE (planned for its size): alternating them in one session,
    and in one transaction, keeps every view exact."""
    from idivm.engines.postgres.immediate import SMALL_CHANGES

    _register(engine)
    tables.execute("INSERT INTO parts SELECT g, 1 + g %% 6, g %% 50 FROM generate_series(100, %s) g",
                   (100 + SMALL_CHANGES + 200,))
    _check(tables)
    for step in range(3):
        tables.execute("UPDATE parts SET price = price + 1 WHERE pid = %s", (7 + step,))
        _check(tables)
        tables.execute("UPDATE parts SET price = price + 1, sid = 1 + (sid % 6) WHERE pid >= 100")  # bulk
        _check(tables)
    with tables.transaction():
        tables.execute("DELETE FROM parts WHERE pid = 3")
        tables.execute("DELETE FROM parts WHERE pid >= 100 AND pid % 2 = 0")
        tables.execute("UPDATE suppliers SET name = 'renamed' WHERE sid = 2")
    _check(tables)


def test_tables_read_by_immediate_views_alone_keep_no_log(engine, tables):
    """Nothing consumes the log of a table that only immediate views read, so nothing pruned it: it
    grew with every write. Capture now logs only while a deferred view reads the table, and the
    views stay exact through every switch."""
    def logged(table):
        log = tables.execute("SELECT log_table FROM idivm.captured_tables WHERE table_name = %s", (table,)).fetchone()[0]
        return tables.execute(f"SELECT count(*) FROM {log}").fetchone()[0]

    sql, cols, _ = VIEWS["sums"]
    engine.register_view("deferred_sums", sql)
    tables.execute("UPDATE parts SET price = price + 1 WHERE pid <= 10")
    assert logged("parts") == 10
    engine.register_view("sums", sql, mode="immediate")
    engine.set_mode("deferred_sums", "immediate")  # catches up; now only immediate views read parts
    assert logged("parts") == 0
    tables.execute("UPDATE parts SET price = price + 1")
    tables.execute("DELETE FROM suppliers WHERE sid = 6")
    assert logged("parts") == 0 and logged("suppliers") == 0
    assert_equal_multiset(tables, "sums", sql, cols)
    engine.set_mode("deferred_sums", "deferred")
    tables.execute("UPDATE parts SET price = price - 1 WHERE pid <= 5")
    assert logged("parts") == 5
    engine.maintain("deferred_sums")
    for name in ("sums", "deferred_sums"):
        assert_equal_multiset(tables, name, sql, cols)
    engine.drop_view("deferred_sums")  # a deferred reader dropped: the immediate one needs no log
    tables.execute("UPDATE parts SET price = price + 3 WHERE pid <= 5")
    assert logged("parts") == 0
    engine.register_view("again", sql)  # and a new deferred reader gets every change from now on
    tables.execute("UPDATE parts SET price = price + 1 WHERE pid <= 7")
    assert logged("parts") == 7
    engine.maintain("again")
    assert_equal_multiset(tables, "again", sql, cols)
    assert_equal_multiset(tables, "sums", sql, cols)


def test_a_kept_merge_looks_the_changed_groups_up(engine, db):
    """A single-row write changes one group of many: immediate mode's MERGE of the per-group sums
    must find it through the view's unique index. The planner sizes the scratch relation of changed
    groups by its pages (one page counts as about 120 rows) and, left alone, hash-joins them with
    every row of the view (V' in docs/benchmarks.md: 1.0 ms of a 1.2 ms write). The plans of the
    statements the write runs are shown by auto_explain, at WARNING so that the apply function's
    client_min_messages lets them through."""
    db.execute("CREATE TABLE t (k int PRIMARY KEY, g int NOT NULL, x int)")
    db.execute("INSERT INTO t SELECT i, i, i % 7 FROM generate_series(1, 20000) i")
    db.execute("ANALYZE t")
    engine.register_view("by_g", "SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g", mode="immediate")
    db.execute("UPDATE t SET x = x + 1 WHERE k = 1")  # the session's scratch tables exist from here on
    plans: list[str] = []
    db.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    db.execute("LOAD 'auto_explain'")
    for setting, value in (("log_min_duration", "0"), ("log_nested_statements", "on"), ("log_level", "warning")):
        db.execute(f"SET auto_explain.{setting} = {value}")
    db.execute("UPDATE t SET x = x + 1 WHERE k = 2")
    db.execute("RESET auto_explain.log_min_duration")
    merge = [p for p in plans if "MERGE INTO" in p and "view_" in p]
    assert merge, plans
    assert "Index Scan" in merge[0] and "Seq Scan on view_" not in merge[0], merge[0]
    assert_equal_multiset(db, "by_g", "SELECT g, count(*) AS n, sum(x) AS s FROM t GROUP BY g", ["g", "n", "s"])
