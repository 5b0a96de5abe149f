"""Shared checks: the view equals its recomputed query, as a multiset, computed independently of idivm."""
from __future__ import annotations

from collections import Counter


def view_rows(conn, view: str, columns: list[str]) -> Counter:
    cols = ", ".join(f'"{c}"' for c in columns)
    return Counter(conn.execute(f"SELECT {cols} FROM {view}").fetchall())


def query_rows(conn, sql: str, columns: list[str]) -> Counter:
    cols = ", ".join(f'"{c}"' for c in columns)
    return Counter(conn.execute(f"SELECT {cols} FROM ({sql}) AS q").fetchall())


def assert_equal_multiset(conn, view: str, sql: str, columns: list[str]) -> int:
    """Assert and return the view's size; on failure show the differing rows."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        got, want = view_rows(conn, view, columns), query_rows(conn, sql, columns)
    missing, extra = want - got, got - want
    assert not missing and not extra, f"view {view} differs: missing {dict(missing)}, extra {dict(extra)}"
    return sum(got.values())
