"""Constructs the frontend rewrites before anything else into ones idivm maintains, maintained under
every strategy, deferred and immediate, and by auto, through random writes: subqueries without
FROM that are one constant row (frontend/constant_subqueries.py) or read idivm's one-row table
(frontend/one_row.py), generate_series in FROM (frontend/table_functions.py), comparisons with ANY / SOME /
ALL of a subquery (frontend/quantified_comparisons.py) and aggregates with FILTER
(frontend/aggregate_filters.py). What they cannot rewrite stays refused by name."""
from __future__ import annotations

import random

import pytest

import idivm
from helpers import assert_equal_multiset

VIEWS = {  # written like the shapes of DBToaster's simple queries, over r(k, a, b) and s(k, a)
    "exists": ("SELECT k, a FROM r WHERE EXISTS (SELECT 3) AND b > 1", ["k", "a"]),
    "not_exists": ("SELECT k FROM r WHERE NOT EXISTS (SELECT 2) OR a = 1", ["k"]),
    "scalar": ("SELECT k, a * (SELECT 1 + 2) AS a3 FROM r WHERE a < (SELECT 3)", ["k", "a3"]),
    "in": ("SELECT a, count(*) AS n, sum(b) AS s FROM r WHERE b IN (SELECT 1) OR a NOT IN (SELECT 2) GROUP BY a",
           ["a", "n", "s"]),
    "correlated": ("SELECT k, (SELECT r.a + 1) AS a1 FROM r WHERE r.b = (SELECT r.a)", ["k", "a1"]),
    "all": ("SELECT k, b FROM r WHERE b >= ALL (SELECT s.a FROM s WHERE s.k <> r.k)", ["k", "b"]),
    "some": ("SELECT r.k, r.a FROM r WHERE r.a > SOME (SELECT a FROM s WHERE s.k < 5) OR r.b = 0", ["k", "a"]),
    "any_grouped": ("SELECT b, count(*) AS n FROM r WHERE a = ANY (SELECT s.a FROM s) GROUP BY b", ["b", "n"]),
    "filter": ("SELECT b, count(*) FILTER (WHERE a > 1) AS n, sum(a) FILTER (WHERE k % 2 = 0) AS s, "
               "count(DISTINCT a) FILTER (WHERE k > 3) AS d FROM r GROUP BY b", ["b", "n", "s", "d"]),
    "filter_min_max": ("SELECT b, max(a) FILTER (WHERE k > 4) AS m, min(k) FILTER (WHERE a IS NULL) AS l "
                       "FROM r GROUP BY b HAVING count(*) FILTER (WHERE a = 0) < 2", ["b", "m", "l"]),
    "row_that_may_not_exist": ("SELECT k FROM r WHERE EXISTS (SELECT 1 WHERE r.a > 2) OR a = (SELECT count(*))",
                               ["k"]),
    "text_row": ("SELECT k FROM r WHERE a::text = (SELECT '1')", ["k"]),
    "constant_in_from": ("SELECT r.k, c.x FROM r, (SELECT 2 AS x, 'y' AS y) AS c WHERE r.a < c.x", ["k", "x"]),
    "no_from": ("SELECT 1 AS x, 'y' AS z WHERE EXISTS (SELECT 1 FROM s WHERE s.a = 2)", ["x", "z"]),
    "never": ("SELECT 1 AS x FROM (SELECT 1 AS a) AS c WHERE a = 2 UNION ALL SELECT k FROM r WHERE 1 = 2", ["x"]),
    "series": ("SELECT r.k, g.x FROM r JOIN generate_series(0, 6, 2) AS g(x) ON g.x >= r.a, generate_series(-1, 1) AS h "
               "WHERE h = r.b - 1", ["k", "x"]),  # frontend/table_functions.py
    "series_grouped": ("SELECT g, count(r.k) AS n FROM generate_series(1, 4) AS g LEFT JOIN r ON r.a = g GROUP BY g",
                       ["g", "n"]),
    "all_of_an_aggregate": ("SELECT k, a FROM r WHERE a < ALL (SELECT sum(s.a) / 2 FROM s WHERE s.k <= r.k)", ["k", "a"]),
}
NESTED = ("all_of_an_aggregate",)  # a nested aggregate once rewritten: higher-order (and auto) only
FIRST_ORDER = ("series_grouped",)  # aggregates over an outer join: higher-order refuses them by name
RUNS = [("id", "deferred"), ("tuple", "deferred"), ("higher-order", "deferred"), ("id", "immediate"),
        ("higher-order", "immediate"), ("auto", "deferred")]


def test_rewritten_constructs_are_maintained_by_every_strategy(engine, db):
    db.execute("CREATE TABLE r (k int PRIMARY KEY, a int, b int)")
    db.execute("CREATE TABLE s (k int PRIMARY KEY, a int)")
    db.execute("INSERT INTO r SELECT g, g % 4, g % 3 FROM generate_series(1, 12) g")
    db.execute("INSERT INTO s SELECT g, g % 3 FROM generate_series(1, 6) g")
    names = {}
    for shape, (sql, _) in VIEWS.items():
        for strategy, mode in [(s, m) for s, m in RUNS if (shape not in NESTED or s in ("higher-order", "auto"))
                               and (shape not in FIRST_ORDER or s != "higher-order")]:
            name = f"v_{shape}_{strategy.replace('-', '_')}_{mode}"
            engine.register_view(name, sql, strategy=strategy, mode=mode)
            names[name] = shape
    rng = random.Random(7)
    for _ in range(6):
        with db.transaction():
            for _ in range(4):
                k = rng.randint(1, 16)
                db.execute("INSERT INTO r VALUES (%s, %s, %s) ON CONFLICT (k) DO UPDATE SET a = excluded.a, b = excluded.b",
                           (k, rng.choice([None, 0, 1, 2, 3]), rng.choice([None, 0, 1, 2])))
            db.execute("DELETE FROM r WHERE k = %s", (rng.randint(1, 16),))
            db.execute("INSERT INTO s VALUES (%s, %s) ON CONFLICT (k) DO UPDATE SET a = excluded.a",
                       (rng.randint(1, 8), rng.choice([None, 0, 1, 2, 3])))
            db.execute("DELETE FROM s WHERE k = %s", (rng.randint(1, 8),))
        engine.maintain()
        for name, shape in names.items():
            assert_equal_multiset(db, name, *VIEWS[shape])


@pytest.mark.parametrize("sql, named", [
    ("SELECT k FROM r WHERE NOT (a < ANY (SELECT k FROM r AS q))", "a comparison with ANY of a subquery under NOT"),
    ("SELECT k FROM r WHERE a < ALL (SELECT a FROM r AS q GROUP BY a HAVING count(*) > 1)",
     "a comparison with ALL of a subquery"),
])
def test_what_no_rewrite_handles_stays_refused(engine, db, sql, named):
    db.execute("CREATE TABLE r (k int PRIMARY KEY, a int, b int)")
    with pytest.raises(idivm.UnsupportedQuery, match=named):
        engine.register_view("v", sql)
