"""Views over views: which maintained views read which, and the order to maintain them in.

A view depends on another when one of its captured base tables is the other's table. Maintaining
in dependency order (inputs first) lets a change reach the top of a chain in one pass; a view may
still be maintained alone, and then reads its inputs as they were last maintained.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def edges(conn: Connection) -> dict[int, set[int]]:
    """view id -> ids of the maintained views it reads."""
    rows = conn.execute(sa.text(
        "SELECT vi.view_id, lower.id AS reads FROM idivm.view_inputs vi "
        "JOIN idivm.captured_tables c ON c.id = vi.captured_table_id "
        "JOIN idivm.views lower ON lower.schema_name = c.schema_name AND lower.view_name = c.table_name"
    )).all()
    out: dict[int, set[int]] = {}
    for r in rows:
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
    return sorted(conn.execute(sa.text(
        "SELECT upper.schema_name || '.' || upper.view_name FROM idivm.views lower "
        "JOIN idivm.captured_tables c ON c.schema_name = lower.schema_name AND c.table_name = lower.view_name "
        "JOIN idivm.view_inputs vi ON vi.captured_table_id = c.id "
        "JOIN idivm.views upper ON upper.id = vi.view_id WHERE lower.id = :v"
    ), {"v": view_id}).scalars().all())
