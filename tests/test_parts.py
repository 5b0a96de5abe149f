"""Parts of a view (algebra/plan.PartScan): subqueries that aggregate, joined with other tables
(inner and outer joins), aggregated again, scalar subqueries used as values or compared in WHERE
(under the first-order strategies), maintained by
`id` and `tuple`, deferred and immediate, through groups emptied and refilled, NULL group keys and
ties; `explain` names each part, `drop-view` leaves none of their tables, `refresh` rebuilds them.
The differential test's `fromagg` family draws such views at random."""
from __future__ import annotations

import random

import psycopg
import pytest

import idivm
from helpers import assert_equal_multiset, assert_views_equal, spark_missing

VIEWS = {  # name: (query, output columns)
    "joined": ("SELECT c.id, c.region, t.total, t.n FROM customers c JOIN (SELECT customer, sum(amount) AS total, "
               "count(*) AS n FROM orders GROUP BY customer) AS t ON t.customer = c.id", ["id", "region", "total", "n"]),
    "left_min": ("SELECT c.id, t.lo, t.hi FROM customers c LEFT JOIN (SELECT customer, min(amount) AS lo, "
                 "max(amount) AS hi FROM orders GROUP BY customer) AS t ON t.customer = c.region_id", ["id", "lo", "hi"]),
    "again": ("SELECT t.n, count(*) AS customers FROM (SELECT customer, count(*) AS n FROM orders GROUP BY customer) "
              "AS t GROUP BY t.n", ["n", "customers"]),
    "values": ("SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer = c.id) AS n, "
               "(SELECT sum(o.amount) FROM orders o WHERE o.customer = c.id AND o.amount > 2) * 2 AS big FROM customers c",
               ["id", "n", "big"]),
    "star_nested": ("SELECT * FROM customers c WHERE c.region_id <= (SELECT max(o.amount) FROM orders o "
                    "WHERE o.customer = c.id)", ["id", "region", "region_id"]),  # `*` takes no part's column
    "in_aggregate": ("SELECT c.region, sum(c.id * (SELECT count(*) FROM orders o WHERE o.customer = c.id)) AS w "
                     "FROM customers c GROUP BY c.region", ["region", "w"]),
    # EXISTS / IN over a grouping (frontend/grouped_semijoins.py): correlated by an equality, uncorrelated, NOT
    "in_grouped": ("SELECT c.id, c.region FROM customers c WHERE c.region_id IN (SELECT mod(count(*), 4) FROM orders o "
                   "WHERE o.customer = c.id GROUP BY o.amount HAVING count(*) > 1)", ["id", "region"]),
    "exists_grouped": ("SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.id "
                       "AND o.amount > 0 GROUP BY o.customer HAVING sum(o.amount) > 6)", ["id"]),
    "in_uncorrelated": ("SELECT c.id, c.region_id FROM customers c WHERE c.id NOT IN (SELECT o.customer FROM orders o "
                        "GROUP BY o.customer HAVING max(o.amount) >= 4 AND count(*) BETWEEN 2 AND 6) AND c.region_id IN "
                        "(SELECT mod(count(*), 4) FROM orders o WHERE o.customer = c.id)", ["id", "region_id"]),
    "exists_value": ("SELECT c.id, EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.id AND o.amount > 2) AS big, "
                     "NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.region_id) AS none FROM customers c",
                     ["id", "big", "none"]),
    # nested aggregates inside nested aggregates, and in an IN subquery's WHERE (TPC-H Q18's and Q20's shapes)
    "nested_twice": ("SELECT c.id FROM customers c WHERE c.region_id <= (SELECT count(*) FROM orders o WHERE o.customer = c.id "
                     "AND o.amount >= (SELECT max(o2.amount) FROM orders o2 WHERE o2.customer = o.customer) - 1)", ["id"]),
    "nested_in_semijoin": ("SELECT c.id, c.region FROM customers c WHERE c.id IN (SELECT o.customer FROM orders o WHERE "
                           "o.amount * 7 > (SELECT sum(o2.amount) FROM orders o2 WHERE o2.customer = o.customer))",
                           ["id", "region"]),
    # scalar subqueries without an aggregate (lookups, frontend/single_row_subqueries.py): by key, as an
    # output, compared in WHERE, grouped by their output, inside an IN subquery of a UNION's branch
    "lookup": ("SELECT o.id, (SELECT c.region FROM customers c WHERE c.id = o.customer) AS region, "
               "(SELECT c.region_id * 2 FROM customers c WHERE c.id = o.amount) AS twice FROM orders o",
               ["id", "region", "twice"]),
    "lookup_where": ("SELECT o.id, o.amount FROM orders o WHERE o.amount > (SELECT c.region_id FROM customers c "
                     "WHERE c.id = o.customer)", ["id", "amount"]),
    "lookup_grouped": ("SELECT o.id FROM orders o WHERE (SELECT c.region FROM customers c WHERE c.id = o.customer "
                       "GROUP BY c.region) = 'r1'", ["id"]),
    "lookup_union": ("SELECT c.id FROM customers c WHERE c.id IN (SELECT o.customer FROM orders o WHERE o.amount = "
                     "(SELECT c2.region_id FROM customers c2 WHERE c2.id = 5)) UNION ALL SELECT o.id FROM orders o "
                     "WHERE o.amount < (SELECT c.region_id FROM customers c WHERE c.id = 3)", ["id"]),
    "exists_from": ("SELECT c.id FROM customers c WHERE EXISTS (SELECT 1 FROM (SELECT customer, count(*) AS n FROM orders "
                    "GROUP BY customer) t WHERE t.customer = c.id AND t.n >= c.region_id)", ["id"]),
}


def _tables(db):
    db.execute("CREATE TABLE customers (id int PRIMARY KEY, region text, region_id int)")
    db.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int, amount int)")
    db.execute("INSERT INTO customers SELECT g, 'r' || (g % 3), g % 4 FROM generate_series(1, 12) g")
    db.execute("INSERT INTO orders SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE 1 + g % 10 END, g % 5 "
               "FROM generate_series(1, 60) g")


def _modify(db, rng: random.Random) -> None:
    with db.transaction():
        for _ in range(rng.randint(1, 6)):
            k = rng.randint(1, 80)
            db.execute(rng.choice([
                "DELETE FROM orders WHERE customer = %s",  # a group emptied
                "UPDATE orders SET amount = amount + 1 WHERE id = %s",
                "UPDATE orders SET customer = NULL WHERE id = %s",  # into the NULL group
                "INSERT INTO orders VALUES (%s + 100, 3, 4) ON CONFLICT DO NOTHING",  # a tie, a group refilled
                "UPDATE customers SET region_id = (region_id + 1) %% 4 WHERE id = %s %% 13",
                "DELETE FROM customers WHERE id = %s %% 13",
                "INSERT INTO customers VALUES (%s %% 20 + 13, 'r9', 2) ON CONFLICT DO NOTHING",
            ]), (k,))


@pytest.mark.parametrize("strategy, mode", [("id", "deferred"), ("tuple", "deferred"), ("id", "immediate"),
                                            ("auto", "deferred")])
def test_parts_are_maintained_exactly(engine, db, strategy, mode):
    _tables(db)
    for name, (sql, _) in VIEWS.items():
        engine.register_view(name, sql, strategy=strategy, mode=mode)
        assert engine.strategy_of(name) in ("id", "tuple")  # auto: the higher-order strategy refuses parts
    rng = random.Random(7)
    for _ in range(6):
        _modify(db, rng)
        engine.maintain()
        for name, (sql, columns) in VIEWS.items():
            assert_equal_multiset(db, name, sql, columns)


@pytest.mark.parametrize("mode", ["deferred", "immediate"])
def test_a_lookup_finding_two_rows_fails_as_its_query_does(engine, db, mode):
    """PostgreSQL fails a query whose scalar subquery finds two rows; so does registering or
    maintaining a view of it, changing nothing, and maintenance catches up once the rows are fixed."""
    _tables(db)
    sql = "SELECT c.id, (SELECT o.amount FROM orders o WHERE o.customer = c.id) AS amount FROM customers c"
    with pytest.raises(idivm.IdivmError, match="^PostgreSQL could not evaluate the view's query: more than one row "
                                               "returned by a subquery used as an expression$"):
        engine.register_view("v", sql, mode=mode)
    db.execute("DELETE FROM orders WHERE id > 10 OR customer IS NULL")  # at most one order a customer
    engine.register_view("v", sql, mode=mode)
    before = db.execute("SELECT * FROM v ORDER BY id").fetchall()
    two = "more than one row returned by a subquery used as an expression"
    if mode == "immediate":  # the writer's statement fails
        with pytest.raises(psycopg.errors.CardinalityViolation, match=two):
            db.execute("INSERT INTO orders VALUES (100, 5, 7)")  # customer 5's second order
    else:
        db.execute("INSERT INTO orders VALUES (100, 5, 7)")
        with pytest.raises(psycopg.errors.CardinalityViolation, match=two):
            engine.maintain("v")
        assert db.execute("SELECT * FROM v ORDER BY id").fetchall() == before
        db.execute("DELETE FROM orders WHERE id = 100")
        engine.maintain("v")
    assert_equal_multiset(db, "v", sql, ["id", "amount"])


def test_explain_drop_and_refresh(engine, db):
    _tables(db)
    sql, columns = VIEWS["values"]
    dry = engine.explain(sql=sql)
    assert "SCAN PART self.part_1" in dry and "SCAN PART self.part_2" in dry and "parts" in dry
    engine.register_view("v", sql)
    assert "SCAN PART self.part_1" in engine.explain("v")
    parts = "SELECT count(*) FROM pg_tables WHERE schemaname = 'idivm' AND tablename LIKE 'part%'"
    assert db.execute(parts).fetchone()[0] >= 2  # each part's table (and its cache)
    db.execute("UPDATE orders SET amount = 4 WHERE id < 10")
    engine.refresh("v")
    assert_equal_multiset(db, "v", sql, columns)
    db.execute("DELETE FROM orders WHERE id < 20")
    engine.maintain("v")
    assert_equal_multiset(db, "v", sql, columns)
    engine.drop_view("v")
    assert db.execute(parts).fetchone()[0] == 0
    with pytest.raises(idivm.UnsupportedQuery, match="higher-order strategy does not translate a subquery that aggregates"):
        engine.register_view("v", sql, strategy="higher-order")


SPARK_SAMPLE = ("joined", "left_min", "again", "values", "in_grouped", "nested_in_semijoin", "lookup")  # one view a shape


@pytest.mark.slow
def test_parts_maintained_on_spark(engine, db):
    """A view of each shape of part (joined, outer-joined, aggregated again, scalar values, a grouped
    IN, a nested aggregate in an IN subquery) with its batches computed on Spark, the steps over the
    parts' own i-diffs included (skipped where Spark is not installed)."""
    if spark_missing(engine.dsn):
        pytest.skip(spark_missing(engine.dsn))
    _tables(db)
    for name in SPARK_SAMPLE:
        engine.register_view(name, VIEWS[name][0], strategy="id")
    rng = random.Random(11)
    offloaded = 0
    for _ in range(3):
        _modify(db, rng)
        for report in engine.maintain(*SPARK_SAMPLE, engine="spark"):
            assert report.engine == "spark" and not report.failed, report
            offloaded += report.offloaded
        for name in SPARK_SAMPLE:
            assert_views_equal(db, [name], *VIEWS[name])
    assert offloaded > 0
