"""The paper's running example (Figure 1): script shape and behaviour."""
from __future__ import annotations

import pytest

from helpers import assert_equal_multiset

V = ("SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
     "WHERE category = 'phone'")


def setup(db):
    db.execute("CREATE TABLE devices (did text PRIMARY KEY, category text)")
    db.execute("CREATE TABLE parts (pid text PRIMARY KEY, price numeric)")
    db.execute("CREATE TABLE devices_parts (did text, pid text, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices VALUES ('D1', 'phone'), ('D2', 'phone'), ('D3', 'tablet')")
    db.execute("INSERT INTO parts VALUES ('P1', 10), ('P2', 20), ('P3', 30)")
    db.execute("INSERT INTO devices_parts VALUES ('D1', 'P1'), ('D2', 'P1'), ('D1', 'P2'), ('D3', 'P3')")


def test_price_update_reaches_the_view_without_joining_base_tables(engine, db):
    """Example 1.2: Δu_parts on the non-conditional price becomes one UPDATE over the i-diff alone."""
    setup(db)
    engine.register_view("v", V)
    text = engine.explain("v")
    statements = text.split("Δ-script (PostgreSQL):", 1)[1].split("-- [")[1:]
    blocks = [b for b in statements if "Δu_parts" in b and "non-conditional" in b]
    assert len(blocks) == 1
    sql = blocks[0].split("\n", 1)[1]
    assert sql.lstrip().startswith("UPDATE")
    for base in ('"public"."parts"', '"public"."devices"', '"public"."devices_parts"'):
        assert base not in sql
    assert "idivm_delta_" in sql
    # the schemas of Section 5: one conditional (category) and one non-conditional (price) update schema
    assert "Δu_devices(did; category_pre; category_post)  [conditional" in text
    assert "Δu_parts(pid; price_pre; price_post)  [non-conditional" in text
    db.execute("UPDATE parts SET price = 11 WHERE pid = 'P1'")
    report = engine.maintain("v")
    assert report.changes == 1
    assert sorted(db.execute("SELECT did, pid, price FROM v").fetchall()) == [
        ("D1", "P1", 11), ("D1", "P2", 20), ("D2", "P1", 11)]


def test_several_changes_to_one_row_fold_into_one_effective_diff(engine, db):
    setup(db)
    engine.register_view("v", V)
    db.execute("UPDATE parts SET price = 12 WHERE pid = 'P1'")
    db.execute("UPDATE parts SET price = 13 WHERE pid = 'P1'")
    db.execute("DELETE FROM parts WHERE pid = 'P2'")
    db.execute("INSERT INTO parts VALUES ('P2', 21)")
    db.execute("INSERT INTO parts VALUES ('P9', 1)")
    db.execute("DELETE FROM parts WHERE pid = 'P9'")  # inserted and deleted in one window: no diff
    db.execute("UPDATE devices SET category = 'tablet' WHERE did = 'D1'")
    db.execute("UPDATE devices SET category = 'phone' WHERE did = 'D1'")  # undone: no diff
    report = engine.maintain("v")
    assert report.per_table == {"public.devices": 0, "public.parts": 2, "public.devices_parts": 0}
    assert_equal_multiset(db, "v", V, ["did", "pid", "price"])


def test_key_update_and_truncate(engine, db):
    setup(db)
    engine.register_view("v", V)
    engine.register_view("vt", V, strategy="tuple")
    db.execute("UPDATE parts SET pid = 'P7' WHERE pid = 'P2'")
    db.execute("UPDATE devices_parts SET pid = 'P7' WHERE pid = 'P2'")
    engine.maintain()
    for v in ("v", "vt"):
        assert_equal_multiset(db, v, V, ["did", "pid", "price"])
    db.execute("TRUNCATE devices_parts")
    engine.maintain()
    for v in ("v", "vt"):
        assert db.execute(f"SELECT count(*) FROM {v}").fetchone()[0] == 0
    assert all(r["pending"] == 0 for r in engine.list())


def test_two_views_share_one_log_and_drop_keeps_what_others_need(engine, db):
    setup(db)
    engine.register_view("v1", V)
    engine.register_view("v2", "SELECT pid, price FROM parts WHERE price > 15")
    assert db.execute("SELECT count(*) FROM idivm.captured_tables").fetchone()[0] == 3
    parts_log = db.execute(
        "SELECT log_table FROM idivm.captured_tables WHERE table_name = 'parts'").fetchone()[0]
    devices_log = db.execute(
        "SELECT log_table FROM idivm.captured_tables WHERE table_name = 'devices'").fetchone()[0]
    db.execute("UPDATE parts SET price = price + 10")
    db.execute("UPDATE devices SET category = 'tablet' WHERE did = 'D2'")
    engine.maintain("v1")
    # v2 reads parts and has not consumed the change: those log rows stay until it has
    assert db.execute(f"SELECT count(*) FROM {parts_log}").fetchone()[0] == 3
    assert db.execute(f"SELECT count(*) FROM {devices_log}").fetchone()[0] == 0  # only v1 reads devices
    engine.maintain("v2")
    assert db.execute(f"SELECT count(*) FROM {parts_log}").fetchone()[0] == 0
    assert_equal_multiset(db, "v2", "SELECT pid, price FROM parts WHERE price > 15", ["pid", "price"])
    engine.drop_view("v1")
    left = db.execute("SELECT schema_name, table_name FROM idivm.captured_tables").fetchall()
    assert left == [("public", "parts")]
    assert db.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'idivm%' AND tgrelid = 'parts'::regclass").fetchone()[0] == 4
    assert db.execute("SELECT to_regclass('public.v1')").fetchone()[0] is None
    engine.drop_view("v2")
    assert db.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'idivm%'").fetchone()[0] == 0


def test_sqlalchemy_select_is_accepted(engine, db):
    import sqlalchemy as sa

    setup(db)
    parts = sa.table("parts", sa.column("pid"), sa.column("price"))
    engine.register_view("cheap", sa.select(parts.c.pid, parts.c.price).where(parts.c.price < 25))
    db.execute("UPDATE parts SET price = 5 WHERE pid = 'P3'")
    assert engine.verify("cheap").ok
    assert sorted(db.execute("SELECT pid FROM cheap").fetchall()) == [("P1",), ("P2",), ("P3",)]


V_PRIME = ("SELECT did, sum(price) AS cost FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
           "WHERE category = 'phone' GROUP BY did")


@pytest.mark.parametrize("rule", ["sum", "general"])
def test_figure5_view_has_figure7_script_shape(engine, db, rule):
    """V' (Figure 5b): a price update updates the intermediate cache from the i-diff alone, then the
    view from the cache's changes; no base table is joined (Figure 7). SUM uses Table 9's rule (the
    signed cache changes are summed into the group's operator caches, in one MERGE); with MAX beside it, the
    general rule recomputes the affected groups from the cache."""
    setup(db)
    engine.register_view("v_prime", V_PRIME if rule == "sum" else V_PRIME.replace(" AS cost", " AS cost, max(price) AS top"))
    text = engine.explain("v_prime")
    assert "INTERMEDIATE CACHE" in text and "GROUP BY g0" in text
    statements = text.split("Δ-script (PostgreSQL):", 1)[1].split("-- [")[1:]
    price = [b for b in statements if "Δu_parts" in b and "non-conditional" in b]
    assert len(price) == 1
    assert 'UPDATE "idivm"."cache_' in price[0] and "RETURNING" in price[0]
    view = [b for b in statements if b.split("]", 1)[1].lstrip().startswith("aggregate")]
    # SUM: one MERGE of the per-group sums into the view; MAX: delete the groups, recompute them
    assert len(view) == (1 if rule == "sum" else 2)
    assert any("Tables 9, 11, 12" in b and "MERGE INTO" in b for b in view) == (rule == "sum")
    for block in price + view:
        for base in ('"public"."parts"', '"public"."devices"', '"public"."devices_parts"'):
            assert base not in block
    db.execute("UPDATE parts SET price = 11 WHERE pid = 'P1'")
    engine.maintain("v_prime")
    assert sorted(db.execute("SELECT did, cost FROM v_prime").fetchall()) == [("D1", 31), ("D2", 11)]
    # groups are created and deleted: D2 leaves (tablet), D3 arrives (phone)
    db.execute("UPDATE devices SET category = 'tablet' WHERE did = 'D2'")
    db.execute("UPDATE devices SET category = 'phone' WHERE did = 'D3'")
    engine.maintain("v_prime")
    assert_equal_multiset(db, "v_prime", V_PRIME, ["did", "cost"])
    assert sorted(db.execute("SELECT did FROM v_prime").fetchall()) == [("D1",), ("D3",)]


def test_global_aggregate_keeps_exactly_one_row(engine, db):
    setup(db)
    sql = "SELECT count(*) AS n, sum(price) AS s, min(price) AS lo, avg(price) AS a FROM parts"
    engine.register_view("totals", sql)
    db.execute("DELETE FROM parts WHERE price = 10")  # the minimum goes away
    engine.maintain("totals")
    assert db.execute("SELECT n, s, lo FROM totals").fetchall() == [(2, 50, 20)]
    db.execute("DELETE FROM devices_parts")
    db.execute("DELETE FROM parts")
    engine.maintain("totals")
    assert db.execute("SELECT n, s, lo, a FROM totals").fetchall() == [(0, None, None, None)]
    db.execute("INSERT INTO parts VALUES ('P9', 5)")
    engine.maintain("totals")
    assert_equal_multiset(db, "totals", sql, ["n", "s", "lo", "a"])


def test_ctes_are_inlined_including_one_used_twice(engine, db):
    setup(db)
    sql = ("WITH phones AS (SELECT did FROM devices WHERE category = 'phone'), "
           "links AS (SELECT dp.did, dp.pid FROM devices_parts dp WHERE dp.pid <> 'P0') "
           "SELECT l1.did, l2.did AS other, p.price FROM links l1 JOIN links l2 ON l1.pid = l2.pid "
           "JOIN parts p ON p.pid = l1.pid JOIN phones ph ON ph.did = l1.did")
    for strategy in ("id", "tuple"):
        engine.register_view(f"shared_{strategy}", sql, strategy=strategy)
    db.execute("UPDATE devices SET category = 'phone' WHERE did = 'D3'")
    db.execute("INSERT INTO devices_parts VALUES ('D3', 'P1')")
    db.execute("UPDATE parts SET price = 1 WHERE pid = 'P1'")
    engine.maintain()
    for strategy in ("id", "tuple"):
        assert_equal_multiset(db, f"shared_{strategy}", sql, ["did", "other", "price"])


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_joined_subquery_that_itself_joins_is_merged(engine, db, strategy):
    """sqlglot does not merge it on the right of a join; moved to the front of FROM, it merges."""
    setup(db)
    sql = ("SELECT x.did, p.price FROM parts p JOIN (SELECT dp.did, dp.pid FROM devices_parts dp "
           "JOIN devices d ON d.did = dp.did WHERE d.category = 'phone') x ON x.pid = p.pid")
    engine.register_view("nested", sql, strategy=strategy)
    plan = engine.explain("nested").split("base-table i-diff schemas")[0]
    assert plan.count("SCAN ") == 3  # one plan over the three tables
    db.execute("UPDATE parts SET price = 1 WHERE pid = 'P1'")
    db.execute("UPDATE devices SET category = 'phone' WHERE did = 'D3'")
    engine.maintain("nested")
    assert_equal_multiset(db, "nested", sql, ["did", "price"])


def test_many_to_many_join_skips_the_cache(engine, db):
    """Footnote 6: over a many-to-many join the general rule re-aggregates the affected groups from
    the base tables; no cache is created."""
    setup(db)
    sql = ("SELECT d.category, max(p.price) AS top FROM devices d JOIN parts p ON p.price > 15 "
           "JOIN devices_parts dp ON dp.did = d.did GROUP BY d.category")
    engine.register_view("m2m", sql)
    text = engine.explain("m2m")
    assert "NO INTERMEDIATE CACHE (footnote 6" in text and "from the base tables" in text
    assert db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'idivm' AND tablename LIKE 'cache_%'"
                      ).fetchone()[0] == 0
    db.execute("UPDATE parts SET price = 99 WHERE pid = 'P1'")
    db.execute("DELETE FROM devices_parts WHERE did = 'D2'")
    db.execute("UPDATE devices SET category = 'tablet' WHERE did = 'D1'")
    engine.maintain("m2m")
    assert_equal_multiset(db, "m2m", sql, ["category", "top"])
