"""Views over views: which maintained views read which, and the order to maintain them in.

A view depends on another when one of its captured base tables is the other's table. Maintaining
in dependency order (inputs first) lets a change reach the top of a chain in one pass; a view may
still be maintained alone, and then reads its inputs as they were last maintained.
"""
from __future__ import annotations

from sqlalchemy.engine import Connection

from ..catalog import repository as catalog


def edges(conn: Connection) -> dict[int, set[int]]:
    """view id -> ids of the maintained views it reads."""
    out: dict[int, set[int]] = {}
    for r in catalog.reads_edges(conn):
        out.setdefault(r.view_id, set()).add(r.reads)
    return out


def dependency_order(view_ids: list[int], reads: dict[int, set[int]]) -> list[int]:
    """view_ids with every view after the views it reads (stable otherwise). Registration cannot
    create a cycle (a view's table does not exist before it is registered)."""
    placed: list[int] = []
    done: set[int] = set()

    def place(v: int, path: frozenset) -> None:
        if v in done or v in path:
            return
        for u in sorted(reads.get(v, ())):
            if u in view_ids:
                place(u, path | {v})
        done.add(v)
        placed.append(v)

    for v in view_ids:
        place(v, frozenset())
    return placed


def dependents(conn: Connection, view_id: int) -> list[str]:
    """schema.name of the views that read this one."""
    return catalog.readers_of(conn, view_id)
