"""Local stress (not committed): issue 12 item 5 variants."""
from __future__ import annotations
import os, random, subprocess, sys, threading, time
import psycopg, pytest
from helpers import assert_equal_multiset
from test_capture_concurrency import NULLABLE, _nullable_txn

SEEDS = range(int(os.environ.get("S0", "100")), int(os.environ.get("S1", "120")))

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("via_cli", [False, True])
def test_stress(fresh_db, engine, db, seed, via_cli):
    db.execute("CREATE TABLE a (k int PRIMARY KEY, x int, y int)")
    db.execute("CREATE TABLE b (k int PRIMARY KEY, x int, z int)")
    rng0 = random.Random(seed)
    for t in "ab":
        for k in range(1, 16):
            db.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", (k, rng0.choice([None, rng0.randint(0, 5)]), rng0.randint(0, 3)))
    names = []
    for strategy in ("tuple", "id"):
        for name, (sql, _) in NULLABLE.items():
            if name == "nested":
                continue
            engine.register_view(f"{name}_{strategy}", sql, strategy=strategy)
            names.append((f"{name}_{strategy}", name))
    stop = threading.Event()
    errors = []
    def writer(s):
        rng = random.Random(s)
        try:
            with psycopg.connect(fresh_db, autocommit=True) as conn:
                while not stop.is_set():
                    try:
                        with conn.transaction():
                            _nullable_txn(conn, rng)
                            if rng.random() < 0.15:
                                raise RuntimeError("abort")
                    except (RuntimeError, psycopg.errors.DeadlockDetected, psycopg.errors.UniqueViolation):
                        pass
                    time.sleep(rng.random() * 0.005)
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=writer, args=(seed * 10 + i,)) for i in range(3)]
    for t in threads:
        t.start()
    long_conn = psycopg.connect(fresh_db)
    long_rng = random.Random(seed + 99)
    try:
        for i in range(30):
            if via_cli:
                subprocess.run([sys.executable, "-m", "idivm.cli", "--dsn", fresh_db, "maintain"], capture_output=True)
            else:
                engine.maintain(*(n for n, _ in names))
            if i % 4 == 1:
                try:
                    long_conn.execute("SAVEPOINT s")
                    _nullable_txn(long_conn, long_rng)
                    long_conn.execute("RELEASE SAVEPOINT s")
                except (psycopg.errors.DeadlockDetected, psycopg.errors.UniqueViolation):
                    long_conn.execute("ROLLBACK TO SAVEPOINT s")
            time.sleep(0.2)
        long_conn.commit()
    finally:
        stop.set()
        for t in threads:
            t.join()
        long_conn.close()
    assert not errors, errors
    engine.maintain(*(n for n, _ in names))
    for view, name in names:
        assert_equal_multiset(db, view, NULLABLE[name][0], NULLABLE[name][1])
