"""An application role that may only write its own tables keeps working once views are registered."""
from __future__ import annotations

import uuid

import psycopg

from helpers import assert_equal_multiset

SQL = "SELECT p.pid, p.price FROM parts AS p WHERE p.price > 5"


def test_low_privilege_writer_is_captured_and_cannot_touch_idivm(engine, db):
    role = f"idivm_app_{uuid.uuid4().hex[:8]}"
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric)")
    db.execute(f"CREATE ROLE {role} NOLOGIN")
    try:
        db.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        db.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON parts TO {role}")
        engine.register_view("v", SQL)
        with db.transaction():
            db.execute(f"SET LOCAL ROLE {role}")
            db.execute("INSERT INTO parts VALUES (1, 10), (2, 3)")
            db.execute("UPDATE parts SET price = 7 WHERE pid = 2")
        with db.transaction():
            db.execute(f"SET LOCAL ROLE {role}")
            for forbidden in ("SELECT * FROM idivm.log_1", "SELECT * FROM idivm.derivations",
                              "DELETE FROM idivm.views"):
                try:
                    with db.transaction():
                        db.execute(forbidden)
                    raise AssertionError(f"{role} could run: {forbidden}")
                except psycopg.errors.InsufficientPrivilege:
                    pass
        engine.maintain("v")
        assert_equal_multiset(db, "v", SQL, ["pid", "price"])
        with db.transaction():
            db.execute(f"SET LOCAL ROLE {role}")
            db.execute("TRUNCATE parts")
        engine.maintain("v")
        assert db.execute("SELECT count(*) FROM v").fetchone()[0] == 0
    finally:
        db.execute(f"DROP OWNED BY {role}")
        db.execute(f"DROP ROLE {role}")
