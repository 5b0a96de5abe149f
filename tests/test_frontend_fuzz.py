"""Random SELECTs, built from pieces of the SQL grammar that idivm supports and that it refuses, fed to
register-view: each must end registered (and equal to its query) or refused with one IdivmError line,
never any other exception (issue 12: no KeyError/AttributeError/NoneType escapes the frontend)."""
from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import idivm

SCHEMA = """
CREATE TABLE r (k int PRIMARY KEY, a int, b text, d date, tz timestamptz, j json, jb jsonb);
CREATE TABLE s (k int PRIMARY KEY, rk int, c int);
CREATE TABLE p (k int, g int, v int, PRIMARY KEY (k, g)) PARTITION BY LIST (g);
CREATE TABLE p0 PARTITION OF p FOR VALUES IN (0, 1);
INSERT INTO r SELECT g, g % 3, 'b' || g, DATE '2024-01-01' + g, TIMESTAMPTZ '2024-01-01 00:00+00' + g * INTERVAL '1 hour',
  '{"x": 1}', '{"x": 1}' FROM generate_series(1, 8) g;
INSERT INTO s SELECT g, g % 8, g FROM generate_series(1, 8) g;
INSERT INTO p SELECT g, g % 2, g FROM generate_series(1, 6) g;
"""

COLUMNS = ["r.k", "r.a", "r.b", "r.d", "r.jb", "r.j", "r.tz", "r.xmin", "s.c", "s.rk", "1", "NULL", "'x'"]
EXPRS = ["{c}", "{c} + 1", "abs(r.a)", "lower(r.b)", "extract(year FROM r.d)", "date_part('year', r.tz)", "random()",
         "now()", "CAST(r.tz AS date)", "count(*)", "sum(r.a)", "max(r.b)", "count(DISTINCT r.a)",
         "count(DISTINCT (r.a, r.b))", "array_agg(r.a ORDER BY r.k)", "row_number() OVER ()",
         "(SELECT max(c) FROM s)", "string_agg(r.b, ',')", "sum(r.a) FILTER (WHERE r.a > 0)",
         "percentile_cont(0.5) WITHIN GROUP (ORDER BY r.a)", "CASE WHEN r.a > 1 THEN 'y' END", "coalesce(r.a, 0)"]
FROMS = ["r", "r JOIN s ON s.rk = r.k", "r, s", "r LEFT JOIN s ON s.rk = r.k", "r TABLESAMPLE SYSTEM (50)", "ONLY r",
         "(SELECT k, a, b, d, tz, j, jb FROM r WHERE a > 0) r", "r CROSS JOIN LATERAL (SELECT 1 AS z) l",
         "r JOIN (VALUES (1)) v(z) ON v.z = r.a", "r JOIN generate_series(1, 3) g ON g = r.a", "p AS r", "p0 AS r",
         "ONLY p AS r", "r NATURAL JOIN s"]
WHERES = ["", "WHERE r.a > 1", "WHERE EXISTS (SELECT 1 FROM s WHERE s.rk = r.k)", "WHERE r.a IN (SELECT c FROM s)",
          "WHERE EXISTS (SELECT 3)", "WHERE r.a IN (SELECT 1)", "WHERE r.a > (SELECT avg(c) FROM s)",
          "WHERE r.a NOT IN (SELECT rk FROM s WHERE s.c > 2)", "WHERE r.b LIKE 'b%'", "WHERE r.a > random()",
          "WHERE r.j IS NOT NULL"]
TAILS = ["", "GROUP BY r.a", "GROUP BY ROLLUP (r.a)", "GROUP BY r.a HAVING count(*) > 1", "ORDER BY 1",
         "ORDER BY 1 LIMIT 2", "OFFSET 1", "GROUP BY CUBE (r.a)", "GROUP BY GROUPING SETS ((r.a), ())"]
WRAPS = ["{q}", "WITH w AS ({q}) SELECT * FROM w", "{q} UNION ALL {q}", "{q} UNION {q}", "{q} EXCEPT {q}",
         "WITH d AS (DELETE FROM s RETURNING k) {q}", "SELECT 1 AS x", "{q} INTERSECT ALL {q}",
         "SELECT DISTINCT ON (x0) * FROM ({q}) z"]


# the first few of each list are supported: most queries are drawn from those, so that the registered
# path (and its verification) is exercised as well as every refusal
SUPPORTED = {id(COLUMNS): 5, id(EXPRS): 5, id(FROMS): 4, id(WHERES): 4, id(TAILS): 2, id(WRAPS): 2}


@st.composite
def queries(draw):
    clean = draw(st.integers(0, 9)) < 6

    def pick(options):
        return draw(st.sampled_from(options[:SUPPORTED[id(options)]] if clean else options))

    outputs = [f"{pick(EXPRS).format(c=pick(COLUMNS))} AS x{i}" for i in range(draw(st.integers(1, 3)))]
    q = (f"SELECT {draw(st.sampled_from(['', 'DISTINCT ']))}{', '.join(outputs)} FROM {pick(FROMS)} "
         f"{pick(WHERES)} {pick(TAILS)}")
    return pick(WRAPS).format(q=q)


@pytest.fixture(scope="module")
def fuzz_db(module_db):
    with psycopg.connect(module_db, autocommit=True) as c:
        c.execute(SCHEMA)
    engine = idivm.connect(module_db)
    engine.init()
    yield module_db, engine
    engine.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=queries())
def test_registered_or_refused_in_one_line(fuzz_db, sql):
    _, engine = fuzz_db
    try:
        engine.register_view("fuzz", sql)
    except idivm.IdivmError as e:
        assert "\n" not in str(e) and str(e), sql
        assert "Traceback" not in str(e) and "sqlglot" not in str(e) and "<class" not in str(e), (sql, str(e))
        return
    try:
        assert engine.verify("fuzz").ok, sql
    finally:
        engine.drop_view("fuzz")
