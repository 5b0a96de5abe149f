"""The relation applications read (issue 18 item 2): under the view's name, exactly its output
columns, refusing writes with one clear line; the storage (with the ID columns) kept in idivm's
schema; reads through it plan as reads of the table; indexes users add to the storage survive a
rebuild; views registered in the layout before it are moved by `idivm init`."""
from __future__ import annotations

import psycopg
import pytest

from helpers import assert_equal_multiset

SQL = "SELECT p.pid, p.price, s.name FROM parts p JOIN sup s ON s.sid = p.sid WHERE p.price > 5"
COLS = ["pid", "price", "name"]


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE sup (sid int PRIMARY KEY, name text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int NOT NULL)")
    db.execute("INSERT INTO sup SELECT g, 's' || g FROM generate_series(1, 5) g")
    db.execute("INSERT INTO parts SELECT g, 1 + g % 5, g FROM generate_series(1, 200) g")
    return db


def _storage(db, name):
    return db.execute("SELECT 'idivm.view_' || id FROM idivm.views WHERE view_name = %s", (name,)).fetchone()[0]


@pytest.mark.parametrize("mode", ["deferred", "immediate"])
def test_the_view_shows_its_columns_and_refuses_writes(engine, shop, mode):
    db = shop
    engine.register_view("cheap", SQL, mode=mode)
    cur = db.execute("SELECT * FROM cheap LIMIT 1")
    assert [d.name for d in cur.description] == COLS  # no __idivm_ columns
    for write in ("INSERT INTO cheap VALUES (999, 1, 'x')", "UPDATE cheap SET price = 0",
                  "DELETE FROM cheap WHERE pid = 10"):
        with pytest.raises(psycopg.errors.WrongObjectType) as refused:
            db.execute(write)
        message = str(refused.value).splitlines()[0]
        assert 'it is a view maintained by idivm; write to its base tables instead' in message
        assert '"public.cheap"' in message
    db.execute("UPDATE parts SET price = price + 3 WHERE pid % 7 = 0")
    db.execute("DELETE FROM sup WHERE sid = 2")
    if mode == "deferred":
        engine.maintain()
    assert_equal_multiset(db, "cheap", SQL, COLS)
    assert engine.verify("cheap").ok


def test_a_role_reads_the_view_not_its_storage(engine, shop, fresh_db):
    db = shop
    engine.register_view("cheap", SQL)
    db.execute("DROP ROLE IF EXISTS idivm_test_app")
    db.execute("CREATE ROLE idivm_test_app LOGIN")
    try:
        engine.grant("cheap", "idivm_test_app")
        as_app = fresh_db.replace("user=postgres", "user=idivm_test_app")
        with psycopg.connect(as_app, autocommit=True) as app:
            assert app.execute("SELECT count(*) FROM cheap").fetchone()[0] > 0
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(f"SELECT * FROM {_storage(db, 'cheap')}")
    finally:
        db.execute("DROP OWNED BY idivm_test_app")
        db.execute("DROP ROLE idivm_test_app")


def test_reads_through_the_view_plan_as_reads_of_its_storage(engine, shop):
    db = shop
    engine.register_view("cheap", SQL)
    storage = _storage(db, "cheap")
    db.execute(f"CREATE INDEX cheap_by_price ON {storage} (price)")
    db.execute(f"ANALYZE {storage}")
    db.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in db.execute("EXPLAIN SELECT pid FROM cheap WHERE price = 42").fetchall())
    assert "cheap_by_price" in plan  # the storage's index serves a lookup through the view
    db.execute("RESET enable_seqscan")
    # the index survives a rebuild (a new storage table), as do the view's grants and policy
    engine.refresh("cheap")
    new = _storage(db, "cheap")
    assert new != storage
    assert db.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'cheap_by_price' "
                      "AND schemaname || '.' || tablename = %s", (new,)).fetchone()[0] == 1
    assert [s.as_json(s.state.last_maintained_at)["storage_table"] for s in engine.status()] == [new]


def test_dropping_the_view_marks_it_stale_and_refresh_brings_it_back(engine, shop):
    db = shop
    engine.register_view("cheap", SQL)
    db.execute("DROP VIEW cheap")
    [status] = engine.status()
    assert status.state.stale and "its view public.cheap was dropped" in status.stale_reason
    engine.refresh("cheap")
    assert_equal_multiset(db, "cheap", SQL, COLS)
