"""Schema changes under maintained views: ALTER/DROP of what a view uses marks it stale (event
triggers), maintenance refuses it with the reason, status shows it, `idivm refresh` rebuilds it
(and the views over it); harmless DDL leaves views alone; drop-view cleans up after a rename."""
from __future__ import annotations

import psycopg
import pytest

import idivm
from cli_runner import run_cli
from helpers import assert_equal_multiset

SQL = "SELECT p.pid, p.price, s.name FROM parts p JOIN suppliers s ON s.sid = p.sid WHERE p.price > 2"
COLS = ["pid", "price", "name"]


@pytest.fixture
def tables(db):
    db.execute("CREATE TABLE suppliers (sid int PRIMARY KEY, name text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int, note text)")
    db.execute("INSERT INTO suppliers VALUES (1, 'a'), (2, 'b')")
    db.execute("INSERT INTO parts SELECT g, 1 + g % 2, g % 6, 'n' FROM generate_series(1, 20) g")
    return db


def _stale(engine, name="public.v"):
    return {s.view: s.stale_reason for s in engine.status()}[name]


def test_harmless_ddl_leaves_views_alone(engine, tables):
    engine.register_view("v", SQL)
    tables.execute("UPDATE parts SET price = 4 WHERE pid IN (5, 6)")  # changed before and after the ALTER
    tables.execute("ALTER TABLE parts ADD COLUMN extra int DEFAULT 7")
    tables.execute("DELETE FROM parts WHERE pid = 5")  # its image now has extra: still the row updated above
    tables.execute("UPDATE parts SET price = 1 WHERE pid = 6")
    tables.execute("CREATE INDEX ON parts (price)")
    tables.execute("ALTER TABLE parts ALTER COLUMN note SET DEFAULT 'x'")
    tables.execute("CREATE TABLE unrelated (id int PRIMARY KEY)")
    tables.execute("DROP TABLE unrelated")
    assert _stale(engine) is None
    tables.execute("INSERT INTO parts VALUES (100, 2, 5, 'y', 1)")
    engine.maintain("v")  # the i-diff tables follow the new column
    assert_equal_multiset(tables, "v", SQL, COLS)


@pytest.mark.parametrize("ddl, reason", [
    ("ALTER TABLE parts DROP COLUMN price", "column(s) price of base table public.parts were dropped"),
    ("ALTER TABLE parts RENAME COLUMN price TO cost", "column(s) price of base table public.parts"),
    ("ALTER TABLE parts ALTER COLUMN price TYPE numeric", "column(s) price of base table public.parts"),
    ("ALTER TABLE suppliers RENAME TO vendors", "base table public.suppliers was renamed to public.vendors"),
    ("ALTER TABLE parts DROP CONSTRAINT parts_pkey", "the primary key of base table public.parts changed"),
    ("DROP TABLE suppliers", "base table public.suppliers was dropped"),
    ("DROP VIEW v", "its view public.v was dropped"),
])
def test_changes_to_what_a_view_uses_make_it_stale(engine, tables, ddl, reason):
    engine.register_view("v", SQL)
    tables.execute("UPDATE parts SET price = 5 WHERE pid = 1")
    tables.execute(ddl)
    assert reason in _stale(engine)
    works = (r"recreate the table and run `idivm refresh public.v`, or drop the view" if ddl == "DROP TABLE suppliers"
             else r"run `idivm refresh public.v`")  # a refresh cannot bring back a dropped base table
    with pytest.raises(idivm.IdivmError, match=r"view public.v is stale \(.*\); " + works):
        engine.maintain("v")
    [report] = engine.maintain()  # all views: the stale one is skipped, not fatal
    assert report.skipped and "stale" in report.skipped
    s = {s.view: s for s in engine.status()}["public.v"]
    assert s.state.stale and not s.decision.due and s.state.consecutive_failures == 0


SUPPLIERS = ("CREATE TABLE suppliers (sid int PRIMARY KEY, name text NOT NULL); "
             "INSERT INTO suppliers VALUES (1, 'c'), (2, 'd'), (3, 'e')")


@pytest.mark.parametrize("strategy", ["id", "tuple", "higher-order"])
def test_a_dropped_base_table_created_again_is_refreshed_as_the_stale_message_says(engine, tables, strategy):
    """"recreate the table and run `idivm refresh`" works: the new table gets the capture triggers the
    dropped one had (the same captured id, its log emptied of the old table's rows), the refresh
    fills the view from it, and maintenance follows its writes; a view registered over it meanwhile
    is maintained too."""
    engine.register_view("v", SQL, strategy=strategy)
    tables.execute("UPDATE suppliers SET name = 'z' WHERE sid = 1")  # logged, never maintained
    tables.execute("DROP TABLE suppliers")
    tables.execute(SUPPLIERS)
    engine.register_view("w", "SELECT sid, name FROM suppliers WHERE sid > 1", strategy=strategy)
    engine.refresh("v")
    assert _stale(engine) is None
    tables.execute("UPDATE suppliers SET name = 'y' WHERE sid = 2")
    tables.execute("INSERT INTO suppliers VALUES (4, 'f')")
    tables.execute("UPDATE parts SET sid = 4 WHERE pid = 3")
    reports = engine.maintain()
    assert not any(r.failed or r.skipped for r in reports), reports
    assert_equal_multiset(tables, "v", SQL, COLS)
    assert_equal_multiset(tables, "w", "SELECT sid, name FROM suppliers WHERE sid > 1", ["sid", "name"])


def test_a_view_gone_with_its_schema_is_replaced_by_name(engine, tables):
    """DROP SCHEMA ... CASCADE takes the view's relation and its base tables, not its catalog entry
    (the view is stale): registering the name again says it is taken and how to rebuild it, and
    --replace rebuilds it, though its query is the same (it was no longer maintained)."""
    tables.execute("CREATE SCHEMA app")
    tables.execute("CREATE TABLE app.t (k int PRIMARY KEY, a int)")
    view = "SELECT a, count(*) AS n FROM app.t GROUP BY a"
    engine.register_view("app.v", view)
    tables.execute("DROP SCHEMA app CASCADE")
    assert "base table app.t was dropped" in _stale(engine, "app.v")
    assert [r["stale"] for r in engine.list() if r["view"] == "app.v"] == ["base table app.t was dropped"]
    tables.execute("CREATE SCHEMA app")
    tables.execute("CREATE TABLE app.t (k int PRIMARY KEY, a int)")
    tables.execute("INSERT INTO app.t VALUES (1, 1), (2, 1), (3, 2)")
    engine.register_view("other", "SELECT pid, price FROM parts WHERE price > 3")  # over another table, while
    # app.t is captured by name but carries no triggers (registration syncs every captured table's logging)
    with pytest.raises(idivm.IdivmError, match="a maintained view with that name already exists; register it with --replace"):
        engine.register_view("app.v", view)
    engine.register_view("app.v", view, replace=True)
    assert _stale(engine, "app.v") is None
    tables.execute("DELETE FROM app.t WHERE k = 3")
    engine.maintain("app.v")
    assert_equal_multiset(tables, "app.v", view, ["a", "n"])


UNREAD = [  # none of these views reads parts.note
    ("v", SQL, COLS, "id"),
    ("t", SQL, COLS, "tuple"),
    ("g", "SELECT p.sid, count(*) AS n, sum(p.price) AS s FROM parts p GROUP BY p.sid", ["sid", "n", "s"], "id"),
    ("e", "SELECT s.sid FROM suppliers s WHERE EXISTS (SELECT 1 FROM parts p JOIN parts q ON q.sid = p.sid "
          "WHERE p.sid = s.sid AND q.price > 3)", ["sid"], "id"),
]


UNREAD_CHANGES = {  # changes to parts.note, and writes before and after them, all in one window
    "renamed, retyped and dropped": [
        "ALTER TABLE parts RENAME COLUMN note TO remark",
        "UPDATE parts SET price = price + 1, remark = 'r' WHERE pid <= 6",
        "ALTER TABLE parts ALTER COLUMN remark TYPE varchar(3)",
        "INSERT INTO parts VALUES (300, 2, 9, 'new')",
        "ALTER TABLE parts DROP COLUMN remark",
        "DELETE FROM parts WHERE pid IN (2, 3)"],
    # the logged images keep 'n' and 'r', which are no integers: the fold decodes only the columns a
    # view reads (capture/fold.py); decoding whole rows failed ("invalid input syntax for type integer")
    "retyped so that its logged values no longer parse": [
        "UPDATE parts SET price = price + 1, note = 'r' WHERE pid <= 6",
        "DELETE FROM parts WHERE pid = 7",
        "ALTER TABLE parts ALTER COLUMN note TYPE int USING length(note)",
        "UPDATE parts SET price = price + 2, note = 4 WHERE pid BETWEEN 5 AND 9"],
}


@pytest.mark.parametrize("changes", UNREAD_CHANGES.values(), ids=list(UNREAD_CHANGES))
def test_changes_to_columns_no_view_reads_leave_views_alone(engine, tables, changes):
    """Only the columns a view reads (algebra/columns_read.py) make it stale; the others can be
    renamed, retyped and dropped, and maintenance stays exact through them."""
    for name, sql, _, strategy in UNREAD:
        engine.register_view(name, sql, strategy=strategy)
    for statement in changes:
        tables.execute(statement)
    assert all(s.stale_reason is None for s in engine.status())
    reports = engine.maintain()
    assert not any(r.failed or r.skipped for r in reports), reports
    for name, sql, cols, _ in UNREAD:
        assert_equal_multiset(tables, name, sql, cols)
    tables.execute("ALTER TABLE parts ALTER COLUMN price TYPE bigint")  # read by all of them
    assert {s.view: s.stale_reason is not None for s in engine.status()} == {f"public.{n}": True for n, *_ in UNREAD}


def test_immediate_views_survive_changes_to_columns_they_do_not_read(engine, tables, fresh_db):
    """An immediate view's writers fold their changes into i-diffs of the columns the immediate views
    read: dropping or renaming another column leaves the writers' triggers working and the view
    exact, in a session that wrote before the change too; a second immediate view that reads more
    columns reshapes that session's i-diff table instead of breaking its next write."""
    engine.register_view("v", SQL, mode="immediate")
    with psycopg.connect(fresh_db, autocommit=True) as app:  # a long-lived writer session
        app.execute("UPDATE parts SET price = price + 1 WHERE pid = 1")
        tables.execute("ALTER TABLE parts RENAME COLUMN note TO remark")
        app.execute("UPDATE parts SET price = price + 1, remark = 'r' WHERE pid <= 6")
        tables.execute("ALTER TABLE parts DROP COLUMN remark")
        app.execute("INSERT INTO parts VALUES (300, 2, 9)")
        assert_equal_multiset(tables, "v", SQL, COLS)
        tables.execute("ALTER TABLE parts ADD COLUMN weight int")
        engine.register_view("heavy", "SELECT pid, weight FROM parts WHERE weight > 3", mode="immediate")
        app.execute("UPDATE parts SET weight = pid, price = price + 2 WHERE pid <= 10")
        app.execute("DELETE FROM parts WHERE pid IN (2, 3)")
    assert all(s.stale_reason is None for s in engine.status())
    assert_equal_multiset(tables, "v", SQL, COLS)
    assert_equal_multiset(tables, "heavy", "SELECT pid, weight FROM parts WHERE weight > 3", ["pid", "weight"])


def test_maintain_exits_3_when_it_skipped_a_stale_view(engine, tables, fresh_db):
    engine.register_view("v", SQL)
    engine.register_view("w", "SELECT sid, name FROM suppliers")
    tables.execute("ALTER TABLE parts RENAME COLUMN price TO cost")

    def cli(*args):
        return run_cli("--dsn", fresh_db, *args, timeout=120)

    r = cli("maintain")
    assert r.returncode == 3, r
    assert "public.v: skipped: view public.v is stale" in r.stdout and "public.w: 0 effective changes" in r.stdout
    assert cli("schedule", "--once").returncode == 3
    tables.execute("ALTER TABLE parts RENAME COLUMN cost TO price")  # back as it was: still stale until refreshed
    engine.refresh("v")
    assert cli("maintain").returncode == 0


def test_refresh_rebuilds_a_stale_view_and_the_views_over_it(engine, tables):
    engine.register_view("v", SQL)
    engine.register_view("per_name", "SELECT name, count(*) AS n FROM v GROUP BY name")
    engine.set_policy("v", every=7)
    tables.execute("ALTER TABLE parts ALTER COLUMN price TYPE bigint")
    tables.execute("UPDATE parts SET price = price + 10 WHERE pid <= 5")
    assert _stale(engine) is not None
    assert engine.refresh("v") == ["public.v", "public.per_name"]
    assert _stale(engine) is None and _stale(engine, "public.per_name") is None
    assert {s.view: s.policy.every for s in engine.status()}["public.v"] == 7  # policy kept
    assert_equal_multiset(tables, "v", SQL, COLS)
    tables.execute("DELETE FROM parts WHERE pid > 15")
    engine.maintain()
    assert_equal_multiset(tables, "v", SQL, COLS)
    assert_equal_multiset(tables, "per_name", f"SELECT name, count(*) AS n FROM ({SQL}) q GROUP BY name", ["name", "n"])


def test_refresh_of_a_definition_that_no_longer_compiles_changes_nothing(engine, tables):
    engine.register_view("v", SQL)
    tables.execute("ALTER TABLE parts RENAME COLUMN price TO cost")
    with pytest.raises(idivm.IdivmError, match='cannot refresh "v": the definition of public.v no longer compiles'):
        engine.refresh("v")
    assert "price" in _stale(engine)
    assert tables.execute("SELECT count(*) FROM v").fetchone()[0] > 0  # still there, still stale


def test_drop_view_after_a_rename_removes_capture(engine, tables):
    engine.register_view("v", SQL)
    tables.execute("ALTER TABLE parts RENAME TO parts_old")
    engine.drop_view("v")
    assert tables.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'idivm_capture_%'").fetchone()[0] == 0
    tables.execute("INSERT INTO parts_old VALUES (500, 1, 1, 'z')")  # writes work without idivm


def test_status_warns_when_schema_changes_go_unnoticed(engine, tables, fresh_db):
    engine.register_view("v", SQL)
    assert engine.watches_schema_changes()
    tables.execute("DROP EVENT TRIGGER idivm_on_alter")  # as after an init without superuser rights
    assert not engine.watches_schema_changes()
    res = run_cli("--dsn", fresh_db, "status")
    assert res.returncode == 0 and "schema changes of base tables are not detected" in res.stdout
    engine.init()  # reinstalls them
    assert engine.watches_schema_changes()
