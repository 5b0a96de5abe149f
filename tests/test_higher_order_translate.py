"""Views translated to AGCA (strategies/higher_order/translate.py) mean what PostgreSQL computes: the
reference evaluator run on the tables' rows gives the view's rows (SPJ: each row with its
duplicates' count; grouped: COUNT, SUM and AVG per group), on random data. What is not translated
yet is refused with one line naming it."""
from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import pytest

from idivm.calculus.evaluate import evaluate
from idivm.errors import UnsupportedQuery
from idivm.frontend.driver import compile_view_sql
from idivm.introspect.provider import PostgresSchema
from idivm.strategies.higher_order.scope import SlotValue, Variable
from idivm.strategies.higher_order.translate import translate

VIEWS = [
    "SELECT d.did, p.pid, p.price FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
    "JOIN devices d ON d.did = dp.did WHERE d.category = 'phone'",
    "SELECT d.category, p.price FROM parts p, devices_parts dp, devices d WHERE dp.pid = p.pid AND d.did = dp.did",
    "SELECT did, pid FROM devices_parts NATURAL JOIN parts WHERE price > 3 AND price <= 8",
    "SELECT d.category, COUNT(*) AS n, SUM(p.price) AS total, AVG(p.price) AS mean FROM parts p "
    "JOIN devices_parts dp ON dp.pid = p.pid JOIN devices d ON d.did = dp.did GROUP BY d.category",
    "SELECT dp.did, SUM(p.price) AS cost, COUNT(p.price) AS k FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
    "WHERE p.price <> 5 GROUP BY dp.did",
    "SELECT COUNT(*) AS n, SUM(price) AS s FROM parts WHERE price >= 2",
]


def _value(v):
    return Fraction(v) if isinstance(v, (Decimal, int)) else v


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric NOT NULL)")
    db.execute("CREATE TABLE devices_parts (did int, pid int, PRIMARY KEY (did, pid))")
    return db


def _load(db) -> dict:
    out = {}
    for t in ("devices", "parts", "devices_parts"):
        rows = db.execute(f"SELECT * FROM {t}").fetchall()
        out[f"public.{t}"] = dict(Counter(tuple(_value(v) for v in r) for r in rows))
    return {k: {t: Fraction(m) for t, m in v.items()} for k, v in out.items()}


@pytest.mark.parametrize("seed", range(4))
def test_translated_views_evaluate_to_what_postgresql_computes(engine, shop, seed):
    rng = random.Random(seed)
    for d in range(1, 9):
        shop.execute("INSERT INTO devices VALUES (%s, %s)", (d, rng.choice(["phone", "tablet", "watch"])))
    for p in range(1, 13):
        shop.execute("INSERT INTO parts VALUES (%s, %s)", (p, rng.choice([1, 2, 5, Decimal("7.5"), 9])))
    for d in range(1, 9):
        for p in rng.sample(range(1, 13), rng.randint(0, 5)):
            shop.execute("INSERT INTO devices_parts VALUES (%s, %s)", (d, p))
    with engine.sa.connect() as conn:
        compiled = [compile_view_sql(PostgresSchema(conn), sql) for sql in VIEWS]
    db = _load(shop)
    for sql, view in zip(VIEWS, compiled):
        t = translate(view.plan)
        # maps of scales only say how a numeric sum is shown (view_table.py), through scale(x), SQL
        # the reference evaluator does not interpret; the values compared here are exact fractions
        shown_only = {m for s in t.slots.values() for m in s.maps[2:]}
        maps = {name: evaluate(q, db) for name, q in t.maps.items() if name not in shown_only}

        def value(e, key):
            if Variable.marks(e):
                return dict(key)[e.name]
            s = t.slots[e.name]
            if s.kind == "count":
                return maps[s.maps[0]].get(key, Fraction(0))
            count = maps[s.maps[1]].get(key)
            if not count:
                return None
            total = maps[s.maps[0]].get(key, Fraction(0))
            return total if s.kind == "sum" else round(total / count, 10)  # numeric avg: compare to 10 places

        got = Counter()
        keys = list(maps["count"]) if t.group else [()]
        for key in keys:
            row = tuple(value(e, key) for _, e in t.outputs)
            got[row] += 1 if t.grouped else maps["count"][key]
        rows = shop.execute(sql).fetchall()
        avg = [SlotValue.marks(e) and t.slots[e.name].kind == "avg" for _, e in t.outputs]
        want = Counter(tuple(round(_value(v), 10) if a and v is not None else _value(v) for v, a in zip(r, avg))
                       for r in rows)
        assert got == want, sql


@pytest.mark.parametrize("sql, construct", [
    ("SELECT category, MIN(did) AS m FROM devices GROUP BY category", None),
    ("SELECT category, SUM(DISTINCT did) AS m, AVG(DISTINCT did) AS a FROM devices GROUP BY category", None),
    ("SELECT d.did, q.n FROM devices d JOIN (SELECT category, COUNT(*) AS n FROM devices GROUP BY category) AS q "
     "ON q.category = d.category", "a subquery that aggregates"),
    ("SELECT pid % 2 AS odd, COUNT(*) AS n FROM parts GROUP BY pid % 2", None),
    ("SELECT category, COUNT(DISTINCT did) AS n FROM devices GROUP BY category", None),
    ("SELECT pid FROM parts WHERE EXISTS (SELECT 1 FROM devices_parts dp WHERE dp.pid = parts.pid)", None),
    ("SELECT pid FROM parts UNION ALL SELECT did FROM devices", None),
    ("SELECT did, pid FROM devices_parts WHERE pid > 2 OR did IS NULL", None),
    ("SELECT pid, price * 2 AS p2 FROM parts", None),
    ("SELECT category, COUNT(*) AS n FROM devices GROUP BY category HAVING COUNT(*) > 1", None),
])
def test_what_is_not_translated_yet_is_refused_by_name(engine, shop, sql, construct):
    with engine.sa.connect() as conn:
        plan = compile_view_sql(PostgresSchema(conn), sql).plan
    if construct is None:
        translate(plan)
    else:
        with pytest.raises(UnsupportedQuery, match=construct):
            translate(plan)


def test_nullable_arguments_get_their_own_count_maps(engine, shop):
    """SUM(x) of a nullable x is NULL where no x is not NULL: its COUNT(x) map says where."""
    shop.execute("CREATE TABLE loose (k int PRIMARY KEY, g int, x int)")
    with engine.sa.connect() as conn:
        plan = compile_view_sql(PostgresSchema(conn), "SELECT g, SUM(x) AS s, COUNT(x) AS c FROM loose GROUP BY g").plan
    t = translate(plan)
    assert t.nullable == {"loose.g"}
    (sum_slot, count_slot) = (t.slots[e.name] for _, e in t.outputs[1:])
    assert sum_slot.kind == "sum" and sum_slot.maps[1] == count_slot.maps[0] != "count"
    assert "IS NULL" in str(t.maps[count_slot.maps[0]])
