"""A TRUNCATE, or an ALTER TABLE that rewrites a table, committed while a maintenance waits for that
table (issue 33, item 1; ../shared/repros/ddl_during_maintenance.py).

Neither is MVCC-safe: a transaction whose snapshot predates them reads the table as empty once their
lock is released, while its window of the logs does not hold their changes. Every entry point that
reads base tables must end with the view equal to its query: those that own their transaction
start it again, the one that runs in the caller's transaction refuses in one line and changes
nothing. Each test holds the DDL's transaction open, starts the maintenance, waits until it waits
for the table's lock (after it took its snapshot), then commits the DDL."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from helpers import assert_equal_multiset, spark_missing

SQL = "SELECT r.a, s.a AS sa, r.c + s.d AS cd FROM r JOIN s ON r.b < s.b WHERE r.c IS NOT NULL"
COLUMNS = ["a", "sa", "cd"]
DDL = {
    "truncate": ["TRUNCATE r", "INSERT INTO r SELECT g, g % 5, g FROM generate_series(1, 10) g"],
    "rewrite": ["ALTER TABLE r ADD COLUMN z float DEFAULT random()"],  # a column no view reads
}


@pytest.fixture
def tables(db):
    db.execute("CREATE TABLE r (a int PRIMARY KEY, b int, c int)")
    db.execute("CREATE TABLE s (a int PRIMARY KEY, b int, d int)")
    db.execute("INSERT INTO r SELECT g, g % 5, g FROM generate_series(1, 10) g")
    db.execute("INSERT INTO s SELECT g, g % 7, g FROM generate_series(1, 10) g")
    return db


def _during_ddl(db, dsn: str, ddl: str, action) -> list[BaseException]:
    """Run `action` in a thread while a transaction that ran `ddl` holds r; commit that transaction
    once the action waits for r's lock. Returns what the action raised."""
    writer = psycopg.connect(dsn)
    for statement in DDL[ddl]:
        writer.execute(statement)
    holder = writer.execute("SELECT pg_backend_pid()").fetchone()[0]
    raised: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as e:
            raised.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    try:
        while not db.execute("SELECT count(*) FROM pg_locks WHERE relation = 'r'::regclass AND NOT granted AND pid <> %s "
                             "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                             (holder,)).fetchone()[0]:
            assert thread.is_alive() and time.monotonic() < deadline, f"the action never waited for r: {raised}"
            time.sleep(0.02)
        writer.commit()
    finally:
        writer.close()
        thread.join(120)
    return raised


def _changed_s(db) -> None:
    db.execute("UPDATE s SET d = d + 100 WHERE a = 3")  # the maintenance rewrites the view rows of s 3


def _in_callers_transaction(dsn: str) -> None:
    with psycopg.connect(dsn) as c:
        c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        c.execute("SELECT * FROM idivm.maintain('v')")
        c.commit()


ENTRY_POINTS = {
    "api": lambda engine, dsn: engine.maintain("v"),  # CALL idivm.maintain_call
    "maintain_all": lambda engine, dsn: psycopg.connect(dsn, autocommit=True).execute("CALL idivm.maintain_all()"),
    "verify": lambda engine, dsn: engine.verify("v"),  # a client transaction around maintain_locked
    "spark": lambda engine, dsn: engine.maintain("v", engine="spark"),  # statement by statement, reads in Spark
}


@pytest.mark.parametrize("ddl", sorted(DDL))
@pytest.mark.parametrize("strategy", ["id", "tuple", "higher-order"])
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_maintenance_that_waited_for_the_ddl_starts_again(fresh_db, engine, tables, entry, strategy, ddl):
    if entry == "spark" and spark_missing(fresh_db):
        pytest.skip(spark_missing(fresh_db))
    engine.register_view("v", SQL, strategy=strategy)
    _changed_s(tables)
    raised = _during_ddl(tables, fresh_db, ddl, lambda: ENTRY_POINTS[entry](engine, fresh_db))
    assert not raised, raised
    assert_equal_multiset(tables, "v", SQL, COLUMNS)  # what that maintenance consumed, applied to what it read
    engine.maintain("v")
    assert_equal_multiset(tables, "v", SQL, COLUMNS)


@pytest.mark.parametrize("ddl", sorted(DDL))
def test_maintain_in_the_callers_transaction_refuses_in_one_line(fresh_db, engine, tables, ddl):
    """The caller's snapshot cannot be taken again: the call fails as a serialization failure (what
    applications retry), names the table, and leaves the view and the log as they were."""
    engine.register_view("v", SQL)
    _changed_s(tables)
    before = sorted(tables.execute("SELECT * FROM v").fetchall())
    pending = engine.list()[0]["pending"]
    [raised] = _during_ddl(tables, fresh_db, ddl, lambda: _in_callers_transaction(fresh_db))
    assert isinstance(raised, psycopg.errors.SerializationFailure), raised
    message = raised.diag.message_primary
    assert "public.r" in message and "\n" not in message and "new transaction" in message, message
    assert sorted(tables.execute("SELECT * FROM v").fetchall()) == before
    assert engine.list()[0]["pending"] >= pending
    _in_callers_transaction(fresh_db)
    assert_equal_multiset(tables, "v", SQL, COLUMNS)


@pytest.mark.parametrize("ddl", sorted(DDL))
@pytest.mark.parametrize("entry", ["register", "refresh"])
def test_a_fill_that_waited_for_the_ddl_reads_what_it_committed(fresh_db, engine, tables, entry, ddl):
    """Registration and refresh lock their base tables before their snapshot (engines/postgres/table_locks.py):
    a DDL committed while they wait is in what they read."""
    if entry == "refresh":
        engine.register_view("v", SQL)
        _changed_s(tables)
        action = lambda: engine.refresh("v")
    else:
        action = lambda: engine.register_view("v", SQL)
    raised = _during_ddl(tables, fresh_db, ddl, action)
    assert not raised, raised
    assert_equal_multiset(tables, "v", SQL, COLUMNS)
    tables.execute("UPDATE r SET c = c + 1 WHERE a < 4")
    engine.maintain("v")
    assert_equal_multiset(tables, "v", SQL, COLUMNS)


@pytest.mark.parametrize("ddl", sorted(DDL))
def test_registration_in_a_callers_older_snapshot_refuses(fresh_db, engine, tables, ddl):
    """op.register_view runs in the caller's transaction (CallerTransaction, operate/registration.py): at REPEATABLE READ its
    snapshot may predate a DDL that committed before the registration locked the tables, and the
    fill would read the table as empty. It refuses in one line; nothing is created."""
    import sqlalchemy as sa

    from idivm.errors import IdivmError
    from idivm.engines.postgres.materialize import create_as
    from idivm.operate.registration import Request, register
    from idivm.operate.transactions import CallerTransaction

    with engine.sa.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
        with conn.begin():
            conn.execute(sa.text("SELECT count(*) FROM s"))  # the snapshot
            with psycopg.connect(fresh_db) as writer:
                for statement in DDL[ddl]:
                    writer.execute(statement)
            with pytest.raises(IdivmError, match="public.r was truncated or rewritten after its snapshot") as e:
                register(CallerTransaction(conn), Request("v", SQL), create_as)
            assert "\n" not in str(e.value)
    assert engine.list() == []
    engine.register_view("v", SQL)  # in a transaction of its own, it reads what the DDL committed
    assert_equal_multiset(tables, "v", SQL, COLUMNS)
