"""Multi-valued dependencies in a join (footnote 6 of the paper): is an intermediate cache worth it?

The cache below an aggregate materializes its SPJ input. When every join is
many-to-one, the input has at most as many rows as one of its tables (the
"root"), so reading a group from the cache is cheaper than re-joining. A
many-to-many join makes the input larger than its tables: re-reading a group
from the cache then costs more tuple accesses than recomputing it from the base
tables, so the paper skips the cache.

A join edge X -> Y is many-to-one when equality conjuncts ``X.a = Y.k`` bind every
column of Y's primary key (which is what a declared foreign key from X references):
each X row then meets at most one Y row. The input is free of multi-valued
dependencies when one scan reaches every other through such edges.
"""
from __future__ import annotations

from sqlglot import exp

from .plan import Node, conjuncts_below, scans


def _key_edges(node: Node) -> set[tuple[str, str]]:
    """(X, Y) pairs such that X's rows determine Y's row through Y's whole key."""
    tables = {s.alias: s.table for s in scans(node)}
    bound: dict[tuple[str, str], set[str]] = {}
    for c in conjuncts_below(node):
        c = c.unnest()
        if not isinstance(c, exp.EQ):
            continue
        a, b = c.this.unnest(), c.expression.unnest()
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)) or a.table == b.table:
            continue
        for x, y in ((a, b), (b, a)):
            bound.setdefault((x.table, y.table), set()).add(y.name)
    return {(x, y) for (x, y), cols in bound.items() if set(tables[y].key) <= cols}


def many_to_many(node: Node) -> str | None:
    """Why the input may have multi-valued dependencies, or None if it is many-to-one throughout."""
    aliases = [s.alias for s in scans(node)]
    if len(aliases) < 2:
        return None
    edges = _key_edges(node)
    for root in aliases:
        reached, frontier = {root}, [root]
        while frontier:
            x = frontier.pop()
            for (a, b) in edges:
                if a == x and b not in reached:
                    reached.add(b)
                    frontier.append(b)
        if len(reached) == len(aliases):
            return None
    return (f"the join of {', '.join(aliases)} is many-to-many: no table reaches every other "
            "through equalities on their whole primary keys")
