"""Views over maintained views: a chain (SPJ view -> grouped view -> filter over it) stays equal to
recomputation under random modification streams when maintained all at once (dependency order), and
through the scheduler; a view that others read cannot be dropped."""
from __future__ import annotations

import io
import random

import pytest

import idivm
from helpers import assert_equal_multiset
from idivm.operate.worker import Worker

CHAIN = {  # registered in this order; each reads the one before
    "cheap": ("SELECT p.pid, p.cat, p.price, s.name FROM parts p JOIN suppliers s ON s.sid = p.sid "
              "WHERE p.price < 80", ["pid", "cat", "price", "name"]),
    "per_cat": ("SELECT cat, count(*) AS n, sum(price) AS total FROM cheap GROUP BY cat", ["cat", "n", "total"]),
    "big_cats": ("SELECT cat, total FROM per_cat WHERE n >= 3", ["cat", "total"]),
}
# the same views written over the base tables only: what each must equal
FLAT = {
    "cheap": CHAIN["cheap"][0],
    "per_cat": f"SELECT cat, count(*) AS n, sum(price) AS total FROM ({CHAIN['cheap'][0]}) AS c GROUP BY cat",
}
FLAT["big_cats"] = f"SELECT cat, total FROM ({FLAT['per_cat']}) AS g WHERE n >= 3"


def _setup(engine, db):
    db.execute("CREATE TABLE suppliers (sid int PRIMARY KEY, name text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, cat text NOT NULL, price int NOT NULL)")
    db.execute("INSERT INTO suppliers SELECT g, 's' || g FROM generate_series(1, 5) g")
    db.execute("INSERT INTO parts SELECT g, 1 + g % 5, 'c' || (g % 4), (g * 37) % 100 FROM generate_series(1, 60) g")
    for name, (sql, _) in CHAIN.items():
        engine.register_view(name, sql)


def _modify(db, rng: random.Random, pids: list[int]) -> None:
    with db.transaction():
        for _ in range(rng.randint(1, 8)):
            op = rng.random()
            if op < 0.3:
                pid = max(pids) + 1
                pids.append(pid)
                db.execute("INSERT INTO parts VALUES (%s, %s, %s, %s)",
                           (pid, rng.randint(1, 5), f"c{rng.randint(0, 5)}", rng.randint(0, 99)))
            elif op < 0.6 and pids:
                db.execute("UPDATE parts SET price = %s WHERE pid = %s", (rng.randint(0, 99), rng.choice(pids)))
            elif op < 0.7 and pids:
                db.execute("UPDATE parts SET cat = %s WHERE pid = %s", (f"c{rng.randint(0, 5)}", rng.choice(pids)))
            elif op < 0.85 and pids:
                pid = rng.choice(pids)
                pids.remove(pid)
                db.execute("DELETE FROM parts WHERE pid = %s", (pid,))
            else:
                db.execute("UPDATE suppliers SET name = %s WHERE sid = %s", (f"s{rng.randint(0, 99)}", rng.randint(1, 5)))


def _check(db):
    for name, (_, cols) in CHAIN.items():
        assert_equal_multiset(db, name, CHAIN[name][0], cols)  # its own definition, over its inputs
        assert_equal_multiset(db, name, FLAT[name], cols)  # and the whole chain, over the base tables


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chain_maintained_in_dependency_order(engine, db, seed):
    _setup(engine, db)
    rng = random.Random(seed)
    pids = list(range(1, 61))
    for _ in range(8):
        _modify(db, rng, pids)
        reports = engine.maintain()  # all views: inputs first
        assert [r.view for r in reports] == ["public.cheap", "public.per_cat", "public.big_cats"]
        _check(db)


@pytest.mark.parametrize("top", ["immediate", "deferred"])
def test_views_over_an_immediate_grouped_view_see_what_it_merges(engine, db, top):
    """per_cat applies its per-group sums with one MERGE that deletes, updates and inserts groups:
    the capture of its table must see all three, for a view over it maintained immediately (in the
    writer's transaction, a further round) and for one maintained deferred (from the log)."""
    _setup(engine, db)
    engine.set_mode("cheap", "immediate")
    engine.set_mode("per_cat", "immediate")
    if top == "immediate":
        engine.set_mode("big_cats", "immediate")
    rng = random.Random(7)
    pids = list(range(1, 61))
    db.execute("UPDATE parts SET cat = 'c9' WHERE pid = 5")  # a group created
    db.execute("DELETE FROM parts WHERE cat = 'c0'")  # a group deleted
    pids = [p for (p,) in db.execute("SELECT pid FROM parts").fetchall()]
    for _ in range(10):
        _modify(db, rng, pids)
        if top == "deferred":
            engine.maintain("big_cats")
        _check(db)


def test_one_scheduler_pass_carries_a_change_up_the_chain(engine, db):
    _setup(engine, db)
    db.execute("UPDATE parts SET price = 1 WHERE pid <= 20")
    out = io.StringIO()
    assert Worker(engine, once=True, out=out).run() == 0
    maintained = [line for line in out.getvalue().splitlines() if '"maintained"' in line]
    assert len(maintained) == 3
    _check(db)


def test_a_view_others_read_cannot_be_dropped(engine, db):
    _setup(engine, db)
    with pytest.raises(idivm.IdivmError, match=r'cannot drop "per_cat": the maintained view\(s\) public.big_cats read it'):
        engine.drop_view("per_cat")
    assert db.execute("SELECT count(*) FROM per_cat").fetchone()[0] > 0  # nothing was dropped
    engine.drop_view("big_cats")
    engine.drop_view("per_cat")
    engine.drop_view("cheap")
    assert db.execute("SELECT count(*) FROM idivm.captured_tables").fetchone()[0] == 0


def test_a_grouped_view_with_nullable_keys_cannot_be_read_by_another(engine, db):
    db.execute("CREATE TABLE t (id int PRIMARY KEY, g int, x int)")
    engine.register_view("by_g", "SELECT g, count(*) AS n FROM t GROUP BY g")
    with pytest.raises(idivm.IdivmError, match='table "public.by_g" has no primary key'):
        engine.register_view("over", "SELECT g, n FROM by_g")
