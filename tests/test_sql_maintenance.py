"""Maintenance callable from SQL (engines/postgres/server_maintenance.py): SELECT idivm.maintain('v')
in a caller's REPEATABLE READ transaction, CALL idivm.maintain_all() for schedulers such as pg_cron.
Every view is compared with its recomputed query after each call."""
from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

import idivm
from idivm.embedded import bindir, start_cluster, stop_cluster
from idivm.engines.postgres.executor import maintain_view
from idivm.errors import Busy
from helpers import assert_equal_multiset

SCHEMA = """
CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL);
CREATE TABLE parts (pid int PRIMARY KEY, price numeric NOT NULL);
CREATE TABLE devices_parts (did int REFERENCES devices, pid int REFERENCES parts, PRIMARY KEY (did, pid));
INSERT INTO devices SELECT g, CASE WHEN g % 3 = 0 THEN 'tablet' ELSE 'phone' END FROM generate_series(1, 30) g;
INSERT INTO parts SELECT g, g * 1.5 FROM generate_series(1, 40) g;
INSERT INTO devices_parts SELECT d, p FROM generate_series(1, 30) d, generate_series(1, 40) p WHERE (d * p) % 7 < 2;
"""

VIEWS = {
    "phone_parts": ("SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
                    "WHERE category = 'phone'", ["did", "pid", "price"]),
    "cost": ("SELECT did, sum(price) AS cost, count(*) AS n FROM parts NATURAL JOIN devices_parts "
             "NATURAL JOIN devices WHERE category = 'phone' GROUP BY did", ["did", "cost", "n"]),
    "dear": ("SELECT did FROM cost WHERE cost > 60", ["did"]),  # a view over a view
}


def _random_writes(conn, rng: random.Random, n: int) -> None:
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:
            conn.execute("UPDATE parts SET price = price + %s WHERE pid = %s", (rng.randint(-5, 9), rng.randint(1, 40)))
        elif kind == 1:
            conn.execute("INSERT INTO devices_parts VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (rng.randint(1, 30), rng.randint(1, 40)))
        elif kind == 2:
            conn.execute("DELETE FROM devices_parts WHERE did = %s AND pid = %s", (rng.randint(1, 30), rng.randint(1, 40)))
        else:
            conn.execute("UPDATE devices SET category = CASE WHEN category = 'phone' THEN 'tablet' ELSE 'phone' END "
                         "WHERE did = %s", (rng.randint(1, 30),))


def _register(engine, strategies=("id", "tuple", "higher-order")) -> list[str]:
    names = []
    for strategy in strategies:
        for name, (sql, _) in VIEWS.items():
            if name == "dear":
                sql = sql.replace("FROM cost", f"FROM cost_{strategy.replace('-', '_')}")
            shown = f"{name}_{strategy.replace('-', '_')}"
            engine.register_view(shown, sql, strategy=strategy)
            names.append(shown)
    return names


def _check(conn, names: list[str]) -> None:
    for shown in names:
        name = shown.rsplit("_", 1)[0] if not shown.endswith("higher_order") else shown[: -len("_higher_order")]
        sql, cols = VIEWS[name]
        if name == "dear":
            sql = VIEWS["dear"][0].replace("FROM cost", f"FROM ({VIEWS['cost'][0]}) AS c")
        assert_equal_multiset(conn, shown, sql, cols)


def _maintain_in_sql(conn, name: str):
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return conn.execute("SELECT * FROM idivm.maintain(%s)", (name,)).fetchone()


def test_maintain_from_sql_keeps_every_strategy_exact(engine, db):
    db.execute(SCHEMA)
    names = _register(engine)
    rng = random.Random(7)
    for round_ in range(6):
        _random_writes(db, rng, 25)
        for name in names:  # lower views first: the list is in registration order
            row = _maintain_in_sql(db, name)
            assert row[1] == "maintained", row
            assert row[6].startswith(f"public.{name}: ") and " touched in " in row[6], row
        _check(db, names)
    # nothing pending: a call changes nothing and says so
    row = _maintain_in_sql(db, "cost_id")
    assert (row[1], row[2], row[3]) == ("maintained", 0, 0)
    # the catalog records it as the CLI does: status shows no pending change and no failure
    state = db.execute("SELECT last_changes, consecutive_failures FROM idivm.views WHERE view_name = 'cost_id'").fetchone()
    assert state == (0, 0)
    # the Python executor takes over where SQL left off, and the other way round
    _random_writes(db, rng, 25)
    engine.maintain("phone_parts_id")
    _random_writes(db, rng, 25)
    _maintain_in_sql(db, "phone_parts_id")
    engine.maintain()
    _check(db, names)


def test_sql_maintenance_refuses_what_would_be_wrong(engine, db):
    """READ COMMITTED (statements would see different databases), a transaction that wrote to the
    view's tables (its changes would be applied twice), an unknown name, a stale view: one error
    each, naming what to do, and the view and its pending changes stay as they were."""
    db.execute(SCHEMA)
    sql, cols = VIEWS["phone_parts"]
    engine.register_view("phone_parts", sql)
    engine.register_view("imm", "SELECT pid, price FROM parts", mode="immediate")
    db.execute("UPDATE parts SET price = price + 1 WHERE pid = 1")
    with pytest.raises(psycopg.errors.InvalidTransactionState,
                       match=r"needs a REPEATABLE READ or SERIALIZABLE transaction, and this one runs at read committed"):
        db.execute("SELECT idivm.maintain('phone_parts')")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState,
                       match=r"this transaction wrote to public.devices_parts, which view public.phone_parts reads"):
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            db.execute("DELETE FROM devices_parts WHERE pid = 2")
            db.execute("SELECT idivm.maintain('phone_parts')")
    with pytest.raises(psycopg.errors.UndefinedObject, match="no maintained view named nope"):
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            db.execute("SELECT idivm.maintain('nope')")
    with pytest.raises(psycopg.errors.InvalidName, match="not a view name"):
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            db.execute("SELECT idivm.maintain('a.b.c')")
    row = _maintain_in_sql(db, "imm")  # maintained by its writers
    assert row[1] == "skipped" and "maintained immediately" in row[6]
    row = _maintain_in_sql(db, "public.phone_parts")  # the qualified name works too; the first update is applied
    assert row[1] == "maintained" and row[2] == 1
    assert_equal_multiset(db, "phone_parts", sql, cols)
    db.execute("ALTER TABLE devices RENAME COLUMN category TO kind")
    with pytest.raises(psycopg.Error, match=r"view public.phone_parts is stale \(.*idivm refresh") as stale:
        _maintain_in_sql(db, "phone_parts")
    assert stale.value.sqlstate == "IV001"  # idivm's own code for a stale view (docs/operations.md)


def test_sql_and_python_maintainers_never_apply_a_change_twice(engine, db, fresh_db):
    """The CLI's lock and the catalog row lock: a transaction whose snapshot predates another
    maintainer's commit skips the view (that maintainer applied what it would), and one that holds
    the lock keeps the scheduler's non-waiting maintenance out until it commits."""
    db.execute(SCHEMA)
    sql, cols = VIEWS["cost"]
    engine.register_view("cost", sql)
    db.execute("UPDATE parts SET price = price + 3 WHERE pid < 20")
    with psycopg.connect(fresh_db, autocommit=True) as app:
        with app.transaction():
            app.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            app.execute("SELECT 1")  # the snapshot is taken here
            engine.maintain("cost")  # another maintainer commits after it
            row = app.execute("SELECT * FROM idivm.maintain('cost')").fetchone()
            assert row[1] == "skipped" and "another session maintained it" in row[6], row
        assert_equal_multiset(db, "cost", sql, cols)
        db.execute("UPDATE parts SET price = price + 3 WHERE pid < 20")
        with app.transaction():
            app.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            assert app.execute("SELECT outcome FROM idivm.maintain('cost')").fetchone()[0] == "maintained"
            vid = db.execute("SELECT id FROM idivm.views WHERE view_name = 'cost'").fetchone()[0]
            with pytest.raises(Busy):  # the scheduler's maintenance does not wait: the view is busy
                maintain_view(engine.sa, vid, "cost", wait=False)
    assert_equal_multiset(db, "cost", sql, cols)


def test_concurrent_writers_and_sql_maintainers_stay_exact(engine, db, fresh_db):
    """Writers commit while two sessions call idivm.maintain on the same views and the procedure runs:
    after a last maintenance every view equals its query."""
    db.execute(SCHEMA)
    names = _register(engine, strategies=("id", "tuple"))
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with psycopg.connect(fresh_db, autocommit=True) as c:
                while not stop.is_set():
                    with c.transaction(force_rollback=rng.random() < 0.1):
                        _random_writes(c, rng, rng.randint(1, 4))
        except psycopg.errors.DeadlockDetected:
            pass
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def maintainer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with psycopg.connect(fresh_db, autocommit=True) as c:
                while not stop.is_set():
                    if rng.random() < 0.3:
                        c.execute("CALL idivm.maintain_all()")
                    else:
                        _maintain_in_sql(c, rng.choice(names))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)]
    threads += [threading.Thread(target=maintainer, args=(s,)) for s in (3, 4)]
    for t in threads:
        t.start()
    time.sleep(8)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors
    db.execute("CALL idivm.maintain_all()")
    _check(db, names)


def test_maintain_all_procedure_goes_on_past_a_failure(engine, db):
    """Each view in its own transaction, lower views first; a failing view is recorded and named
    and the others are maintained; a stale view is skipped with a warning; the procedure raises at
    the end when a view failed; the consumed log rows are pruned."""
    db.execute(SCHEMA)
    names = _register(engine, strategies=("id",))
    engine.register_view("broken", "SELECT pid, price FROM parts WHERE price > 10")
    engine.register_view("gone", "SELECT did FROM devices")
    storage = db.execute("SELECT 'idivm.view_' || id FROM idivm.views WHERE view_name = 'broken'").fetchone()[0]
    db.execute(f"ALTER TABLE {storage} ADD CONSTRAINT small CHECK (price < 1000)")
    db.execute("UPDATE parts SET price = 5000 WHERE pid = 40")
    db.execute("UPDATE devices SET category = 'phone' WHERE did = 3")
    db.execute("ALTER TABLE devices RENAME TO old_devices")  # makes gone (and the views over devices) stale
    db.execute("ALTER TABLE old_devices RENAME TO devices")
    notices: list[str] = []
    db.add_notice_handler(lambda d: notices.append(f"{d.severity}: {d.message_primary}"))
    with pytest.raises(psycopg.errors.TriggeredActionException,
                       match=r"idivm.maintain_all: 1 of \d+ views failed: public.broken: FAILED: new row for relation"):
        db.execute("CALL idivm.maintain_all()")
    assert any(n.startswith("WARNING: public.gone: skipped: view public.gone is stale") for n in notices), notices
    failures = db.execute("SELECT consecutive_failures, last_error FROM idivm.views WHERE view_name = 'broken'").fetchone()
    assert failures[0] == 1 and "violates check constraint" in failures[1]
    for name in ("phone_parts_id", "cost_id"):  # stale like gone: they read devices
        assert db.execute("SELECT stale_reason IS NOT NULL FROM idivm.views WHERE view_name = %s", (name,)).fetchone()[0]
        engine.refresh(name)
    engine.refresh("gone")
    db.execute(f"ALTER TABLE {storage} DROP CONSTRAINT small")
    rng = random.Random(3)
    _random_writes(db, rng, 40)
    notices.clear()
    db.execute("CALL idivm.maintain_all()")
    order = [n.split(": ")[1] for n in notices if n.startswith("NOTICE")]
    assert order.index("public.cost_id") < order.index("public.dear_id"), order  # a view after the views it reads
    _check(db, names)
    assert_equal_multiset(db, "broken", "SELECT pid, price FROM parts WHERE price > 10", ["pid", "price"])
    assert db.execute("SELECT consecutive_failures FROM idivm.views WHERE view_name = 'broken'").fetchone()[0] == 0
    log = db.execute("SELECT log_table FROM idivm.captured_tables WHERE table_name = 'parts'").fetchone()[0]
    assert db.execute(f"SELECT count(*) FROM {log}").fetchone()[0] == 0, "the consumed log rows are pruned"
    db.execute("CALL idivm.maintain_all(ARRAY['dear_id', 'public.cost_id'])")  # named views, in dependency order


def _pg_cron_missing() -> str | None:
    try:
        lib = bindir().parent / "lib" / "pg_cron.so"
    except idivm.IdivmError as e:
        return str(e)
    if not lib.exists():
        return (f"pg_cron is not installed ({lib} is missing): apt-get install postgresql-15-cron "
                "(scripts/install_pg_cron.sh does it for the test command)")
    return None


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.skipif(_pg_cron_missing() is not None, reason=_pg_cron_missing() or "")
@pytest.mark.slow  # it waits up to a minute for pg_cron's first run: first, so that it never runs alone at the end
def test_pg_cron_schedules_maintenance():
    """docs/operations.md's pg_cron set-up, on a throwaway cluster that preloads pg_cron: the job
    CALL idivm.maintain_all() runs within a minute and leaves the view equal to its query."""
    tmp = Path(tempfile.mkdtemp(prefix="idivm-cron-"))
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
    datadir = tmp / "pgdata"
    try:
        start_cluster(datadir, quiet=True)
        with open(datadir / "postgresql.conf", "a") as f:
            f.write(f"\nshared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\ncron.host = '{datadir}'\n")
        stop_cluster(datadir)
        dsn = start_cluster(datadir, quiet=True)
        engine = idivm.connect(dsn)
        engine.init()
        try:
            with psycopg.connect(dsn, autocommit=True) as db:
                db.execute(SCHEMA)
                sql, cols = VIEWS["cost"]
                engine.register_view("cost", sql)
                db.execute("UPDATE parts SET price = price * 2 WHERE pid < 30")
                db.execute("CREATE EXTENSION pg_cron")
                db.execute("SELECT cron.schedule('idivm-maintain', '* * * * *', 'CALL idivm.maintain_all()')")
                # pg_cron records a run as 'starting', then 'running', then 'succeeded' or 'failed':
                # wait for the first run to end, not just to appear.
                deadline = time.monotonic() + 150
                runs = []
                while time.monotonic() < deadline and not (runs and runs[0][0] in ("succeeded", "failed")):
                    time.sleep(1)
                    runs = db.execute("SELECT status, return_message FROM cron.job_run_details "
                                      "ORDER BY runid").fetchall()
                assert runs and runs[0][0] == "succeeded", runs
                assert_equal_multiset(db, "cost", sql, cols)
                assert db.execute("SELECT last_changes FROM idivm.views WHERE view_name = 'cost'").fetchone()[0] > 0
        finally:
            engine.close()
    finally:
        stop_cluster(datadir)
        shutil.rmtree(tmp, ignore_errors=True)


def test_large_and_small_rounds_alternate(engine, db):
    """A round of more than 1,000 effective changes runs the compiled function's statements planned
    for its sizes, a small one the plans kept for the session: alternating them, in one session and
    through the API, every strategy stays exact."""
    db.execute(SCHEMA)
    db.execute("INSERT INTO parts SELECT g, g FROM generate_series(41, 3000) g")
    db.execute("INSERT INTO devices_parts SELECT 1 + g % 30, g FROM generate_series(41, 3000) g")
    names = _register(engine)
    for name in names:  # the Δ-script's rounds are the subject: never recomputed instead
        engine.set_policy(name, recompute="never")
    rng = random.Random(11)
    for round_ in range(4):
        db.execute("UPDATE parts SET price = price + 1")  # about 3,000 changes
        _random_writes(db, rng, 5)
        with db.transaction():  # this session keeps its plans between the rounds
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            changes = [db.execute("SELECT changes FROM idivm.maintain(%s)", (n,)).fetchone()[0]
                       for n in names if n.startswith("phone_parts")]
        assert all(c > 1000 for c in changes), changes
        engine.maintain()
        _check(db, names)
        _random_writes(db, rng, 3)
        for name in names:
            _maintain_in_sql(db, name)
        _check(db, names)


def test_the_cost_of_recomputing_is_measured_before_it_decides(engine, db):
    """Until a recomputation measured itself, recomputing costs the registration's fill, which for a
    grouped view includes the cache a recomputation skips: a batch estimated above half of it is
    recomputed, to measure it (docs/maintenance.md, "Recomputing instead"); from then on the measured
    figure decides, and the Δ-script runs below it; while a recomputation has left the cache stale,
    once what recomputing again cost beyond the Δ-script repays rebuilding the cache. The costs are set in the catalog, so that the
    decisions do not depend on this machine's speed; the view stays exact throughout."""
    db.execute(SCHEMA)
    sql, cols = VIEWS["cost"]
    engine.register_view("cost", sql)
    engine.set_policy("cost", recompute="auto")

    def batch(recompute_ms: float, measured: bool, rebuild_ms: float = 1.2) -> str | None:
        db.execute("UPDATE idivm.views SET recompute_ms = %s, recompute_measured = %s, rebuild_ms = %s, "
                   "change_ms = 0.025 WHERE view_name = 'cost'", (recompute_ms, measured, rebuild_ms))
        db.execute("UPDATE parts SET price = price + 1 WHERE pid <= 40")  # 40 logged changes: 1 ms at 25 µs each
        report = engine.maintain("cost")
        assert_equal_multiset(db, "cost", sql, cols)
        return report.recomputed

    assert "recomputed to measure what that costs" in batch(1.5, False)  # 1 ms > half of 1.5 ms
    assert db.execute("SELECT recompute_measured FROM idivm.views WHERE view_name = 'cost'").fetchone()[0]
    # its cache is stale: the Δ-script (1 ms) takes over, rebuilding the cache (1.2 ms), once recomputing
    # again (1.5 ms) has cost that much more than the Δ-script would have: after two batches
    assert "recomputed again without its cache" in batch(1.5, True)
    assert "recomputed again without its cache" in batch(1.5, True)
    assert "recomputed with its cache" in batch(1.5, True)
    assert batch(1.5, True) is None  # 1 ms < 1.5 ms measured, the cache fresh: the Δ-script
    assert "recomputed (the i-diffs" in batch(0.5, True)
    db.execute("UPDATE idivm.views SET recompute_measured = false, recompute_ms = 1e4, caches_stale = false "
               "WHERE view_name = 'cost'")
    assert "to measure what recomputing costs" in engine.explain("cost")
