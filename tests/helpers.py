"""Shared checks: the view equals its recomputed query, as a multiset, computed independently of idivm."""
from __future__ import annotations

from collections import Counter
from decimal import Decimal

# Spark settings the tests run with (conftest.py says why) and one test runs without
CODEGEN_OFF = "spark.sql.codegen.wholeStage=false spark.sql.codegen.factoryMode=NO_CODEGEN"
# the JIT options of the tests' JVMs: drivers (conftest.py says why), and the standalone cluster's daemons and executors
JVM_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def _exact(row: tuple) -> tuple:
    """A numeric's scale is part of its value as PostgreSQL shows it (`0.00` is not `0`), and
    Decimal equality ignores it; compare numerics by their text. Arrays and jsonb values (lists,
    dicts) by their repr, to be counted."""
    return tuple(str(v) if isinstance(v, Decimal) else repr(v) if isinstance(v, (list, dict)) else v for v in row)


def view_rows(conn, view: str, columns: list[str]) -> Counter:
    cols = ", ".join(f'"{c}"' for c in columns)
    return Counter(map(_exact, conn.execute(f"SELECT {cols} FROM {view}").fetchall()))


def query_rows(conn, sql: str, columns: list[str]) -> Counter:
    cols = ", ".join(f'"{c}"' for c in columns)
    return Counter(map(_exact, conn.execute(f"SELECT {cols} FROM ({sql}) AS q").fetchall()))


def assert_equal_multiset(conn, view: str, sql: str, columns: list[str]) -> int:
    """Assert and return the view's size; on failure show the differing rows."""
    return assert_views_equal(conn, [view], sql, columns)


def assert_views_equal(conn, views: list[str], sql: str, columns: list[str]) -> int:
    """Each of `views` equals the query, all read in one snapshot where the query runs once; return
    the query's size. On failure show the differing rows of the first view that differs."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        want = query_rows(conn, sql, columns)
        got = {view: view_rows(conn, view, columns) for view in views}
    for view, rows in got.items():
        missing, extra = want - rows, rows - want
        assert not missing and not extra, f"view {view} differs: missing {dict(missing)}, extra {dict(extra)}"
    return sum(want.values())


ABC_TABLES = ("CREATE TABLE a (k int PRIMARY KEY, x int); CREATE TABLE b (k int PRIMARY KEY, y int); "
              "CREATE TABLE c (k int PRIMARY KEY, z int)")  # for shapes that only need to parse and plan


def assert_follows_writes(engine, conn, sql: str, columns: list[str], writes: list[str], strategy: str,
                          mode: str) -> None:
    """Register `sql` as view v, then after each write (and, deferred, a maintenance) v equals its query."""
    engine.register_view("v", sql, strategy=strategy, mode=mode)
    assert_equal_multiset(conn, "v", sql, columns)
    for write in writes:
        conn.execute(write)
        if mode == "deferred":
            engine.maintain("v")
        assert_equal_multiset(conn, "v", sql, columns)


def assert_refused_by_name(engine, conn, sql: str, construct: str) -> None:
    """Registration raises one line naming `construct`, and leaves neither catalog entry nor table."""
    import pytest

    import idivm

    with pytest.raises(idivm.UnsupportedQuery) as e:
        engine.register_view("v", sql)
    assert construct in str(e.value) and "\n" not in str(e.value), e.value
    assert engine.list() == []
    assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'v'").fetchone()[0] == 0


def spark_missing(dsn: str) -> str | None:
    """Why the Spark engine cannot maintain views of the database `dsn` names (its server, as the
    tests use it), or None when it can."""
    from idivm.engines.spark.settings import SparkSettings
    from idivm.errors import IdivmError

    try:
        SparkSettings.from_env(dsn).check()
    except IdivmError as missing:
        return str(missing)
    return None


def throwaway_cluster(prefix: str):
    """A context manager: a PostgreSQL cluster of idivm's own (embedded.py) in a new temporary
    directory, started; yields (data directory, DSN); stopped and removed afterwards. Skips the
    test, saying why, where no PostgreSQL binaries are installed."""
    import contextlib
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import pytest

    from idivm.embedded import start_cluster, stop_cluster
    from idivm.errors import IdivmError

    @contextlib.contextmanager
    def cluster():
        tmp = Path(tempfile.mkdtemp(prefix=prefix))
        if os.geteuid() == 0:  # the server runs as postgres, which must reach its data directory
            shutil.chown(tmp, "postgres")
        datadir = tmp / "pgdata"
        try:
            try:
                dsn = start_cluster(datadir, quiet=True)
            except IdivmError as e:
                pytest.skip(f"no PostgreSQL binaries to start a cluster with: {e}")
            yield datadir, dsn
        finally:
            if (datadir / "PG_VERSION").exists():
                stop_cluster(datadir)
            shutil.rmtree(tmp, ignore_errors=True)

    return cluster()


def rendered_statements(conn, view_name: str) -> list[tuple]:
    """(step, PostgreSQL text) of a view's stored program as the PostgreSQL engine renders it, in
    execution order (`conn`: psycopg or SQLAlchemy)."""
    from idivm.engines.postgres.render import render
    from idivm.program.serialize import from_json

    query = "SELECT program FROM idivm.views WHERE view_name = %(v)s"
    if hasattr(conn, "exec_driver_sql"):
        text = conn.exec_driver_sql(query, {"v": view_name}).scalar()
    else:
        text = conn.execute(query, {"v": view_name}).fetchone()[0]
    return render(from_json(text))

