"""The Spark engine (engines/spark/): the same views maintained with their diffs computed on Spark
equal their queries and the views PostgreSQL maintains, after random write streams; reads happen
inside the maintenance snapshot; what Spark cannot compute exactly is refused by name.

Needs pyspark, Java and the PostgreSQL JDBC jar (the README's test command installs them); the
module is skipped, saying which is missing, where they are not. Every test uses the default
settings (local[*]: both cores of the CI machine), so the process starts one Spark session."""
from __future__ import annotations

import random
from decimal import Decimal

import pytest

from idivm.engines.spark.settings import SparkSettings
from idivm.errors import IdivmError

from helpers import assert_equal_multiset

try:
    SparkSettings.from_env("postgresql://localhost/x").check()
except IdivmError as missing:
    pytest.skip(str(missing), allow_module_level=True)

VIEWS = {
    "spj": ("SELECT d.did, p.pid, p.price, d.category FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
            "JOIN devices d ON d.did = dp.did WHERE d.category <> 'watch'", ["did", "pid", "price", "category"]),
    "grouped": ("SELECT dp.did, sum(p.price) AS cost, count(*) AS n FROM devices_parts dp JOIN parts p "
                "ON p.pid = dp.pid GROUP BY dp.did", ["did", "cost", "n"]),
    "filtered": ("SELECT pid, price FROM parts WHERE price > 3 AND pid % 2 = 0", ["pid", "price"]),
}


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric(8,2))")
    db.execute("CREATE TABLE devices_parts (did int, pid int, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices SELECT g, (ARRAY['phone','tablet','watch'])[1 + g % 3] FROM generate_series(1, 20) g")
    db.execute("INSERT INTO parts SELECT g, g * 1.25 FROM generate_series(1, 30) g")
    db.execute("INSERT INTO devices_parts SELECT 1 + g % 20, 1 + (g * 7) % 30 FROM generate_series(1, 60) g "
               "ON CONFLICT DO NOTHING")
    return db


def _writes(db, rng: random.Random) -> None:
    with db.transaction():
        for _ in range(rng.randint(1, 8)):
            op = rng.randrange(5)
            if op == 0:
                db.execute("INSERT INTO parts VALUES (%s, %s) ON CONFLICT (pid) DO UPDATE SET price = excluded.price",
                           (rng.randint(1, 40), rng.choice([None, Decimal(rng.randint(0, 999)) / 100])))
            elif op == 1:
                db.execute("DELETE FROM devices_parts WHERE did = %s", (rng.randint(1, 22),))
            elif op == 2:
                db.execute("INSERT INTO devices_parts VALUES (%s, %s) ON CONFLICT DO NOTHING",
                           (rng.randint(1, 22), rng.randint(1, 40)))
            elif op == 3:
                db.execute("UPDATE devices SET category = %s WHERE did = %s",
                           (rng.choice(["phone", "watch", None]), rng.randint(1, 22)))
            else:
                db.execute("INSERT INTO devices VALUES (%s, 'phone') ON CONFLICT DO NOTHING", (rng.randint(1, 22),))


def test_views_maintained_on_spark_equal_their_queries_and_postgres(engine, shop):
    for name, (sql, _) in VIEWS.items():
        engine.register_view(f"{name}_spark", sql)
        engine.register_view(f"{name}_pg", sql)
    rng = random.Random(11)
    offloaded = 0
    for _ in range(6):
        _writes(shop, rng)
        for report in engine.maintain(*[f"{n}_spark" for n in VIEWS], engine="spark"):
            assert report.engine == "spark" and not report.failed, report
            offloaded += report.offloaded
        engine.maintain(*[f"{n}_pg" for n in VIEWS])
        for name, (sql, cols) in VIEWS.items():
            assert_equal_multiset(shop, f"{name}_spark", sql, cols)
            assert_equal_multiset(shop, f"{name}_pg", sql, cols)
    assert offloaded > 0  # Spark did compute diffs: this is not the PostgreSQL engine under another name
    text = engine.explain("spj_spark")
    assert "under --engine spark (docs/spark.md), Spark computes:" in text and "computed on Spark" in text
    assert "FROM idivm_delta_" in text or "JOIN idivm_delta_" in text  # Spark SQL reads the batch from its temp view


def test_spark_reads_only_the_maintenance_snapshot(engine, shop, monkeypatch):
    """A writer that commits after the maintenance transaction exported its snapshot, while Spark
    has not read yet, is not seen by that maintenance, and is applied by the next."""
    import psycopg

    from idivm.engines.spark import executor

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid <= 10")
    before = shop.execute(f"SELECT count(*), sum(price) FROM ({sql}) q").fetchone()
    exported = executor.export

    def export_then_write(cursor):
        snapshot = exported(cursor)
        with psycopg.connect(engine.dsn, autocommit=True) as other:
            other.execute("UPDATE parts SET price = price + 100")
            other.execute("INSERT INTO devices_parts SELECT did, 30 FROM devices ON CONFLICT DO NOTHING")
        return snapshot

    monkeypatch.setattr(executor, "export", export_then_write)
    report = engine.maintain("v", engine="spark")
    assert report.offloaded > 0
    assert shop.execute("SELECT count(*), sum(price) FROM v").fetchone() == before
    monkeypatch.setattr(executor, "export", exported)
    engine.maintain("v", engine="spark")
    assert_equal_multiset(shop, "v", sql, cols)


def test_a_read_outside_the_snapshot_is_refused(engine, shop):
    import psycopg

    from idivm.engines.spark.reads import Snapshot, export, read
    from idivm.engines.spark.session import spark_session

    settings = SparkSettings.from_env(engine.dsn)
    spark = spark_session(settings)
    with psycopg.connect(engine.dsn) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        real = export(conn.cursor())
        read(spark, settings, "SELECT pid FROM parts", real, "ok_read")
        assert spark.sql("SELECT count(*) FROM ok_read").collect()[0][0] == 30
        read(spark, settings, "SELECT pid FROM parts", Snapshot(real.exported, "1:1:"), "bad_read")
        with pytest.raises(Exception, match="outside the maintenance transaction's snapshot"):
            spark.sql("SELECT count(*) FROM bad_read").collect()


def test_what_spark_cannot_compute_exactly_is_refused_and_nothing_is_lost(engine, shop):
    shop.execute("CREATE TABLE loose (k int PRIMARY KEY, x numeric)")
    shop.execute("INSERT INTO loose VALUES (1, 1.5)")
    engine.register_view("halves", "SELECT k, x FROM loose JOIN parts ON parts.pid = loose.k")
    engine.register_view("ratios", "SELECT pid, pid / 3 AS third FROM parts")
    shop.execute("INSERT INTO loose VALUES (2, 2.123456789012345678901)")
    shop.execute("UPDATE parts SET price = 1 WHERE pid = 2")
    for view, construct in (("halves", "public.loose.x of type numeric"), ("ratios", '"d"."post__pid" / 3')):
        with pytest.raises(IdivmError, match=construct) as failure:
            engine.maintain(view, engine="spark")
        assert "--engine postgres" in str(failure.value) and "\n" not in str(failure.value)
    engine.maintain("halves", "ratios")  # the PostgreSQL engine consumes the same changes
    assert_equal_multiset(shop, "halves", "SELECT k, x FROM loose JOIN parts ON parts.pid = loose.k", ["k", "x"])
    assert_equal_multiset(shop, "ratios", "SELECT pid, pid / 3 AS third FROM parts", ["pid", "third"])


def test_missing_pieces_are_named_with_how_to_install_them():
    with pytest.raises(IdivmError, match="libpostgresql-jdbc-java"):
        SparkSettings(jar="/nonexistent/postgresql.jar").check()
    assert SparkSettings.from_env("postgresql://u:p%40ss@db.example:6543/shop").jdbc_url == \
        "jdbc:postgresql://db.example:6543/shop?user=u&password=p%40ss"


def test_columns_a_view_does_not_read_are_neither_read_nor_checked(engine, shop):
    shop.execute("CREATE TABLE notes (k int PRIMARY KEY, body jsonb, n int)")
    sql = "SELECT notes.k, notes.n, parts.price FROM notes JOIN parts ON parts.pid = notes.k"
    engine.register_view("noted", sql)
    shop.execute("""INSERT INTO notes VALUES (1, '{"a": 1}', 5), (2, NULL, 6)""")
    report = engine.maintain("noted", engine="spark")
    assert report.offloaded > 0
    assert_equal_multiset(shop, "noted", sql, ["k", "n", "price"])


def test_small_batches_read_only_the_base_rows_they_can_join(engine, shop, monkeypatch):
    """A base table joined to the batch by an equality is read only at the batch's values (pushed
    to PostgreSQL), and the view is still exact."""
    from idivm.engines.spark import executor

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    queries = []
    real_read = executor.read

    def recording_read(spark, settings, query, snapshot, name):
        queries.append(query)
        return real_read(spark, settings, query, snapshot, name)

    monkeypatch.setattr(executor, "read", recording_read)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid IN (3, 4)")
    shop.execute("INSERT INTO devices_parts VALUES (1, 29) ON CONFLICT DO NOTHING")
    assert engine.maintain("v", engine="spark").offloaded > 0
    assert any("= ANY(" in q for q in queries), queries
    assert_equal_multiset(shop, "v", sql, cols)


def test_a_column_named_like_a_program_alias_keeps_its_meaning(engine, shop):
    """Spark reads `d.x` as field x of a column d when one is in scope; the program's aliases are
    renamed so that a base table's column d cannot capture the batch's alias d."""
    shop.execute("CREATE TABLE a (k int PRIMARY KEY, x int)")
    shop.execute("CREATE TABLE b (k int PRIMARY KEY, d int)")
    shop.execute("INSERT INTO b SELECT g, g % 3 FROM generate_series(1, 9) g")
    sql = "SELECT a.k, a.x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.x AND b.d = 1)"
    engine.register_view("captured", sql)
    shop.execute("INSERT INTO a SELECT g, g FROM generate_series(1, 9) g")
    assert engine.maintain("captured", engine="spark").offloaded > 0
    assert_equal_multiset(shop, "captured", sql, ["k", "x"])
