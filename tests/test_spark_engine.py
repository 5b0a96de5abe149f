"""The Spark engine (engines/spark/): the same views maintained with their diffs computed on Spark
equal their queries and the views PostgreSQL maintains, after random write streams; reads happen
inside the maintenance snapshot; what Spark cannot compute exactly is refused by name.

Needs pyspark, Java and the PostgreSQL JDBC jar (the README's test command installs them); the
module is skipped, saying which is missing, where they are not. Every test uses the default
settings (local[*]: both cores of the CI machine), so the process starts one Spark session."""
from __future__ import annotations

import os
import datetime
import random
import sys
import re
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

import idivm
from idivm import demo
from idivm.engines.spark.settings import SparkSettings
from idivm.errors import IdivmError

from helpers import CODEGEN_OFF, JVM_JIT, assert_equal_multiset, spark_missing, throwaway_cluster



@pytest.fixture(autouse=True, scope="module")
def _spark_reaches_the_test_server(server_dsn):
    """Every test here needs Spark, and Spark must reach the server the tests use (over TCP: a
    throwaway cluster listens on 127.0.0.1 as well, embedded.py); else they skip, saying why."""
    missing = spark_missing(server_dsn)
    if missing:
        pytest.skip(missing)

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


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["id", "tuple", "higher-order"])
def test_views_maintained_on_spark_equal_their_queries_and_postgres(engine, shop, strategy, monkeypatch):
    # as users run Spark: with its code generation, which the other tests turn off (conftest.py)
    monkeypatch.setenv("IDIVM_SPARK_CONF", " ".join(os.environ["IDIVM_SPARK_CONF"].replace(CODEGEN_OFF, "").split()))
    for name, (sql, _) in VIEWS.items():
        engine.register_view(f"{name}_spark", sql, strategy=strategy)
        engine.register_view(f"{name}_pg", sql, strategy=strategy)
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
    assert "run as one Spark plan" in text
    assert "FROM idivm_delta_" in text or "JOIN idivm_delta_" in text  # Spark SQL reads the batch from its temp view
    if strategy == "tuple":  # the pre-state deletes' joins of the batch with base tables too
        assert "the rows it matches computed on Spark" in text


REWRITE_VIEWS = dict(VIEWS, **{
    "semi": ("SELECT d.did, d.category FROM devices d WHERE EXISTS (SELECT 1 FROM devices_parts dp "
             "WHERE dp.did = d.did AND dp.pid > 5)", ["did", "category"]),
    "top": ("SELECT d.category, max(p.price) AS m FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
            "JOIN devices d ON d.did = dp.did GROUP BY d.category", ["category", "m"]),
    "kinds": ("SELECT DISTINCT d.category, dp.pid FROM devices_parts dp JOIN devices d ON d.did = dp.did",
              ["category", "pid"]),
})


@pytest.mark.parametrize("strategy", ["id", "tuple", "higher-order"])
def test_steps_rewritten_to_read_staged_rows_keep_their_meaning(engine, shop, monkeypatch, strategy):
    """What the Spark engine does to a step (program/offload.py: its query computed apart,
    the view's compiled function running the step's staged form, which reads those rows), with the
    query computed by PostgreSQL in the same transaction instead of Spark: the staged forms alone,
    over more views and rounds than Spark's seconds per maintenance allow, equal recomputation."""
    from idivm.engines.postgres.render import delta_names, sql as pg_sql
    from idivm.engines.postgres.server_maintenance import view_delta
    from idivm.engines.spark import executor
    from idivm.program.offload import staged_name
    from idivm.sqltext import qualified, run

    rewritten = {"source": 0, "matching": 0}

    def in_postgres(conn, view_id, work, texts, index, inputs, settings):
        for o in work:
            rewritten["source" if o.query is getattr(o.step, "source", None) else "matching"] += 1
            with delta_names(lambda cid: view_delta(view_id, cid)):
                query = pg_sql(o.query)
            run(conn, f"CREATE TEMP TABLE {qualified('pg_temp', staged_name(index[id(o)]))} ON COMMIT DROP AS {query}")
        return [index[id(o)] for o in work], {}

    monkeypatch.setattr(executor, "_compute", in_postgres)
    for name, (sql, _) in REWRITE_VIEWS.items():
        engine.register_view(name, sql, strategy=strategy)
    rng = random.Random(5)
    for _ in range(12):
        _writes(shop, rng)
        for report in engine.maintain(*REWRITE_VIEWS, engine="spark"):
            assert not report.failed, report
        for name, (sql, cols) in REWRITE_VIEWS.items():
            assert_equal_multiset(shop, name, sql, cols)
    assert rewritten["source"] > 0
    if strategy != "higher-order":  # tuple's pre-state deletes; both strategies' semijoin re-check
        assert rewritten["matching"] > 0, rewritten


def test_spark_reads_only_the_maintenance_snapshot(engine, shop, monkeypatch):
    """A writer that commits after the maintenance transaction exported its snapshot, while Spark
    has not read yet, is not seen by that maintenance, and is applied by the next."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    import psycopg

    from idivm.engines.spark import executor

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid <= 10")
    shop.execute("INSERT INTO parts VALUES (31, 2.5)")  # new rows to join: Spark reads
    shop.execute("INSERT INTO devices_parts VALUES (1, 31), (3, 31)")
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


def test_concurrent_maintenances_in_one_process_read_their_own_inputs(engine, shop, monkeypatch):
    """Two views over the same tables, maintained on Spark at once from two threads of one process,
    with different windows of the same table (a is one change ahead of b): each plan reads its own
    batch and base rows, not those the other maintenance handed Spark meanwhile. b is held just
    before Spark plans its queries until a has handed Spark its inputs (under the same names, when
    both shared one Spark session's temp views)."""
    import threading

    from idivm.engines.spark import executor

    sql, cols = VIEWS["spj"]
    engine.register_view("a", sql)
    engine.register_view("b", sql)
    shop.execute("INSERT INTO devices_parts VALUES (1, 2), (4, 5) ON CONFLICT DO NOTHING")  # x: b's alone
    engine.maintain("a")
    shop.execute("INSERT INTO devices_parts VALUES (7, 8), (10, 11) ON CONFLICT DO NOTHING")  # y: both windows
    a_ready, b_held = threading.Event(), threading.Event()
    compute, merged = executor._compute, executor.merged_sql

    def a_after_b(*args, **kwargs):  # a hands Spark its inputs only once b has handed its own
        if threading.current_thread().name == "maintain-a":
            assert b_held.wait(120), "b never reached its plan"
        return compute(*args, **kwargs)

    def b_held_until_a(texts, widths):  # b plans its queries only after a handed Spark its inputs
        if threading.current_thread().name == "maintain-b":
            b_held.set()
            assert a_ready.wait(120), "a never reached its plan"
        else:
            a_ready.set()
        return merged(texts, widths)

    monkeypatch.setattr(executor, "_compute", a_after_b)
    monkeypatch.setattr(executor, "merged_sql", b_held_until_a)
    reports, errors = {}, []

    def run(name):
        try:
            reports[name] = engine.maintain(name, engine="spark")
        except BaseException as e:  # surfaced below
            errors.append(e)
            a_ready.set()
            b_held.set()

    threads = [threading.Thread(target=run, args=(n,), name=f"maintain-{n}") for n in ("b", "a")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert all(r.offloaded > 0 and not r.failed for r in reports.values()), reports
    for name in ("a", "b"):
        assert_equal_multiset(shop, name, sql, cols)


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


def test_the_driver_plans_deep_trees_on_a_large_thread_stack(engine):
    """A maintenance's merged plan of a set-operation view overflowed the JVM's default 1 MB thread
    stack (StackOverflowError in SparkPlan.prepare): the driver runs with -Xss16m, and options the
    user gives in spark.driver.extraJavaOptions still apply, after it."""
    from idivm.engines.spark.session import spark_session

    spark = spark_session(SparkSettings.from_env(engine.dsn))
    arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-Xss16m" in arguments
    assert arguments.index("-Xss16m") < arguments.index(JVM_JIT.split()[0])  # the test suite's own options


def test_arrow_copies_every_value_as_the_row_by_row_copy_does(engine, db):
    """Results come back as Arrow batches written as CSV (staging.copy_result); each value must reach
    PostgreSQL as psycopg's row-by-row copy gives it: empty strings, quotes, newlines, a lone `\\.`
    (CSV's end of data), floats' signs, infinities and NaN, decimals' scales and exponents, zoned and
    plain timestamps, NULL of every type; also a merged plan's rows, split between tables."""
    from idivm.engines.spark.session import spark_session
    from idivm.engines.spark.staging import copy_result, copy_split, merged_sql, result_rows, split_rows

    spark = spark_session(SparkSettings.from_env(engine.dsn))
    values = ("SELECT * FROM VALUES "
              "(1, 'a', 0.1D, CAST('0.0000001' AS DECIMAL(38,18)), CAST(1.5 AS DECIMAL(10,2)), true, DATE'2024-02-29', "
              "TIMESTAMP_NTZ'2024-01-01 00:00:00.000001', TIMESTAMP'2024-06-01 12:00:00', NULL), "
              "(2, '', -0.0D, CAST('-12345678901234567890.123456789012345678' AS DECIMAL(38,18)), NULL, false, NULL, "
              "NULL, NULL, NULL), "
              "(3, 'x\"y\nz,w', CAST('NaN' AS DOUBLE), CAST(0 AS DECIMAL(38,18)), CAST(-0.01 AS DECIMAL(10,2)), NULL, "
              "DATE'0001-01-01', TIMESTAMP_NTZ'9999-12-31 23:59:59.999999', TIMESTAMP'1970-01-01 00:00:00', NULL), "
              "(4, '\\\\.', CAST('-Infinity' AS DOUBLE), CAST('1000' AS DECIMAL(38,18)), NULL, NULL, NULL, NULL, NULL, NULL), "
              "(5, NULL, 1e300D, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (6, 'é ☃', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) "
              "AS t(i, s, f, d, m, b, dt, ts, tz, n)")
    columns = ("i bigint, s text, f double precision, d numeric, m numeric(10,2), b boolean, dt date, ts timestamp, "
               "tz timestamptz, n integer")
    db.execute("SET TIME ZONE 'UTC'")
    db.execute("CREATE TYPE mood AS ENUM ('sad', 'ok')")
    for name in ("by_arrow", "by_rows", "split_a", "split_b", "rows_a", "rows_b", "by_executors", "executors_a",
                 "executors_b"):
        db.execute(f"CREATE TABLE {name} ({columns if not name.endswith('_b') else 'i bigint, s text'})")
    db.execute("ALTER TABLE executors_b ALTER COLUMN s TYPE mood USING CAST(s AS mood)")  # a type outside pg_catalog
    df = spark.sql(values).repartition(3)
    conninfo = SparkSettings.from_env(engine.dsn).executor_conninfo()
    merged = merged_sql([values, "SELECT i * 10 AS i, s FROM VALUES (1, 'ok'), (2, NULL) AS u(i, s)"], [10, 2])
    with db.cursor() as cur:
        assert copy_result(cur, ["by_arrow"], df) == [6]
        copy_split(cur, ["by_rows"], ((0, r) for r in result_rows(df)))
        assert copy_result(cur, ["split_a", "split_b"], spark.sql(merged), [10, 2]) == [6, 2]
        copy_split(cur, ["rows_a", "rows_b"], split_rows(result_rows(spark.sql(merged)), [10, 2]))
        # the executors write their partitions themselves (partition_writer.py), in tables this
        # transaction reads although they commit after its snapshot, and drops
        db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        db.execute("SELECT 1")
        assert copy_result(cur, ["by_executors"], df, conninfo=conninfo) == [6]
        assert copy_result(cur, ["executors_a", "executors_b"], spark.sql(merged).repartition(4), [10, 2],
                           conninfo=conninfo) == [6, 2]
        assert db.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'spark\\_part\\_%'").fetchone() == (0,)
        db.execute("COMMIT")
    as_text = "SELECT i, s, CAST(f AS text), CAST(d AS text), CAST(m AS text), b, dt, ts, tz, n FROM {} ORDER BY i"
    expected = db.execute(as_text.format("by_rows")).fetchall()
    assert [r[1] for r in expected] == ["a", "", 'x"y\nz,w', "\\.", None, "é ☃"]
    assert [r[2] for r in expected[:5]] == ["0.1", "-0", "NaN", "-Infinity", "1e+300"]
    assert [r[3] for r in expected[:4]] == ["0.000000100000000000", "-12345678901234567890.123456789012345678",
                                            "0.000000000000000000", "1000.000000000000000000"]
    for table in ("by_arrow", "split_a", "rows_a", "by_executors", "executors_a"):
        assert db.execute(as_text.format(table)).fetchall() == expected, table
    assert db.execute("SELECT * FROM split_b ORDER BY i").fetchall() == \
        db.execute("SELECT * FROM rows_b ORDER BY i").fetchall() == \
        db.execute("SELECT i, CAST(s AS text) FROM executors_b ORDER BY i").fetchall() == [(10, "ok"), (20, None)]


def test_what_spark_cannot_compute_exactly_is_refused_and_nothing_is_lost(engine, shop):
    """A value Spark cannot compare exactly (an unconstrained numeric with more decimals than its
    decimal(38,18) holds) fails the maintenance with one line naming the column and the value; an
    expression Spark computes differently (a numeric `/` compared) is refused by name. Nothing is applied and
    the PostgreSQL engine then consumes the same changes."""
    shop.execute("CREATE TABLE loose (k int PRIMARY KEY, x numeric)")
    shop.execute("INSERT INTO loose VALUES (1, 1.5)")
    engine.register_view("halves", "SELECT k, x FROM loose JOIN parts ON parts.pid = loose.k WHERE x > 1")
    engine.register_view("ratios", "SELECT pid, price FROM parts WHERE price / 3 > 1")
    shop.execute("INSERT INTO loose VALUES (2, 2.1234567890123456789012)")
    shop.execute("INSERT INTO parts VALUES (31, 1)")  # ratios reads price, so this is a change it must compute
    for view, construct in (("halves", "column x holds 2.1234567890123456789012"), ("ratios", '"d"."post__price" / 3 exactly')):
        with pytest.raises(IdivmError, match=construct) as failure:
            engine.maintain(view, engine="spark")
        assert "--engine postgres" in str(failure.value) and "\n" not in str(failure.value)
    engine.maintain("halves", "ratios")  # the PostgreSQL engine consumes the same changes
    assert_equal_multiset(shop, "halves", "SELECT k, x FROM loose JOIN parts ON parts.pid = loose.k WHERE x > 1",
                          ["k", "x"])
    assert_equal_multiset(shop, "ratios", "SELECT pid, price FROM parts WHERE price / 3 > 1", ["pid", "price"])


def test_values_of_other_types_travel_as_their_text(engine, shop):
    """Columns of types Spark has no exact counterpart for (unconstrained numeric, uuid, timestamps,
    intervals, jsonb, bytea, arrays) are read as PostgreSQL's text of each value and written back as
    that very value: passed on, tested for NULL, numerics compared (as decimal(38,18), 1.0 = 1.00,
    each value keeping its own scale in the view), uuids, timestamps and timestamps with time zone
    (with each other and with literals, those with time zone written with their offset) compared,
    on Spark, exactly; a computation on such a value is refused by name. Random rounds,
    every step on Spark."""
    shop.execute("CREATE TABLE loose (k int PRIMARY KEY, x numeric, u uuid, t timestamp, tz timestamptz, "
                 "iv interval, j jsonb, b bytea, a int[])")
    rng = random.Random(3)
    numbers = [None, Decimal("1.5"), Decimal("1.50"), Decimal("1.0"), Decimal("1"), Decimal("-0.5"), Decimal("0.000"),
               Decimal("12345678901234567890.123456789012345678"), Decimal("-2.25"), Decimal("100")]
    uuids = [None, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000001",
             "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12"]

    def row(k):
        return (k, rng.choice(numbers), rng.choice(uuids),
                rng.choice([None, "2026-01-02 03:04:05.123456", "1999-12-31 23:59:59", "0001-01-01 00:00:00"]),
                rng.choice([None, "2026-01-02 03:04:05.5+05:30", "2000-01-01 00:00:00+00", "1999-12-31 23:30:00-01",
                            "2000-01-01 01:00:00+01", "0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00"]),
                rng.choice([None, "1 day 02:00:00", "-3 mons", "00:00:00.000001"]),
                rng.choice([None, '{"a": [1, 2.50]}', "[]", '"x"']), rng.choice([None, b"\x00\xff", b""]),
                rng.choice([None, [1, None, 3], []]))

    carried = ("SELECT l.k, l.x, l.u, l.t, l.tz, l.iv, l.j, l.b, l.a FROM loose AS l "
               "JOIN devices AS d ON d.did = l.k WHERE l.x IS NOT NULL OR l.u IS NULL")
    _rounds_on_spark(engine, shop, rng, "loose", row, "carried", carried, ["k", "x", "u", "t", "tz", "iv", "j", "b", "a"])
    compared = ("SELECT k, x, u FROM loose WHERE x > 1.25 AND x <= 100 AND x <> -2.25 "
                "AND u <> 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'")
    _rounds_on_spark(engine, shop, rng, "loose", row, "compared", compared, ["k", "x", "u"])
    equal = "SELECT a.k, b.k AS k2, a.x, b.x AS x2 FROM loose AS a JOIN loose AS b ON a.x = b.x AND a.u = b.u"
    _rounds_on_spark(engine, shop, rng, "loose", row, "equal", equal, ["k", "k2", "x", "x2"])
    timed = ("SELECT a.k, b.k AS k2, a.t FROM loose AS a JOIN loose AS b ON a.t = b.t "
             "WHERE a.t > TIMESTAMP '2000-01-01' AND b.t <= '2026-01-02 03:04:05.123456'")
    _rounds_on_spark(engine, shop, rng, "loose", row, "timed", timed, ["k", "k2", "t"])
    _rounds_on_spark(engine, shop, rng, "loose", row, "zoned", "SELECT a.k, b.k AS k2, a.tz FROM loose AS a JOIN loose "
                     "AS b ON a.tz = b.tz WHERE a.tz > TIMESTAMPTZ '2000-01-01 00:00+00' AND b.tz <= "
                     "'2026-01-01 21:34:05.5Z'", ["k", "k2", "tz"])
    for view, construct in (("doubled", "SELECT k, x * 2 AS y FROM loose"),
                            ("unzoned", "SELECT k FROM loose WHERE tz > '2000-01-01'")):
        engine.register_view(view, construct)
        shop.execute("UPDATE loose SET k = k + 100 WHERE k = (SELECT min(k) FROM loose)")
        with pytest.raises(IdivmError, match="as its text, and cannot compute") as failure:
            engine.maintain(view, engine="spark")
        assert "\n" not in str(failure.value)


def test_like_and_casts_to_text_compute_on_spark_as_in_postgres(engine, shop):
    """LIKE (with `_`, `%`, an escaped `%`, newlines, NULLs), casts to text of the types both engines
    print alike (integers, text, booleans) and `||` of texts run on Spark and match PostgreSQL on
    random values; a cast of a type printed otherwise (a date) is refused by name."""
    shop.execute("CREATE TABLE notes (k int PRIMARY KEY, n bigint, s text, b boolean, d date)")
    rng = random.Random(5)
    texts = ["a_b", "a%b", "axb", "a\nb", "line\nab", "", None, "-12", "ab", "AB"]

    def row(k):
        return (k, rng.choice([None, 0, -12, 12, 120, -1, 2**62]), rng.choice(texts), rng.choice([True, False, None]),
                None)

    sql = ("SELECT k, s FROM notes WHERE CAST(n AS TEXT) LIKE '-1%' OR CAST(n AS TEXT) LIKE '_2' "
           "OR s LIKE 'a_b' OR s LIKE '%\\%%' OR s NOT LIKE '%b%' OR CAST(b AS TEXT) LIKE 't%' "
           "OR s LIKE '%a%b' OR s || '-' || CAST(n AS TEXT) LIKE 'a%-1%'")
    _rounds_on_spark(engine, shop, rng, "notes", row, "liked", sql, ["k", "s"])
    joined = ("SELECT t.k, t.s || '/' || CAST(t.n AS TEXT) AS sn, CAST(t.b AS TEXT) || d.category AS bs "
              "FROM notes AS t JOIN devices AS d ON d.did = t.k")
    _rounds_on_spark(engine, shop, rng, "notes", row, "joined_texts", joined, ["k", "sn", "bs"])
    engine.register_view("dated", "SELECT k FROM notes WHERE CAST(d AS TEXT) LIKE '2026%'")
    shop.execute("INSERT INTO notes VALUES (40, 1, 'x', true, DATE '2026-01-02')")
    with pytest.raises(IdivmError, match=r"CAST\(.*d.* AS TEXT\)") as failure:
        engine.maintain("dated", engine="spark")
    assert "--engine postgres" in str(failure.value)


def test_integer_division_computes_on_spark_as_in_postgres(engine, shop):
    """Integer / truncates toward zero in PostgreSQL and divides into a double in Spark: rendered as
    DIV cast back to the operands' type, it matches PostgreSQL on negatives, zero numerators, mixed
    widths, nested divisions and COALESCEs of integers (with a bare NULL, which takes their type)."""
    shop.execute("CREATE TABLE nums (k int PRIMARY KEY, a int NOT NULL, b bigint NOT NULL, c smallint NOT NULL)")
    rng = random.Random(11)

    def row(k):
        return (k, rng.choice([0, 7, -7, 1, -1, 2**31 - 1, -2**31 + 1]), rng.choice([5, -5, 2**62, -2**62, 3]),
                rng.choice([1, -1, 2, -3, 32767]))

    sql = ("SELECT k, a / c AS q1, b / c AS q2, (a / 2) / c AS q3, -a / 3 AS q4, c / c AS q5, "
           "COALESCE(NULL, a) / 2 AS q6, COALESCE(NULL, c, b) / c AS q7 FROM nums WHERE a / 2 <> 1")
    _rounds_on_spark(engine, shop, rng, "nums", row, "quotients", sql, ["k", "q1", "q2", "q3", "q4", "q5", "q6", "q7"])


def test_numeric_division_computes_on_spark_as_in_postgres(engine, shop):
    """numeric / numeric has a scale that depends on the two values (at least 16 significant digits,
    at least either operand's scale) in PostgreSQL, and is rounded half away from zero: as an output
    it is computed on Spark exactly so, from numeric(p,s) columns, unconstrained numerics (each value
    with its own scale, `1.50` beside `1.5`), integers, literals and products, on random values with
    negatives, zero numerators, NULLs and quotients of more than 38 digits (1E-18 / 2147483647 has 48
    decimals), in maintenance and in a fill. A UNION ALL branch's bare NULLs are typed by the view's
    columns. A zero divisor fails the maintenance in one line, as it fails the query."""
    shop.execute("CREATE TABLE fracs (k int PRIMARY KEY, a numeric(10,2), b numeric(6,3), x numeric, i int)")
    rng = random.Random(13)
    loose = [None, Decimal("1.5"), Decimal("1.50"), Decimal("-7"), Decimal("0.000000000000000001"),
             Decimal("123456789012345678901234567890.12345"), Decimal("9999"), Decimal("10000"), Decimal("-0.30")]

    def row(k):
        return (k, rng.choice([None, Decimal("0.00"), Decimal("1.00"), Decimal("-12.34"), Decimal("99999999.99"),
                               Decimal("0.01"), Decimal("3.33")]),
                rng.choice([None, Decimal("3.000"), Decimal("-0.001"), Decimal("999.999"), Decimal("7.250")]),
                rng.choice(loose), rng.choice([None, 1, -3, 7, 10000, 2**31 - 1]))

    sql = ("SELECT k, a / b AS q1, x / i AS q2, a / 3 AS q3, (a * b) / i AS q4, i / 2.5 AS q5, x / b AS q6, "
           "(a + 1.005) / -7 AS q7 FROM fracs WHERE k % 3 <> 1 UNION ALL SELECT k, b / a, i / x, NULL, NULL, NULL, "
           "NULL, NULL FROM fracs WHERE k % 3 = 1 AND a <> 0")
    _rounds_on_spark(engine, shop, rng, "fracs", row, "quotients", sql, ["k", "q1", "q2", "q3", "q4", "q5", "q6", "q7"])
    filled = "SELECT k, a / b AS q, x / i AS r FROM fracs"
    engine.register_view("filled", filled, engine="spark")  # the fill computed on Spark
    assert_equal_multiset(shop, "filled", filled, ["k", "q", "r"])
    engine.register_view("by_zero", "SELECT k, a / i AS q FROM fracs")
    shop.execute("INSERT INTO fracs VALUES (99, 1.00, 1.000, 1, 0)")
    with pytest.raises(IdivmError, match="division by zero") as failure:
        engine.maintain("by_zero", engine="spark")
    assert "\n" not in str(failure.value)


def test_substring_and_date_fields_compute_on_spark_as_in_postgres(engine, shop):
    """substring(s FROM a FOR n) counts from position a as PostgreSQL does (a of 0 or below counts
    positions before the text; Spark's own SUBSTRING counts those from the end), in characters
    (multibyte ones too); EXTRACT of a date's year, month, day, quarter, week, dow, isodow, doy and
    isoyear: both on Spark, equal to PostgreSQL on random values. A negative length fails the
    maintenance in one line, as PostgreSQL fails the query."""
    shop.execute("CREATE TABLE words (k int PRIMARY KEY, s text, a int, n int, d date)")
    rng = random.Random(7)
    texts = ["", "a", "hello", "héllo wörld", "日本語テキスト", None, "x\ny"]

    def row(k):
        return (k, rng.choice(texts), rng.choice([None, -3, -1, 0, 1, 2, 5, 40]), rng.choice([None, 0, 1, 2, 3, 10]),
                rng.choice([None, datetime.date(2026, 1, 1), datetime.date(2024, 2, 29), datetime.date(2020, 12, 31),
                            datetime.date(1, 1, 1), datetime.date(2027, 1, 3), datetime.date(1999, 12, 26)]))

    sql = ("SELECT k, substring(s FROM a FOR n) AS part, substring(s FROM a) AS tail, substr(s, 2, 3) AS mid, "
           "substring(s, 0, 2) AS head FROM words WHERE substring(s, a, 1) <> 'z' OR a IS NULL")
    _rounds_on_spark(engine, shop, rng, "words", row, "parts_of", sql, ["k", "part", "tail", "mid", "head"])
    fields = ["year", "month", "day", "quarter", "week", "dow", "isodow", "doy", "isoyear"]
    dated = ("SELECT k, " + ", ".join(f"extract({f} FROM d) AS {f}" for f in fields)
             + " FROM words WHERE extract(dow FROM d) <> 3 OR d IS NULL")
    _rounds_on_spark(engine, shop, rng, "words", row, "fields_of", dated, ["k", *fields])
    shop.execute("INSERT INTO words VALUES (99, 'abc', 1, -1, NULL)")
    with pytest.raises(IdivmError, match="negative substring length not allowed: -1") as failure:
        engine.maintain("parts_of", engine="spark")
    assert "\n" not in str(failure.value)


def test_lower_and_upper_compute_on_spark_as_in_postgres(engine, shop):
    """lower() and upper() of text and varchar columns on Spark, equal to PostgreSQL on random values
    (empty, mixed case, digits and punctuation, NULL): for every value where the view's text columns
    have the C collation; under the database's locale (here C.UTF-8, which maps letters beyond
    ASCII too) for ASCII text, any other value failing the maintenance in one line; under a
    collation of another locale they stay refused by name (Turkish lowers I to a dotless ı)."""
    shop.execute("CREATE TABLE names (k int PRIMARY KEY, s text, v varchar(12))")
    shop.execute("CREATE TABLE cnames (k int PRIMARY KEY, c text COLLATE \"C\")")
    rng = random.Random(9)
    ascii = [None, "", "Hello", "WORLD", "mIxEd 42!", "a_b-C"]
    sql = ("SELECT k, lower(s) AS ls, upper(s) AS us, lower(v) AS lv FROM names "
           "WHERE lower(s) <> 'world' OR upper(v) LIKE 'H%' OR s IS NULL")
    _rounds_on_spark(engine, shop, rng, "names", lambda k: (k, rng.choice(ascii), rng.choice(ascii)), "cased", sql,
                     ["k", "ls", "us", "lv"])
    c_sql = "SELECT k, upper(c) AS uc, lower(c) AS lc FROM cnames WHERE upper(c) <> 'WORLD' OR c IS NULL"
    _rounds_on_spark(engine, shop, rng, "cnames", lambda k: (k, rng.choice(ascii + ["ÀB", "ünïcödé Σ", "İstanbul"])),
                     "c_cased", c_sql, ["k", "uc", "lc"])
    shop.execute("INSERT INTO names VALUES (99, 'Ünïcode', 'x')")
    with pytest.raises(IdivmError, match="lower\\(\\) and upper\\(\\) of ASCII text only .* column s holds Ünïcode") as failure:
        engine.maintain("cased", engine="spark")
    assert "\n" not in str(failure.value)
    shop.execute("DELETE FROM names WHERE k = 99")
    engine.maintain("cased", engine="spark")
    assert_equal_multiset(shop, "cased", sql, ["k", "ls", "us", "lv"])
    shop.execute("CREATE TABLE turkish (k int PRIMARY KEY, s text COLLATE \"tr-x-icu\")")
    engine.register_view("dotted", "SELECT k, lower(s) AS l FROM turkish")
    assert "refused" in engine.explain("dotted").split("under --engine spark")[1]


def test_text_ordered_by_a_collation_is_not_ordered_on_spark(engine, shop):
    """Spark orders text by code point; PostgreSQL orders a column by its collation ('C' after 'b'
    under und-x-icu, before it under C). Ordering comparisons, MIN and MAX of such a column are
    refused by name on Spark, in maintenance and fills (for a view that reads such a column, any
    text's), and stay exact on PostgreSQL; equality is computed on Spark."""
    shop.execute('CREATE TABLE coll (k int PRIMARY KEY, u text COLLATE "und-x-icu", c text)')
    shop.execute("INSERT INTO coll VALUES (1, 'a', 'a'), (2, 'C', 'C'), (3, 'b', 'b')")
    ordered = "SELECT k FROM coll WHERE u < 'b'"
    engine.register_view("ordered", ordered)
    assert "orders text by its code points" in engine.explain("ordered").split("under --engine spark")[1]
    shop.execute("UPDATE coll SET u = 'B' WHERE k = 3")
    with pytest.raises(IdivmError, match="orders text by its code points") as refused:
        engine.maintain("ordered", engine="spark")
    assert "\n" not in str(refused.value)
    engine.maintain("ordered")
    assert_equal_multiset(shop, "ordered", ordered, ["k"])
    maxed = "SELECT max(u) AS m, min(u) AS l FROM coll WHERE u >= 'B' OR k > 0"
    try:  # filled on Spark where its steps take no order of u there, else refused in one line
        engine.register_view("maxed", maxed, engine="spark")
        assert_equal_multiset(shop, "maxed", maxed, ["m", "l"])
    except IdivmError as e:
        assert "orders text by its code points" in str(e) and "\n" not in str(e)
    same = "SELECT a.k, b.k AS k2, a.c FROM coll AS a JOIN coll AS b ON a.u = b.u WHERE a.c = 'A' OR a.k <> b.k"
    engine.register_view("same", same, engine="spark")
    assert "refused" not in engine.explain("same").split("under --engine spark")[1]
    shop.execute("UPDATE coll SET u = 'a', c = 'A' WHERE k = 2")
    assert engine.maintain("same", engine="spark").offloaded > 0
    assert_equal_multiset(shop, "same", same, ["k", "k2", "c"])


def test_character_compared_with_other_types_stays_in_postgres(engine, shop):
    """character(n) arrives in Spark padded to n; PostgreSQL ignores the padding when it compares it
    ('a' as char(4) equals 'a' as varchar). Compared with a string literal or a character(n) of the
    same n it is computed on Spark and exact; with a varchar it is refused by name (Spark found
    no pairs there)."""
    shop.execute("CREATE TABLE ch (k int PRIMARY KEY, c char(4), d char(4), v varchar(4))")
    shop.execute("INSERT INTO ch VALUES (1, 'a', 'a', 'a'), (2, 'ab', 'x', 'ab ')")
    alike = "SELECT a.k, b.k AS k2 FROM ch AS a JOIN ch AS b ON a.c = b.d WHERE a.c = 'a' OR b.d < 'ab'"
    engine.register_view("alike", alike, engine="spark")
    shop.execute("INSERT INTO ch VALUES (3, 'ab', 'a ', 'a'), (4, 'x', 'ab', NULL)")
    assert engine.maintain("alike", engine="spark").offloaded > 0
    assert_equal_multiset(shop, "alike", alike, ["k", "k2"])
    mixed = "SELECT a.k, b.k AS k2 FROM ch AS a JOIN ch AS b ON a.c = b.v"
    engine.register_view("mixed", mixed)
    assert "reads character(n) padded to n" in engine.explain("mixed").split("under --engine spark")[1]


def test_date_trunc_computes_on_spark_as_in_postgres(engine, shop):
    """date_trunc of a timestamp without time zone, to every unit both engines truncate alike (the
    week to its Monday, the quarter to its first month), on Spark, equal to PostgreSQL on random
    values around the ends of weeks, months and years, the first and last microseconds of the
    calendar and NULLs; grouped by, compared with another and with a literal."""
    shop.execute("CREATE TABLE stamps (k int PRIMARY KEY, t timestamp, u timestamp)")
    rng = random.Random(5)
    stamps = [None, "2024-02-29 23:59:59.999999", "2024-12-30 00:00:00", "2027-01-03 12:34:56.5", "0001-01-01 00:00:00",
              "9999-12-31 23:59:59.999999", "2026-03-31 00:00:00.000001", "1999-12-31 23:59:59", "2026-01-05 00:00:00"]

    def row(k):
        return (k, rng.choice(stamps), rng.choice(stamps))

    units = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year"]
    sql = ("SELECT k, " + ", ".join(f"date_trunc('{u}', t) AS {u}" for u in units)
           + " FROM stamps WHERE date_trunc('DAYS', t) <> date_trunc('day', u) OR date_trunc('month', t) >= '2026-01-01'")
    _rounds_on_spark(engine, shop, rng, "stamps", row, "truncated", sql, ["k", *units])
    grouped = "SELECT date_trunc('week', t) AS w, count(*) AS n FROM stamps GROUP BY date_trunc('week', t)"
    _rounds_on_spark(engine, shop, rng, "stamps", row, "weekly", grouped, ["w", "n"])


def test_the_readme_and_demo_views_maintain_on_spark(engine, db):
    """The README's example tables (prices as unconstrained numeric) and its view, filled on Spark
    and maintained on Spark after the demo's writes and price changes of every scale, equal their
    query after each round, each price as PostgreSQL shows it (10, 11.50, 30.0)."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    usage = re.search(r"<!-- usage-commands -->\n```sh\n(.*?)\n```", readme, re.S).group(1)
    db.execute(re.search(r"<<'SQL'[^\n]*\n(.*?)\nSQL\n", usage, re.S).group(1))
    sql = " ".join(re.search(r'register-view phone_parts --sql "(.*?)"', usage, re.S).group(1).split())
    engine.register_view("phone_parts", sql, engine="spark")
    db.execute("INSERT INTO devices VALUES ('D3', 'tablet'); INSERT INTO parts VALUES ('P3', 30); "
               "INSERT INTO devices_parts VALUES ('D3', 'P3')")
    demo_writes = [w.replace("idivm_demo.", "") for w, _ in demo.WRITES]
    rng, offloaded = random.Random(2), 0
    for round_ in range(4):
        with db.transaction():
            for write in demo_writes if round_ == 0 else []:
                db.execute(write)
            for pid in rng.sample(["P1", "P2", "P3", "P4"], 2):
                db.execute("UPDATE parts SET price = %s WHERE pid = %s",
                           (rng.choice([Decimal("11.50"), Decimal("11.5"), Decimal("30.0"), Decimal("7"),
                                        Decimal("0.001")]), pid))
        offloaded += engine.maintain("phone_parts", engine="spark").offloaded
        assert_equal_multiset(db, "phone_parts", sql, ["did", "pid", "price"])
    assert offloaded > 0


def _rounds_on_spark(engine, db, rng, table: str, row, view: str, sql: str, cols: list[str]) -> None:
    """`table` given row(k) for the keys 1-24 it lacks; `sql` registered as `view`, every step of it on Spark
    (explain refuses none); three rounds of rows replaced at random, each maintained on Spark and
    compared with the query."""
    def put(k):
        values = row(k)
        db.execute(f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(values))}) ON CONFLICT DO NOTHING", values)

    for k in range(1, 25):
        put(k)
    engine.register_view(view, sql)
    assert "refused" not in engine.explain(view).split("under --engine spark")[1]
    for _ in range(3):
        with db.transaction():
            for _ in range(6):
                k = rng.randint(1, 30)
                db.execute(f"DELETE FROM {table} WHERE k = %s", (k,))
                put(k)
        assert engine.maintain(view, engine="spark").offloaded > 0
        assert_equal_multiset(db, view, sql, cols)


def test_missing_pieces_are_named_with_how_to_install_them(monkeypatch):
    with pytest.raises(IdivmError, match="libpostgresql-jdbc-java"):
        SparkSettings(jar="/nonexistent/postgresql.jar").check()
    assert SparkSettings.from_env("postgresql://u:p%40ss@db.example:6543/shop").jdbc_url == \
        "jdbc:postgresql://db.example:6543/shop?user=u&password=p%40ss"
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else find_spec(name, *a))
    with pytest.raises(IdivmError, match=r"needs pandas, which is not installed: pip install 'idivm\[spark\]'"):
        SparkSettings().check()


def test_executors_reach_the_database_the_jdbc_url_names():
    """The executors write with libpq (partition_writer.py) at the database IDIVM_SPARK_JDBC_URL
    names: hosts, ports, database, user, password and TLS settings carried over; a parameter libpq
    has no counterpart for leaves the results to the driver (None)."""
    from psycopg.conninfo import conninfo_to_dict

    from idivm.engines.spark.settings import libpq_conninfo

    assert conninfo_to_dict(libpq_conninfo("jdbc:postgresql://h1,h2:6543/d%20b?user=a&password=p%26q&ssl=true")) == {
        "host": "h1,h2", "port": "5432,6543", "dbname": "d b", "user": "a", "password": "p&q", "sslmode": "require"}
    assert conninfo_to_dict(libpq_conninfo("jdbc:postgresql://[::1]/x?sslmode=verify-full&ApplicationName=etl")) == {
        "host": "::1", "port": "5432", "dbname": "x", "sslmode": "verify-full", "application_name": "etl"}
    assert libpq_conninfo("jdbc:postgresql://h/x?loggerLevel=DEBUG") is None
    assert libpq_conninfo("jdbc:mysql://h/x") is None


def test_columns_a_view_does_not_read_are_neither_read_nor_checked(engine, shop):
    shop.execute("CREATE TABLE notes (k int PRIMARY KEY, body jsonb, n int)")
    sql = "SELECT notes.k, notes.n, parts.price FROM notes JOIN parts ON parts.pid = notes.k"
    engine.register_view("noted", sql)
    shop.execute("""INSERT INTO notes VALUES (1, '{"a": 1}', 5), (2, NULL, 6)""")
    report = engine.maintain("noted", engine="spark")
    assert report.offloaded > 0
    assert_equal_multiset(shop, "noted", sql, ["k", "n", "price"])


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_small_batches_read_only_the_base_rows_they_can_join(engine, shop, monkeypatch, strategy):
    """A base table joined to the batch by an equality is read only at the batch's values, and one
    joined to such a table only at the values of its restricted rows (a chain: new parts reach
    devices through devices_parts); the filters run in PostgreSQL, and the view is still exact."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    from idivm.engines.spark import reads

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql, strategy=strategy)
    queries = []
    real_read = reads.read

    def recording_read(spark, settings, query, snapshot, name, partitions=None):
        queries.append(query)
        return real_read(spark, settings, query, snapshot, name, partitions)

    monkeypatch.setattr(reads, "read", recording_read)  # base tables' reads (reads.read_table)
    shop.execute("INSERT INTO parts VALUES (31, 7.5)")
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid IN (3, 4)")
    shop.execute("DELETE FROM devices_parts WHERE pid = 8")
    shop.execute("INSERT INTO devices_parts VALUES (1, 31), (2, 29) ON CONFLICT DO NOTHING")
    assert engine.maintain("v", engine="spark").offloaded > 0
    assert queries and all(" WHERE " in q for q in queries), queries  # no base table read whole
    assert any(" IN (SELECT " in q for q in queries), queries  # devices, through devices_parts
    assert_equal_multiset(shop, "v", sql, cols)


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_small_inputs_come_from_the_maintenance_transaction(engine, shop, monkeypatch, strategy):
    """Inputs of at most IDIVM_SPARK_LOCAL_ROWS rows reach Spark from the maintenance transaction
    itself (engines/spark/local_inputs.py), larger ones through JDBC: with the default limit this
    batch opens no JDBC read at all; with a limit of 3 rows the larger inputs are read through JDBC
    and the smaller ones are not; the view is exact either way, values (numeric scale, NULLs) too.
    A plan of local inputs alone runs without adaptive execution, one that reads through JDBC with
    it, each in its run's own session (the process's session keeps Spark's default)."""
    from idivm.engines.spark import executor, local_inputs
    from idivm.engines.spark import session as spark_sessions

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql, strategy=strategy)
    jdbc, local = [], []
    real_local = executor.read_local

    def recording_local(spark, cursor, query, columns, name, limit):
        fits = real_local(spark, cursor, query, columns, name, limit)
        (local if fits else jdbc).append(name)
        return fits

    monkeypatch.setattr(executor, "read_local", recording_local)
    sessions = []
    real_session = executor.run_session
    monkeypatch.setattr(executor, "run_session", lambda settings: sessions.append(real_session(settings)) or sessions[-1])
    for new, limit, expect_jdbc in ((31, None, False), (33, "3", True)):
        if limit:
            monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", limit)
        jdbc.clear(), local.clear()
        shop.execute("INSERT INTO parts VALUES (%s, NULL), (%s, 0.05)", (new, new + 1))
        shop.execute("UPDATE parts SET price = price + 1.01 WHERE pid IN (3, 4, 5, 6)")
        shop.execute("DELETE FROM devices_parts WHERE pid = %s", (new - 23,))
        shop.execute("INSERT INTO devices_parts VALUES (1, %s), (2, 29), (4, %s) ON CONFLICT DO NOTHING", (new, new + 1))
        assert engine.maintain("v", engine="spark").offloaded > 0
        assert local, "no input came from the transaction"
        assert bool(jdbc) == expect_jdbc, (limit, jdbc, local)
        assert sessions[-1].conf.get(executor.ADAPTIVE) == ("true" if expect_jdbc else "false")
        assert_equal_multiset(shop, "v", sql, cols)
    assert len({id(s) for s in sessions}) == len(sessions) == 2  # a session per run
    assert spark_sessions._session.conf.get(executor.ADAPTIVE) == "true"  # the process's warm session
    assert local_inputs.arrow_type("character(3)") is None  # its padding: read through JDBC
    assert str(local_inputs.arrow_type("numeric(12,4)")) == "decimal128(12, 4)"


def test_adaptive_execution_set_by_the_user_is_kept():
    """IDIVM_SPARK_CONF's spark.sql.adaptive.enabled wins over the engine's choice for small plans."""
    from idivm.engines.spark import executor

    class Conf(dict):
        def set(self, key, value):
            self[key] = value

    class Session:
        def __init__(self):
            self.conf = Conf()

    own, default = Session(), Session()
    executor.without_adaptive_execution(own, SparkSettings(conf={executor.ADAPTIVE: "true"}))
    executor.without_adaptive_execution(default, SparkSettings())
    assert own.conf == {} and default.conf == {executor.ADAPTIVE: "false"}


def test_higher_order_increments_read_maps_on_spark(engine, shop, monkeypatch):
    """A higher-order view's increments that join the batch with a map no earlier step writes
    (M += Δparts ⋈ M', before M' += Δdevices_parts) are computed on Spark, the map handed over as
    it was before the maintenance, restricted to the keys the batch joins; so are those that read a
    map earlier steps of the same batch added to (its prior state and those increments, summed by
    key, on Spark); with a local limit below
    what the batch joins of the map those steps stay in PostgreSQL. Exact either way, over random write streams (sums of numeric(8,2) prices in maps
    of unconstrained numeric)."""
    from idivm.engines.spark import executor

    sql, cols = VIEWS["grouped"]
    engine.register_view("g", sql, strategy="higher-order")
    explained = engine.explain("g")
    assert "as before this maintenance" in explained and "as this batch's earlier steps leave it" in explained
    handed, real_local = [], executor.read_local
    staged_changed, real_compute = [], executor._compute

    def recording_local(spark, cursor, query, columns, name, limit):
        fits = real_local(spark, cursor, query, columns, name, limit)
        if name.startswith("idivm_kept_"):
            handed.append((query, limit, fits))
        return fits

    def recording_compute(conn, view_id, work, texts, index, inputs, settings):
        staged, parts = real_compute(conn, view_id, work, texts, index, inputs, settings)
        staged_changed.extend(o.changed for o in work if index[id(o)] in staged)
        return staged, parts

    monkeypatch.setattr(executor, "read_local", recording_local)
    monkeypatch.setattr(executor, "_compute", recording_compute)
    rng = random.Random(11)
    for limit in ("20000", "1", "20000", "20000", "1", "20000"):
        monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", limit)
        _writes(shop, rng)
        engine.maintain("g", engine="spark")
        assert_equal_multiset(shop, "g", sql, cols)
    assert any(fits for _, limit, fits in handed if limit == 20000), handed  # maps read on Spark
    # a map this batch's earlier steps added to (M3 += Δdevices_parts, then M1 += Δparts ⋈ M3), read
    # on Spark as its prior state plus those increments
    assert any(staged_changed), staged_changed
    # restricted to the keys the batch joins, a map larger than the limit still goes to Spark when
    # the batch touches no more keys; read whole, it stays in PostgreSQL
    assert any(fits and " WHERE " in query for query, limit, fits in handed if limit == 1), handed
    assert all(not fits for query, limit, fits in handed if limit == 1 and " WHERE " not in query), handed


def test_what_a_batch_cannot_produce_is_not_computed_on_spark(engine, shop, monkeypatch):
    """Price updates give the id strategy's view no new rows to join (its inserts take kind I
    only): Spark reads nothing and runs no job, and the view is exact."""
    from idivm.engines.spark import executor, reads

    def no_read(*args, **kwargs):
        raise AssertionError("Spark read a table for a query that returns nothing")

    monkeypatch.setattr(executor, "read", no_read)
    monkeypatch.setattr(reads, "read", no_read)
    monkeypatch.setattr(executor, "read_local", no_read)
    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid < 10")
    report = engine.maintain("v", engine="spark")
    assert report.engine == "spark" and report.offloaded == 0 and report.changes > 0
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


FILLED = dict(VIEWS, **{
    "distinct": ("SELECT DISTINCT d.category FROM devices d JOIN devices_parts dp ON dp.did = d.did", ["category"]),
    "union": ("SELECT pid AS k FROM parts WHERE price > 10 UNION ALL SELECT did FROM devices", ["k"]),
})


@pytest.mark.slow
def test_views_filled_on_spark_equal_their_queries_and_stay_maintained(engine, shop):
    """register-view --engine spark: every table a view consists of that is computed from base
    tables alone (an SPJ view, a grouped view's cache, UNION ALL branches, higher-order maps) is
    filled by Spark, in registration's snapshot; the views then equal their queries and are
    maintained as usual (here on PostgreSQL, then on Spark)."""
    from idivm.engines.spark import materialize

    fills: list[str] = []
    real = materialize.SparkFill.__call__

    def recording(self, conn, table, query):
        before = len(self.computed)
        real(self, conn, table, query)
        fills.extend(t for t, _, _ in self.computed[before:])

    materialize.SparkFill.__call__ = recording
    try:
        for name, (sql, _) in FILLED.items():
            engine.register_view(f"{name}_filled", sql, engine="spark")
        engine.register_view("ho_filled", VIEWS["grouped"][0], strategy="higher-order", engine="spark")
    finally:
        materialize.SparkFill.__call__ = real
    stored = dict(shop.execute("SELECT view_name, 'view_' || id FROM idivm.views").fetchall())  # their storage tables
    assert any(stored["spj_filled"] in t for t in fills) and any(stored["union_filled"] in t for t in fills)
    assert any("idivm" in t and "ho" not in t for t in fills) or len(fills) >= len(FILLED)  # caches and maps too
    views = dict(FILLED, ho=VIEWS["grouped"])
    for name, (sql, cols) in views.items():
        assert_equal_multiset(shop, f"{name}_filled", sql, cols)
    rng = random.Random(5)
    for round_ in range(4):
        _writes(shop, rng)
        engine.maintain(*[f"{n}_filled" for n in views], engine="spark" if round_ % 2 else "postgres")
        for name, (sql, cols) in views.items():
            assert_equal_multiset(shop, f"{name}_filled", sql, cols)


def test_refresh_on_spark_rebuilds_exactly_and_reports_progress(engine, shop):
    """A refresh of a view and the view over it: the base view is filled on Spark (its base tables
    stay readable: capture is kept, not dropped and re-created), the view over it, whose input
    exists only in the refreshing transaction, by PostgreSQL."""
    sql, cols = VIEWS["spj"]
    per = f"SELECT category, count(*) AS n FROM ({sql}) q GROUP BY category"
    engine.register_view("v", sql)
    engine.register_view("per", "SELECT category, count(*) AS n FROM v GROUP BY category")
    shop.execute("UPDATE parts SET price = price * 2 WHERE pid < 5")
    seen: list[tuple[int, int, int]] = []
    assert engine.refresh("v", engine="spark", progress=lambda *p: seen.append(p)) == ["public.v", "public.per"]
    assert_equal_multiset(shop, "v", sql, cols)
    assert_equal_multiset(shop, "per", per, ["category", "n"])
    shop.execute("DELETE FROM devices_parts WHERE did = 5")
    engine.maintain()
    assert_equal_multiset(shop, "per", per, ["category", "n"])
    assert seen and seen[-1][0] == seen[-1][1] > 0  # Spark's tasks, all done at the end
    assert seen[-1][2] == shop.execute(f"SELECT count(*) FROM ({sql}) q").fetchone()[0]  # rows copied


def test_a_refused_fill_leaves_nothing_behind(engine, shop):
    shop.execute("CREATE TABLE loose (k int PRIMARY KEY, x numeric)")
    with pytest.raises(IdivmError, match=r"reads x \(numeric\) as its text") as refused:
        engine.register_view("loose_v", "SELECT k, x * 2 AS y FROM loose", engine="spark")
    assert "\n" not in str(refused.value)
    # refused by a value the fill met (too many decimals to compare exactly), in one line too
    shop.execute("INSERT INTO loose VALUES (1, 2.1234567890123456789012)")
    with pytest.raises(IdivmError, match="column x holds 2.1234567890123456789012") as refused:
        engine.register_view("loose_v", "SELECT k, x FROM loose WHERE x > 1", engine="spark")
    assert "\n" not in str(refused.value)
    assert shop.execute("SELECT to_regclass('loose_v')").fetchone()[0] is None
    assert engine.list() == []


def test_a_cancelled_spark_job_rolls_back_and_the_next_run_is_exact(engine, shop, monkeypatch):
    """The Spark job killed mid-run (its job group cancelled while its jobs run, as an operator in
    Spark's UI or a lost driver would): the maintenance fails with one line, view and log are as
    before, and the next run (on Spark) applies every change once."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    import threading
    import time

    from idivm.engines.spark import executor, progress
    from idivm.engines.spark.session import spark_session

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid <= 20")
    shop.execute("INSERT INTO devices_parts SELECT did, 29 FROM devices ON CONFLICT DO NOTHING")
    shop.execute("DELETE FROM devices_parts WHERE did = 3")
    before = sorted(shop.execute("SELECT * FROM v").fetchall())
    real_read, real_group = executor.read, executor.new_group
    kills: list[str] = []

    def slow_read(spark, settings, query, snapshot, name, partitions=None):
        from pyspark.sql import functions as F, types as T

        df = real_read(spark, settings, query, snapshot, name, partitions)
        slow = F.udf(lambda _: time.sleep(0.2) or True, T.BooleanType(), useArrow=False)  # long enough to be killed
        df.where(slow(F.lit(1))).select(*spark.table(name).columns).createOrReplaceTempView(name)
        return df

    def group_with_a_killer(what):
        group = real_group(what)
        spark = spark_session(SparkSettings.from_env(engine.dsn))

        def kill():  # cancel the group as soon as one of its jobs runs
            status = spark.sparkContext.statusTracker()
            deadline = time.time() + 120
            while time.time() < deadline:
                if set(status.getJobIdsForGroup(group)) & set(status.getActiveJobsIds()):
                    time.sleep(0.3)  # mid-run
                    kills.append(group)
                    progress.cancel(spark, group)
                    return
                time.sleep(0.02)

        threading.Thread(target=kill, daemon=True).start()
        return group

    monkeypatch.setattr(executor, "read", slow_read)
    monkeypatch.setattr(executor, "new_group", group_with_a_killer)
    with pytest.raises(Exception, match="(?i)cancel"):
        engine.maintain("v", engine="spark")
    assert kills
    assert sorted(shop.execute("SELECT * FROM v").fetchall()) == before
    assert engine.list()[0]["pending"] > 0
    monkeypatch.setattr(executor, "read", real_read)
    monkeypatch.setattr(executor, "new_group", real_group)
    assert engine.maintain("v", engine="spark").offloaded > 0
    assert_equal_multiset(shop, "v", sql, cols)


def test_a_failing_apply_after_spark_rolls_back_and_the_next_run_is_exact(engine, shop):
    """An exception in the apply (a constraint the staged rows violate): nothing of the run stays,
    the batch is still pending, and once the cause is gone the next run applies it once."""
    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    storage = shop.execute("SELECT 'idivm.view_' || id FROM idivm.views WHERE view_name = 'v'").fetchone()[0]
    shop.execute(f"ALTER TABLE {storage} ADD CONSTRAINT cheap CHECK (price < 100)")  # on the view's storage
    shop.execute("INSERT INTO parts VALUES (35, 150)")
    shop.execute("INSERT INTO devices_parts VALUES (1, 35), (2, 35) ON CONFLICT DO NOTHING")
    before = sorted(shop.execute("SELECT * FROM v").fetchall())
    with pytest.raises(Exception, match="cheap"):
        engine.maintain("v", engine="spark")
    assert sorted(shop.execute("SELECT * FROM v").fetchall()) == before
    shop.execute(f"ALTER TABLE {storage} DROP CONSTRAINT cheap")
    assert engine.maintain("v", engine="spark").offloaded > 0
    assert_equal_multiset(shop, "v", sql, cols)


def test_large_tables_are_read_in_parallel_key_ranges(engine, shop, monkeypatch):
    """A base table read whole, estimated large, is read in ranges of its integer key (one JDBC
    connection per core, each in the snapshot): the fill and the maintenance stay exact."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    from idivm.engines.spark import reads

    cores = SparkSettings.from_env(engine.dsn).cores()
    if cores < 2:
        pytest.skip("parallel reads need two cores")
    monkeypatch.setattr(reads, "PARTITION_ROWS", 0)
    shop.execute("ANALYZE")
    ranged = []
    real_read = reads.read

    def recording(spark, settings, query, snapshot, name, partitions=None):
        df = real_read(spark, settings, query, snapshot, name, partitions)
        if partitions is not None:
            ranged.append((name, df.rdd.getNumPartitions()))
        return df

    monkeypatch.setattr(reads, "read", recording)  # base tables, for the fill and the maintenance
    sql, cols = ("SELECT p.pid, p.price, count(*) AS n FROM parts p JOIN devices_parts dp ON dp.pid > p.pid "
                 "GROUP BY p.pid, p.price", ["pid", "price", "n"])
    engine.register_view("ranged", sql, engine="spark")
    assert ranged and all(n == cores for _, n in ranged), ranged  # one range per core
    assert_equal_multiset(shop, "ranged", sql, cols)
    ranged.clear()
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid % 3 = 0")
    shop.execute("INSERT INTO devices_parts VALUES (4, 30) ON CONFLICT DO NOTHING")
    assert engine.maintain("ranged", engine="spark").offloaded > 0
    assert ranged  # the inequality join reads the other table whole
    assert_equal_multiset(shop, "ranged", sql, cols)


def test_retried_tasks_stage_each_row_once(engine, shop, monkeypatch, tmp_path):
    """A task that fails and is retried (here: every task's first attempt) must not stage its rows
    twice: the driver copies a partition only once Spark has its result. Runs last in this module:
    a master that retries failed tasks (local[2,2]) is a session of its own."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    from idivm.engines.spark import executor

    monkeypatch.setenv("IDIVM_SPARK_MASTER", "local[2,2]")
    failures = tmp_path / "failed-attempts"
    real_read = executor.read

    def flaky_read(spark, settings, query, snapshot, name, partitions=None):
        from pyspark import TaskContext
        from pyspark.sql import functions as F, types as T

        df = real_read(spark, settings, query, snapshot, name, partitions)

        def first_attempt_fails(_):
            if TaskContext.get().attemptNumber() == 0:
                with open(failures, "a") as f:
                    f.write("x")
                raise RuntimeError("injected task failure")
            return True

        ok = F.udf(first_attempt_fails, T.BooleanType(), useArrow=False)
        df.where(ok(F.lit(1))).select(*spark.table(name).columns).createOrReplaceTempView(name)
        return df

    sql, cols = VIEWS["spj"]
    engine.register_view("v", sql)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid <= 25")
    shop.execute("INSERT INTO devices_parts SELECT did, 29 FROM devices ON CONFLICT DO NOTHING")
    monkeypatch.setattr(executor, "read", flaky_read)
    assert engine.maintain("v", engine="spark").offloaded > 0
    assert failures.exists() and len(failures.read_text()) > 0  # tasks did fail and were retried
    assert_equal_multiset(shop, "v", sql, cols)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_standalone_cluster_computes_the_same_view(engine, shop, monkeypatch, tmp_path):
    """`spark://` masters work as docker-compose.yml runs them: a standalone master and a worker
    (the same spark-class commands, here as local processes), executors in JVMs of their own that
    get the JDBC jar through spark.jars and read PostgreSQL inside the exported snapshot. Runs last
    (after local[2,2]): a cluster is a session of its own."""
    monkeypatch.setenv("IDIVM_SPARK_LOCAL_ROWS", "0")  # every input read by Spark through JDBC
    import json
    import os
    import subprocess
    import time
    import urllib.request

    import pyspark

    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    port, ui = _free_port(), _free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(tmp_path / "work"),
               SPARK_DAEMON_JAVA_OPTS=JVM_JIT)
    logs = open(tmp_path / "cluster.log", "w")
    procs = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], env=env, stdout=logs, stderr=logs)]
    try:
        procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker",
                                       f"spark://127.0.0.1:{port}", "--cores", "2", "--memory", "1g",
                                       "--webui-port", str(_free_port())], env=env, stdout=logs, stderr=logs))
        deadline = time.monotonic() + 90
        while True:  # the worker registered with the master
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "cluster.log").read_text()[-2000:]
            time.sleep(1)
        monkeypatch.setenv("IDIVM_SPARK_MASTER", f"spark://127.0.0.1:{port}")
        monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # the executors' Python, with pyarrow, pandas, psycopg
        monkeypatch.setenv("IDIVM_SPARK_CONF", "spark.driver.host=127.0.0.1 spark.executor.memory=1g "
                                               "spark.cores.max=2 spark.driver.memory=1g "
                                               f"spark.executor.extraJavaOptions='{JVM_JIT}'")
        sql, cols = VIEWS["grouped"]
        engine.register_view("v", sql, engine="spark")  # the fill on the cluster
        assert_equal_multiset(shop, "v", sql, cols)
        rng = random.Random(3)
        offloaded = 0
        for r in range(3):
            _writes(shop, rng)
            shop.execute("INSERT INTO devices_parts VALUES (%s, %s) ON CONFLICT DO NOTHING", (1 + r, 31 + r))
            shop.execute("INSERT INTO parts VALUES (%s, 1.5) ON CONFLICT DO NOTHING", (31 + r,))
            report = engine.maintain("v", engine="spark")
            assert report.engine == "spark" and not report.failed, report
            offloaded += report.offloaded
            assert_equal_multiset(shop, "v", sql, cols)
        assert offloaded > 0
    finally:
        from idivm.engines.spark.session import stop

        stop()  # the next module's first Spark use starts a local session again
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()


@pytest.mark.cluster
def test_spark_reaches_an_embedded_cluster_over_tcp_with_its_password():
    """Issue 33, item 4: on a machine with no server, idivm's own cluster (the embedded default, and
    the tests' throwaway one) is reached through its socket, and Spark through its TCP listener on
    127.0.0.1 with the password kept beside it (embedded.py); every run of the suite does this once,
    whichever server the other tests use."""
    with throwaway_cluster("idivm-spark-") as (_, dsn):
        assert SparkSettings.from_env(dsn).jdbc_url.startswith("jdbc:postgresql://127.0.0.1:")
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric(8,2))")
            db.execute("INSERT INTO parts SELECT g, g * 1.25 FROM generate_series(1, 30) g")
            engine = idivm.connect(dsn)
            engine.register_view("dear", VIEWS["filtered"][0], engine="spark")
            db.execute("UPDATE parts SET price = price + 2 WHERE pid % 3 = 0")
            report = engine.maintain("dear", engine="spark")
            assert report.engine == "spark" and report.offloaded > 0, report
            assert_equal_multiset(db, "dear", *VIEWS["filtered"])
            engine.close()


def test_a_batch_recomputed_instead_stages_nothing_and_stays_exact(engine, shop, monkeypatch):
    """A view whose batch is recomputed (docs/maintenance.md, "Recomputing instead") has no
    Δ-script for Spark to compute a part of: the Spark engine's maintenance stages nothing, the
    report says so, and the view (its cache left stale) is exact, as after the next batch that
    runs the Δ-script again."""
    from idivm.engines.spark import executor

    def no_stage(*args, **kwargs):
        raise AssertionError("Spark computed a step of a recomputed view")

    sql, cols = VIEWS["grouped"]
    engine.register_view("v", sql)
    engine.set_policy("v", recompute="always")
    rng = random.Random(5)
    shop.execute("UPDATE parts SET price = price + 1 WHERE pid < 10")
    _writes(shop, rng)
    with monkeypatch.context() as m:
        m.setattr(executor, "_compute", no_stage)
        report = engine.maintain("v", engine="spark")
    assert report.engine == "spark" and report.offloaded == 0 and report.recomputed, report
    assert_equal_multiset(shop, "v", sql, cols)
    engine.set_policy("v", recompute="never")
    for _ in range(2):  # with its cache first, then the Δ-script on Spark
        _writes(shop, rng)
        engine.maintain("v", engine="spark")
        assert_equal_multiset(shop, "v", sql, cols)
