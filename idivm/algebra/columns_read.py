"""Which columns of each base table a plan reads: what a schema change must leave alone.

A view's Δ-program reads a base table's columns only through the plan's expressions (outputs,
conditions, its subqueries') and its key (the IDs); its i-diff instances are built from the
table's columns as they are at each maintenance (engines/postgres/server_maintenance.py). So a column the
plan never names can be dropped, renamed or retyped without changing what the program means, and
the event trigger that marks views stale (capture/schema_changes.py) looks only at these columns.
"""
from __future__ import annotations

import dataclasses

from sqlglot import exp

from .plan import Aggregate, PartScan, Project, part_scans, scans, walk
from .tables import TableInfo


def columns_read(plan) -> dict[tuple[str, str], set[str]]:
    """(schema, table) -> the columns of it the plan reads, its key columns included."""
    out: dict[tuple[str, str], set[str]] = {}
    parts = {s.table for s in part_scans(plan)}  # a part reads its own tables (below)
    for node in [plan.cache] if isinstance(plan, Aggregate) else [plan]:
        for p in walk(node):
            if isinstance(p, Project):
                scope = {s.alias: s.table for s in scans(p)}
                scope.update({a: t for sq in p.subqueries for a, t in sq.tables()})
                _collect(p, {a: t for a, t in scope.items() if t not in parts}, out)
    if isinstance(plan, Aggregate):
        for sq in plan.having_subqueries:
            _collect(sq, dict(sq.tables()), out)
    for part in part_scans(plan):  # a part reads its own base tables
        for table, columns in columns_read(part.plan).items():
            out.setdefault(table, set()).update(columns)
    return out


def _collect(root, scope: dict[str, TableInfo], out: dict[tuple[str, str], set[str]]) -> None:
    for table in scope.values():
        out.setdefault((table.schema, table.name), set()).update(table.key)
    for e in _expressions(root):
        for c in e.find_all(exp.Column):
            table = scope.get(c.table)
            if table is not None and c.name in table.column_names:
                out[(table.schema, table.name)].add(c.name)


def _expressions(obj):
    """Every sqlglot expression held by a plan node, its children and its subqueries."""
    if isinstance(obj, exp.Expression):
        yield obj
    elif isinstance(obj, PartScan):
        return  # its plan reads its own tables (columns_read recurses into it)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _expressions(x)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, (TableInfo, type)):
        for f in dataclasses.fields(obj):
            yield from _expressions(getattr(obj, f.name))
