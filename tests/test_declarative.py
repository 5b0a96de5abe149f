"""Declarative, idempotent registration (issue 18 item 3): register-view --replace and
--if-not-exists, `idivm apply DIR`, and the alembic operations op.register_view / op.drop_view."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

import idivm
from cli_runner import run_cli
from helpers import assert_equal_multiset

ORDERS = "SELECT o.id, o.customer, o.amount FROM orders o WHERE o.amount > 10"
PER_CUSTOMER = "SELECT customer, count(*) AS n, sum(amount) AS total FROM big_orders GROUP BY customer"


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount int NOT NULL)")
    db.execute("INSERT INTO orders SELECT g, g % 5, (g * 7) % 40 FROM generate_series(1, 60) g")
    return db


def _oid(db, name):
    return db.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]


def _write_and_check(engine, db, views):
    db.execute("INSERT INTO orders VALUES (100, 1, 33), (101, 2, 5)")
    db.execute("UPDATE orders SET amount = amount + 20 WHERE id % 3 = 0")
    db.execute("DELETE FROM orders WHERE id % 7 = 0")
    engine.maintain()
    for name, (sql, cols) in views.items():
        assert_equal_multiset(db, name, sql, cols)


def test_replace_does_nothing_when_unchanged_and_rebuilds_the_chain_when_changed(engine, shop):
    db = shop
    assert engine.register_view("big_orders", ORDERS) == "created"
    engine.register_view("per_customer", PER_CUSTOMER)
    engine.set_policy("per_customer", every=60)
    db.execute("CREATE ROLE idivm_test_reader")
    try:
        engine.grant("per_customer", "idivm_test_reader")
        before = _oid(db, "big_orders"), _oid(db, "per_customer")
        relaid = "select O.ID, o.customer,   o.amount\nFROM orders o WHERE o.amount > 10"
        assert engine.register_view("big_orders", relaid, replace=True) == "unchanged"
        assert (_oid(db, "big_orders"), _oid(db, "per_customer")) == before  # nothing was rebuilt
        changed = "SELECT o.id, o.customer, o.amount FROM orders o WHERE o.amount > 20"
        assert engine.register_view("big_orders", changed, replace=True) == "replaced"
        assert _oid(db, "per_customer") != before[1]  # the view over it was rebuilt in the same transaction
        flat = f"SELECT customer, count(*) AS n, sum(amount) AS total FROM ({changed}) q GROUP BY customer"
        views = {"big_orders": (changed, ["id", "customer", "amount"]), "per_customer": (flat, ["customer", "n", "total"])}
        for name, (sql, cols) in views.items():
            assert_equal_multiset(db, name, sql, cols)
        _write_and_check(engine, db, views)
        # its policy and the grants on its table are kept through the rebuild
        assert [s.policy.every for s in engine.status() if s.view.endswith("per_customer")] == [60]
        assert db.execute("SELECT has_table_privilege('idivm_test_reader', 'per_customer', 'SELECT')").fetchone()[0]
        engine.refresh("big_orders")
        assert db.execute("SELECT has_table_privilege('idivm_test_reader', 'per_customer', 'SELECT')").fetchone()[0]
    finally:
        db.execute("DROP OWNED BY idivm_test_reader")
        db.execute("DROP ROLE idivm_test_reader")


def test_a_replace_that_would_break_a_view_over_it_changes_nothing(engine, shop):
    db = shop
    engine.register_view("big_orders", ORDERS)
    engine.register_view("per_customer", PER_CUSTOMER)
    with pytest.raises(idivm.IdivmError, match="per_customer reads it and would no longer compile") as failure:
        engine.register_view("big_orders", "SELECT o.id, o.customer FROM orders o", replace=True)
    assert "\n" not in str(failure.value)
    flat = f"SELECT customer, count(*) AS n, sum(amount) AS total FROM ({ORDERS}) q GROUP BY customer"
    _write_and_check(engine, db, {"big_orders": (ORDERS, ["id", "customer", "amount"]),
                                  "per_customer": (flat, ["customer", "n", "total"])})


def test_if_not_exists_and_a_mode_or_strategy_change(engine, shop):
    db = shop
    engine.register_view("big_orders", ORDERS)
    assert engine.register_view("big_orders", "SELECT id FROM orders", if_not_exists=True) == "exists"
    assert engine.strategy_of("big_orders") == "id"
    assert engine.register_view("big_orders", ORDERS, mode="immediate", replace=True) == "replaced"
    assert [s.mode for s in engine.status()] == ["immediate"]
    assert engine.register_view("big_orders", ORDERS, strategy="tuple", mode="immediate", replace=True) == "replaced"
    assert engine.strategy_of("big_orders") == "tuple"
    db.execute("INSERT INTO orders VALUES (200, 3, 99)")  # immediate: no maintain needed
    assert_equal_multiset(db, "big_orders", ORDERS, ["id", "customer", "amount"])
    with pytest.raises(idivm.IdivmError, match="choose one of --replace and --if-not-exists"):
        engine.register_view("big_orders", ORDERS, replace=True, if_not_exists=True)


def cli(dsn, *args):
    return run_cli("--dsn", dsn, *args)


def test_apply_syncs_a_folder_in_dependency_order(engine, shop, fresh_db, tmp_path):
    db = shop
    (tmp_path / "per_customer.sql").write_text("-- idivm: strategy=tuple\n" + PER_CUSTOMER + "\n")
    (tmp_path / "big_orders.sql").write_text("-- the orders worth a look\n" + ORDERS + ";\n")
    engine.register_view("old_view", "SELECT id FROM orders")
    shown = cli(fresh_db, "apply", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "create" in shown.stdout and "--yes" in shown.stdout
    assert [s.view for s in engine.status()] == ["public.old_view"]  # a plan alone changes nothing
    plan = engine.plan_apply(tmp_path, prune=True)
    assert [(c.action, c.view) for c in plan] == [("create", "public.big_orders"), ("create", "public.per_customer"),
                                                  ("drop", "public.old_view")]
    done = cli(fresh_db, "apply", str(tmp_path), "--prune", "--yes")
    assert done.returncode == 0, done.stderr
    assert "created public.big_orders" in done.stdout and "dropped public.old_view" in done.stdout
    assert engine.strategy_of("per_customer") == "tuple"
    again = cli(fresh_db, "apply", str(tmp_path), "--prune", "--yes")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    # a column renamed in a view and in the view over it, together: one rebuild, both as their files say
    (tmp_path / "big_orders.sql").write_text(ORDERS.replace("o.amount FROM", "o.amount AS value FROM"))
    (tmp_path / "per_customer.sql").write_text(
        "-- idivm: strategy=tuple\n" + PER_CUSTOMER.replace("sum(amount)", "sum(value)"))
    assert [c.action for c in engine.plan_apply(tmp_path)] == ["replace", "replace"]
    engine.apply(engine.plan_apply(tmp_path))
    renamed = ORDERS.replace("o.amount FROM", "o.amount AS value FROM")
    flat = f"SELECT customer, count(*) AS n, sum(value) AS total FROM ({renamed}) q GROUP BY customer"
    _write_and_check(engine, db, {"big_orders": (renamed, ["id", "customer", "value"]),
                                  "per_customer": (flat, ["customer", "n", "total"])})
    # pruning a view a declared file still reads is refused before anything is done
    (tmp_path / "big_orders.sql").unlink()
    with pytest.raises(idivm.IdivmError, match=r"cannot prune public.big_orders: .*per_customer.sql reads it"):
        engine.plan_apply(tmp_path, prune=True)
    (tmp_path / "bad.sql").write_text("-- idivm: strategy=fast\nSELECT 1")
    with pytest.raises(idivm.IdivmError, match=r"bad.sql: strategy='fast'; choose one of"):
        engine.plan_apply(tmp_path)


def _ops(conn):
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    from idivm import migration_ops

    assert migration_ops.RegisterViewOp  # importing it registers op.register_view and op.drop_view
    return Operations(MigrationContext.configure(conn))


def test_alembic_operations_run_in_the_migration_transaction(fresh_db, shop):
    db = shop
    from idivm.dsn import sqlalchemy_url

    migrations = sa.create_engine(sqlalchemy_url(fresh_db))
    engine = idivm.connect(fresh_db)
    try:
        with pytest.raises(RuntimeError, match="migration failed"):
            with migrations.begin() as conn:
                op = _ops(conn)
                op.create_table("refunds", sa.Column("id", sa.Integer, primary_key=True), sa.Column("amount", sa.Integer))
                assert op.register_view("refunds_view", "SELECT id, amount FROM refunds") == "created"
                raise RuntimeError("migration failed")
        assert db.execute("SELECT to_regclass('refunds'), to_regclass('refunds_view')").fetchone() == (None, None)
        with migrations.begin() as conn:
            op = _ops(conn)
            assert op.register_view("big_orders", ORDERS) == "created"
            conn.execute(sa.text("INSERT INTO orders VALUES (300, 1, 50)"))  # after the view: logged and maintained
        engine.maintain()
        assert_equal_multiset(db, "big_orders", ORDERS, ["id", "customer", "amount"])
        with pytest.raises(idivm.IdivmError, match="register the view before writing to public.orders"):
            with migrations.begin() as conn:
                conn.execute(sa.text("INSERT INTO orders VALUES (301, 1, 50)"))  # logged: big_orders reads orders
                _ops(conn).register_view("also_big", ORDERS)
        with pytest.raises(idivm.IdivmError, match="unknown strategy 'fast'; choose one of"):
            with migrations.begin() as conn:
                _ops(conn).register_view("also_big", ORDERS, strategy="fast")
        with migrations.begin() as conn:  # the mode alone changes: rebuilt in the migration's transaction
            assert _ops(conn).register_view("big_orders", ORDERS, mode="immediate", replace=True) == "replaced"
            conn.execute(sa.text("INSERT INTO orders VALUES (302, 2, 70)"))
        assert [(s.view, s.mode) for s in engine.status()] == [("public.big_orders", "immediate")]
        assert_equal_multiset(db, "big_orders", ORDERS, ["id", "customer", "amount"])
        with migrations.begin() as conn:
            op = _ops(conn)
            assert op.register_view("big_orders", ORDERS, mode="immediate", replace=True) == "unchanged"
            op.invoke(_register_op("big_orders", ORDERS).reverse())  # a downgrade: drop_view
        assert db.execute("SELECT to_regclass('big_orders')").fetchone() == (None,)
        assert [s.view for s in engine.status()] == []
    finally:
        engine.close()
        migrations.dispose()


def _register_op(name, sql):
    from idivm.migration_ops import RegisterViewOp

    return RegisterViewOp(name, sql)
