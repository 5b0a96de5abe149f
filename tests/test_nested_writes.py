"""Writes that nest inside other writes: user triggers that write (to their own table and to others,
several levels deep), foreign-key cascades in both directions (self-referencing ON UPDATE CASCADE,
ON DELETE CASCADE / SET NULL to another table), deferred constraint triggers that write at commit,
savepoints rolled back, and writes under session_replication_role = replica. A statement-level
trigger fires when its statement ends, so a nested write is logged before the write that caused it,
and PostgreSQL merges cascaded rows into the outer statement's transition tables: the log's order
and the pairing of its rows mean nothing, and every view must still equal its query, under every
strategy and mode (capture/fold.py, engines/postgres/immediate.py)."""
from __future__ import annotations

import random

import psycopg
import pytest

from helpers import assert_equal_multiset

SCHEMA = """
CREATE TABLE parent (id int PRIMARY KEY, name text NOT NULL, total int NOT NULL DEFAULT 0);
CREATE TABLE child (cid int PRIMARY KEY, pid int REFERENCES parent(id) ON UPDATE CASCADE ON DELETE CASCADE,
                    qty int);
CREATE TABLE node (a int PRIMARY KEY, b int REFERENCES node(a) ON UPDATE CASCADE ON DELETE SET NULL, v int);
CREATE TABLE audit (n int PRIMARY KEY, what text);
-- level 1: child changes keep parent.total (another table); level 2: parent changes are audited
CREATE FUNCTION child_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN UPDATE parent SET total = total - coalesce(OLD.qty, 0) WHERE id = OLD.pid; END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN UPDATE parent SET total = total + coalesce(NEW.qty, 0) WHERE id = NEW.pid; END IF;
  RETURN NULL;
END$$;
CREATE TRIGGER a_child_total AFTER INSERT OR UPDATE OR DELETE ON child FOR EACH ROW EXECUTE FUNCTION child_total();
CREATE FUNCTION parent_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit SELECT coalesce(max(n), 0) + 1, NEW.name || ':' || NEW.total FROM audit;
  RETURN NULL;
END$$;
CREATE TRIGGER a_parent_audit AFTER UPDATE ON parent FOR EACH ROW EXECUTE FUNCTION parent_audit();
-- a trigger that writes to its own table, after the row that fired it
CREATE FUNCTION node_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE node SET v = coalesce(v, 0) + 1 WHERE a = NEW.a; RETURN NULL; END$$;
CREATE TRIGGER a_node_bump AFTER INSERT ON node FOR EACH ROW EXECUTE FUNCTION node_bump();
-- at commit, doubles each inserted child's qty
CREATE FUNCTION child_double() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE child SET qty = qty * 2 WHERE cid = NEW.cid; RETURN NULL; END$$;
CREATE CONSTRAINT TRIGGER child_double AFTER INSERT ON child DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION child_double();
INSERT INTO parent SELECT g, 'p' || (g % 3), 0 FROM generate_series(1, 6) g;
INSERT INTO node VALUES (1, NULL, 0), (2, 1, 0), (3, 2, 0), (4, 2, 0);
"""

VIEWS = {
    "family": ("SELECT p.id, p.name, p.total, c.cid, c.qty FROM parent p JOIN child c ON c.pid = p.id",
               ["id", "name", "total", "cid", "qty"]),
    "sums": ("SELECT p.name, count(*) AS n, sum(c.qty) AS q, max(p.total) AS t FROM parent p "
             "JOIN child c ON c.pid = p.id GROUP BY p.name", ["name", "n", "q", "t"]),
    "nodes": ("SELECT a, b, v FROM node", ["a", "b", "v"]),
    "links": ("SELECT n1.a, n1.b, n2.v FROM node n1 JOIN node n2 ON n2.a = n1.b", ["a", "b", "v"]),
    "audited": ("SELECT what, count(*) AS n FROM audit GROUP BY what", ["what", "n"]),
}


@pytest.fixture
def nested(db):
    db.execute(SCHEMA)
    return db


def _check(db):
    for name, (sql, cols) in VIEWS.items():
        assert_equal_multiset(db, name, sql, cols)


def _register(engine, strategy, mode):
    for name, (sql, _) in VIEWS.items():
        engine.register_view(name, sql, strategy=strategy, mode=mode)


def _maintain(engine, mode):
    if mode == "deferred":
        engine.maintain()


CASES = [("id", "deferred"), ("tuple", "deferred"), ("id", "immediate"), ("tuple", "immediate")]


@pytest.mark.parametrize("strategy,mode", CASES)
def test_trigger_writing_its_own_table(engine, db, strategy, mode):
    """Issue 12, item 1: the nested UPDATE is logged before the INSERT that fired it."""
    db.execute("CREATE TABLE t (k int PRIMARY KEY, i int)")
    db.execute("CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS "
               "$$BEGIN UPDATE t SET i = i + 1 WHERE k = NEW.k; RETURN NULL; END$$")
    db.execute("CREATE TRIGGER bump AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION bump()")
    engine.register_view("v", "SELECT k, i FROM t", strategy=strategy, mode=mode)
    db.execute("INSERT INTO t VALUES (1, 1)")
    _maintain(engine, mode)
    assert db.execute("SELECT k, i FROM v").fetchall() == [(1, 2)]


@pytest.mark.parametrize("strategy,mode", CASES)
def test_self_referencing_on_update_cascade(engine, db, strategy, mode):
    """Issue 12, item 2: cascaded rows are merged into the outer statement's transition tables, so
    one key appears twice on each side; pairing old and new rows by key lost them."""
    db.execute("CREATE TABLE t (a int PRIMARY KEY, b int REFERENCES t(a) ON UPDATE CASCADE)")
    db.execute("INSERT INTO t VALUES (1, NULL), (2, 1), (3, 2), (4, 2)")
    engine.register_view("v", "SELECT a, b FROM t", strategy=strategy, mode=mode)
    db.execute("UPDATE t SET a = a + 10")
    _maintain(engine, mode)
    assert_equal_multiset(db, "v", "SELECT a, b FROM t", ["a", "b"])
    assert sorted(db.execute("SELECT a, b FROM v").fetchall()) == [(11, None), (12, 11), (13, 12), (14, 12)]


@pytest.mark.parametrize("strategy,mode", CASES)
def test_replica_role_writes_are_captured(engine, db, strategy, mode):
    """Capture and immediate triggers fire under session_replication_role = replica (logical
    replication's apply workers), where ordinary triggers do not."""
    db.execute("CREATE TABLE t (k int PRIMARY KEY, i int)")
    engine.register_view("v", "SELECT k, i FROM t", strategy=strategy, mode=mode)
    with db.transaction():
        db.execute("SET LOCAL session_replication_role = replica")
        db.execute("INSERT INTO t VALUES (1, 1), (2, 2)")
        db.execute("UPDATE t SET i = 5 WHERE k = 1")
    _maintain(engine, mode)
    assert_equal_multiset(db, "v", "SELECT k, i FROM t", ["k", "i"])


def _random_transaction(db, rng: random.Random) -> None:
    try:
        with db.transaction():
            if rng.random() < 0.1:
                db.execute("SET LOCAL session_replication_role = replica")  # no user triggers, no cascades
            for _ in range(rng.randint(1, 4)):
                op = rng.randrange(10)
                try:
                    with db.transaction():  # a savepoint: a failing statement rolls back alone
                        if op == 0:
                            db.execute("INSERT INTO child VALUES (%s, %s, %s)",
                                       (rng.randint(1, 40), rng.randint(1, 8), rng.choice([None, rng.randint(0, 9)])))
                        elif op == 1:
                            db.execute("UPDATE child SET qty = %s WHERE cid %% 5 = %s", (rng.randint(0, 9), rng.randrange(5)))
                        elif op == 2:
                            db.execute("UPDATE child SET pid = %s WHERE cid = %s", (rng.randint(1, 8), rng.randint(1, 40)))
                        elif op == 3:
                            db.execute("DELETE FROM child WHERE cid = %s", (rng.randint(1, 40),))
                        elif op == 4:  # cascades to child, which updates parent again through its trigger
                            db.execute("UPDATE parent SET id = id + 10 WHERE id = %s", (rng.randint(1, 20),))
                        elif op == 5:
                            db.execute("DELETE FROM parent WHERE id = %s", (rng.randint(1, 20),))
                        elif op == 6:
                            db.execute("INSERT INTO parent VALUES (%s, %s, 0)", (rng.randint(1, 20), f"p{rng.randrange(3)}"))
                        elif op == 7:
                            db.execute("INSERT INTO node VALUES (%s, %s, 0)",
                                       (rng.randint(1, 30), rng.choice([None, rng.randint(1, 30)])))
                        elif op == 8:  # self-referencing ON UPDATE CASCADE
                            db.execute("UPDATE node SET a = a + %s WHERE a %% 3 = %s", (rng.choice([10, 20]), rng.randrange(3)))
                        else:  # ON DELETE SET NULL
                            db.execute("DELETE FROM node WHERE a = %s", (rng.randint(1, 30),))
                        if rng.random() < 0.15:
                            raise RuntimeError("roll back to the savepoint")
                except (psycopg.errors.IntegrityError, RuntimeError):
                    pass
            if rng.random() < 0.15:
                raise RuntimeError("roll back")
    except RuntimeError:
        pass


@pytest.mark.parametrize("strategy,mode", CASES)
def test_random_nested_writes(engine, nested, strategy, mode):
    _register(engine, strategy, mode)
    rng = random.Random(f"{strategy}-{mode}")
    for _ in range(30):
        _random_transaction(nested, rng)
        _maintain(engine, mode)
        _check(nested)
    assert nested.execute("SELECT count(*) FROM audit").fetchone()[0] > 0  # nested writes did happen


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_upsert_and_merge_statements_in_immediate_mode(engine, db, strategy):
    """ON CONFLICT DO UPDATE and MERGE fire the statement triggers of several events at once: the
    immediate view is applied once all of them have fired."""
    db.execute("CREATE TABLE t (k int PRIMARY KEY, i int)")
    db.execute("CREATE TABLE src (k int PRIMARY KEY, i int)")
    db.execute("INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
    db.execute("INSERT INTO src VALUES (2, 20), (3, NULL), (4, 40)")
    engine.register_view("v", "SELECT k, i FROM t WHERE i IS NULL OR i > 1", strategy=strategy, mode="immediate")
    db.execute("INSERT INTO t VALUES (1, 10), (5, 5) ON CONFLICT (k) DO UPDATE SET i = excluded.i")
    assert_equal_multiset(db, "v", "SELECT k, i FROM t WHERE i IS NULL OR i > 1", ["k", "i"])
    db.execute("MERGE INTO t USING src ON src.k = t.k WHEN MATCHED AND src.i IS NULL THEN DELETE "
               "WHEN MATCHED THEN UPDATE SET i = src.i WHEN NOT MATCHED THEN INSERT VALUES (src.k, src.i)")
    assert_equal_multiset(db, "v", "SELECT k, i FROM t WHERE i IS NULL OR i > 1", ["k", "i"])
    assert db.execute("SELECT current_setting('idivm.open_statements', true)").fetchone()[0] in ("", "0", None)
