"""An application role that may only write its base tables keeps working with capture on (and with
an immediate view maintained by its own statements), cannot
read or write idivm's schema (catalog, logs, Δ-scripts, caches), cannot redirect capture with
look-alike objects on its search_path, and reads a view only once granted."""
from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from helpers import assert_equal_multiset

SQL = "SELECT category, sum(price) AS total, count(*) AS n FROM parts GROUP BY category"


@pytest.fixture
def app_role(db, fresh_db):
    """A LOGIN role with rights on the base table only; its DSN."""
    role = f"idivm_app_{uuid.uuid4().hex[:8]}"
    db.execute(f'CREATE ROLE "{role}" LOGIN')
    params = conninfo_to_dict(fresh_db)
    params["user"] = role
    try:
        with psycopg.connect(make_conninfo(**params)):
            pass
    except psycopg.OperationalError as e:
        db.execute(f'DROP ROLE "{role}"')
        pytest.skip(f"the test server does not let a new role log in without a password: {e}")
    yield role, make_conninfo(**params)
    db.execute(f'DROP OWNED BY "{role}"')
    db.execute(f'DROP ROLE "{role}"')


def test_low_privilege_writer(engine, db, fresh_db, app_role):
    role, dsn = app_role
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, category text, price int)")
    db.execute("INSERT INTO parts SELECT g, 'c' || (g % 3), g FROM generate_series(1, 30) g")
    db.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON parts TO "{role}"')
    db.execute(f'CREATE SCHEMA evil AUTHORIZATION "{role}"')  # a schema the application controls
    engine.register_view("totals", SQL)
    engine.register_view("totals_now", SQL, mode="immediate")  # its triggers run with the writer's statements

    with psycopg.connect(dsn, autocommit=True) as app:
        # look-alikes of what the capture function calls, first on the application's search_path
        app.execute("CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{}'::jsonb $$")
        app.execute("CREATE FUNCTION evil.pg_current_xact_id() RETURNS xid8 LANGUAGE sql AS $$ SELECT '1'::xid8 $$")
        app.execute("CREATE TABLE evil.log_1 (xid xid8, seq bigint, old_row jsonb, new_row jsonb, logged_at timestamptz)")
        # and of the operators and functions it uses, each failing the write if it were called; the
        # path lists them before pg_catalog itself, so only names qualified by pg_catalog escape them
        app.execute("CREATE FUNCTION evil.hijacked(text, text) RETURNS boolean LANGUAGE plpgsql "
                    "AS $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$")
        app.execute("CREATE FUNCTION evil.hijacked8(bigint, bigint) RETURNS bigint LANGUAGE plpgsql "
                    "AS $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$")
        for op in ("=", "<>"):
            app.execute(f"CREATE OPERATOR evil.{op} (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.hijacked)")
        for op in ("/", "-"):
            app.execute(f"CREATE OPERATOR evil.{op} (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.hijacked8)")
        app.execute("CREATE FUNCTION evil.hijacked_eq8(bigint, bigint) RETURNS boolean LANGUAGE plpgsql "
                    "AS $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$")
        app.execute("CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.hijacked_eq8)")
        app.execute("SET search_path = evil, pg_catalog, public")
        app.execute("INSERT INTO parts VALUES (100, 'c1', 7), (101, 'new', 5)")
        app.execute("UPDATE parts SET price = price * 2 WHERE pid <= 10")
        app.execute("DELETE FROM parts WHERE pid BETWEEN 20 AND 25")
        assert app.execute("SELECT count(*) FROM evil.log_1").fetchone()[0] == 0  # not redirected

        for query in ["SELECT * FROM idivm.views", "SELECT * FROM idivm.log_1", "SELECT * FROM idivm.derivations",
                      "DELETE FROM idivm.log_1", "INSERT INTO idivm.log_1 (old_row, new_row) VALUES (NULL, '{}')",
                      "UPDATE idivm.views SET last_snapshot = ''", "SELECT idivm.prune_log_1('0', '9999999')",
                      "SELECT * FROM public.totals"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(query)

    assert_equal_multiset(db, "totals_now", SQL, ["category", "total", "n"])  # fresh without maintenance
    engine.maintain("totals")
    assert_equal_multiset(db, "totals", SQL, ["category", "total", "n"])

    engine.grant("totals", role)
    with psycopg.connect(dsn, autocommit=True) as app:
        assert app.execute("SELECT count(*) FROM public.totals").fetchone()[0] == 4
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("UPDATE public.totals SET n = 0")


def test_grant_names_unknown_roles_and_views(engine, db):
    import idivm

    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, category text, price int)")
    engine.register_view("totals", SQL)
    with pytest.raises(idivm.IdivmError, match='role "nobody_here" does not exist'):
        engine.grant("totals", "nobody_here")
    with pytest.raises(idivm.IdivmError, match='no maintained view named "nope"'):
        engine.grant("nope", "postgres")
