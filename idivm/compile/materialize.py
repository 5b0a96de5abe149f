"""Initial materialization: the tables a registered view consists of, filled in registration's snapshot."""
from __future__ import annotations

from ..algebra.plan import scans
from ..sqltext import ident, run
from .aggregate import AggregateTarget, group_select
from .render import Target, full_query
from .union import UnionTarget, create_union_table


def create_spj_table(conn, target: Target) -> None:
    """The SPJ view (or intermediate cache), keyed by its hidden IDs, each scan's IDs indexed."""
    plan = target.plan
    run(conn, f"CREATE TABLE {target.table} AS\n{full_query(target)}")
    run(conn, f"ALTER TABLE {target.table} ADD PRIMARY KEY ({', '.join(ident(i.name) for i in plan.ids)})")
    # i-diffs identify rows by one scan's IDs: index every scan's ID columns (the first is the key's prefix)
    for s in scans(plan)[1:]:
        cols = [i.name for i in plan.ids if i.scan == s.alias]
        run(conn, f"CREATE INDEX ON {target.table} ({', '.join(ident(c) for c in cols)})")
    stable = [n for n, _ in plan.outputs if n in plan.stable]
    if stable:
        run(conn, f"CREATE INDEX ON {target.table} ({', '.join(ident(c) for c in stable)})")


def create_tables(conn, target) -> None:
    """Create and fill whatever a target consists of (SPJ view, UNION ALL, grouped view + cache)."""
    if isinstance(target, AggregateTarget):
        create_tables(conn, target.cache)
        run(conn, f"CREATE TABLE {target.table} AS\n{group_select(target, restrict=False)}")
        if target.agg.keys:
            cols = ", ".join(ident(c) for c in target.agg.id_names)
            run(conn, f"CREATE UNIQUE INDEX ON {target.table} ({cols}) NULLS NOT DISTINCT")
    elif isinstance(target, UnionTarget):
        create_union_table(conn, target)
    else:
        create_spj_table(conn, target)
