"""What a new user met following the README (issue 12, items 11-15): one failing view must not stop
the others, DSNs are parsed by libpq's rules, names print as they must be typed back, immediate
mode shows writers nothing but real errors, and messages say what works."""
from __future__ import annotations

import psycopg
import pytest

import idivm
from cli_runner import run_cli
from helpers import assert_equal_multiset


def cli(dsn, *args):
    return run_cli("--dsn", dsn, *args, timeout=120)


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE orders (oid int PRIMARY KEY, customer text NOT NULL, qty int NOT NULL)")
    db.execute("INSERT INTO orders VALUES (1, 'ann', 2), (2, 'bob', 3)")
    return db


def test_one_failing_view_does_not_stop_the_others(engine, shop, fresh_db):
    """Item 11: a CHECK constraint on one view's table, then a violating write: maintain reports that
    view as FAILED in one line, maintains the others, and exits 1."""
    engine.register_view("a_big", "SELECT oid, qty FROM orders WHERE qty > 1")
    engine.register_view("b_all", "SELECT customer, sum(qty) AS total FROM orders GROUP BY customer")
    engine.register_view("c_count", "SELECT count(*) AS n FROM orders")
    storage = shop.execute("SELECT 'idivm.view_' || id FROM idivm.views WHERE view_name = 'a_big'").fetchone()[0]
    shop.execute(f"ALTER TABLE {storage} ADD CONSTRAINT small CHECK (qty < 100)")  # on the view's storage table
    shop.execute("INSERT INTO orders VALUES (3, 'cy', 500), (4, 'ann', 1)")
    r = cli(fresh_db, "maintain")
    assert r.returncode == 1, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3 and "Traceback" not in r.stdout + r.stderr
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1 and failed[0].startswith(f"public.a_big: FAILED: new row for relation \"{storage[6:]}\" violates")
    assert_equal_multiset(shop, "b_all", "SELECT customer, sum(qty) AS total FROM orders GROUP BY customer",
                          ["customer", "total"])
    assert_equal_multiset(shop, "c_count", "SELECT count(*) AS n FROM orders", ["n"])
    reports = engine.maintain()  # all views: the API reports the failure too, and goes on
    assert [r.view for r in reports if r.failed] == ["public.a_big"]
    with pytest.raises(psycopg.errors.CheckViolation):  # one named view: its failure is raised
        engine.maintain("a_big")
    # the failed call ended before its unlock: the session released the view's lock, and recorded the failure
    assert shop.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").fetchone()[0] == 0
    assert shop.execute("SELECT consecutive_failures FROM idivm.views WHERE view_name = 'a_big'").fetchone()[0] == 3
    shop.execute(f"ALTER TABLE {storage} DROP CONSTRAINT small")
    assert engine.verify("a_big").ok  # nothing was lost while it failed
    assert engine.maintain("a_big").changes == 0  # and the next maintenance takes the lock again


@pytest.mark.parametrize("spelling", ["host={h} port={p} user={u} dbname = {d}", "host={h} port={p} user={u} dbname='{d}'",
                                      "host={h} port={p} user={u} dbname={d} application_name='my app'"])
def test_keyword_dsns_follow_libpq(fresh_db, spelling):
    """Item 12: spaces around '=', quoted values, values with spaces."""
    parts = psycopg.conninfo.conninfo_to_dict(fresh_db)
    dsn = spelling.format(h=parts.get("host", "127.0.0.1"), p=parts.get("port", 5432), u=parts.get("user", "postgres"),
                          d=parts["dbname"])
    e = idivm.connect(dsn)
    try:
        e.init()
        with e.sa.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_database()").scalar() == parts["dbname"]
            if "my app" in spelling:
                assert conn.exec_driver_sql("SHOW application_name").scalar() == "my app"
    finally:
        e.close()


def test_malformed_and_unreachable_dsns_are_one_line(fresh_db):
    """Items 12 and 15: garbage is named as a malformed DSN; a server that does not answer is an
    IdivmError naming where the DSN came from (the API's connect(dsn), the CLI's --dsn)."""
    with pytest.raises(idivm.IdivmError, match=r"^malformed DSN from connect\(dsn\): missing \"=\" after \"garbage\""):
        idivm.connect("garbage")
    e = idivm.connect("host=127.0.0.1 port=1 user=x dbname=x")
    with pytest.raises(idivm.IdivmError, match=r"^cannot reach the database \(connect\(dsn\)\): connection failed"):
        e.init()
    r = run_cli("--dsn", "garbage here", "list", timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: malformed DSN from --dsn") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_mixed_case_names_print_as_they_are_typed(engine, shop, fresh_db):
    """Item 13: "BigQty" lists as public."BigQty", and what list printed is accepted back."""
    engine.register_view('"BigQty"', "SELECT oid, qty FROM orders WHERE qty > 2")
    assert [s.view for s in engine.status()] == ['public."BigQty"']
    r = cli(fresh_db, "list")
    assert 'public."BigQty"' in r.stdout
    shop.execute("INSERT INTO orders VALUES (9, 'dee', 7)")
    r = cli(fresh_db, "verify", 'public."BigQty"')
    assert r.returncode == 0 and 'public."BigQty": OK' in r.stdout, r.stdout + r.stderr
    assert engine.maintain('public."BigQty"').view == 'public."BigQty"'


def test_immediate_writers_see_only_real_errors(engine, shop, fresh_db):
    """Item 14: no NOTICE on any write to a grouped immediate view's table; the isolation refusal
    names the isolation level."""
    engine.register_view("totals", "SELECT customer, sum(qty) AS total, count(*) AS n FROM orders GROUP BY customer",
                         mode="immediate")
    notices = []
    with psycopg.connect(fresh_db, autocommit=True) as w:
        w.add_notice_handler(lambda d: notices.append(d.message_primary))
        w.execute("INSERT INTO orders VALUES (5, 'ann', 1)")
        w.execute("UPDATE orders SET qty = qty + 1")
        w.execute("DELETE FROM orders WHERE oid = 1")
        with w.transaction():
            w.execute("INSERT INTO orders VALUES (6, 'eve', 4)")
            w.execute("UPDATE orders SET customer = 'bob' WHERE oid = 6")
    assert notices == []
    assert_equal_multiset(shop, "totals", "SELECT customer, sum(qty) AS total, count(*) AS n FROM orders GROUP BY customer",
                          ["customer", "total", "n"])
    with psycopg.connect(fresh_db) as rr:
        rr.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.errors.FeatureNotSupported,
                           match="needs writers at READ COMMITTED; this transaction runs at repeatable read;"):
            rr.execute("UPDATE orders SET qty = 1 WHERE oid = 2")


def test_dropped_base_table_says_what_works(engine, shop):
    """Item 15: refresh cannot rebuild a view whose table is gone; the message says what works."""
    engine.register_view("big", "SELECT oid, qty FROM orders WHERE qty > 1")
    shop.execute("DROP TABLE orders")
    with pytest.raises(idivm.IdivmError, match=r"base table public.orders was dropped\); recreate the table and run "
                                               r"`idivm refresh public.big`, or drop the view \(`idivm drop-view public.big`\)"):
        engine.maintain("big")
    engine.drop_view("big")
