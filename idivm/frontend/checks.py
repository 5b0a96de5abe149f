"""Refusals: constructs the SPJ core cannot maintain, named in the error.

Each check looks at the parsed tree before anything is created, so a refused
view leaves the database untouched.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlglot import exp

from ..errors import UnsupportedQuery

SUPPORTED = (
    "see docs/sql-support.md for what is (inner joins, WHERE, [NOT] EXISTS / [NOT] IN over one table, "
    "GROUP BY with count/sum/avg/min/max, HAVING, DISTINCT, UNION [ALL], EXCEPT, INTERSECT, WITH, "
    "subqueries in FROM)"
)

# (node type, how to name it) - checked in this order
_REFUSED: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.Window, "window functions (OVER ...)"),
    (exp.Limit, "LIMIT"),
    (exp.Offset, "OFFSET"),
    (exp.Fetch, "FETCH"),
    (exp.Order, "ORDER BY"),
    (exp.Lateral, "LATERAL"),
    (exp.Values, "VALUES lists"),
)

# Functions whose value may change between maintenances without any table changing.
_TIME_NODES = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.CurrentUser)


def refuse(construct: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"{construct} not supported in maintained views yet; {SUPPORTED}")


def union_branches(tree: exp.Expression) -> tuple[list[exp.Select], bool] | None:
    """(branches, distinct) of a UNION [ALL] tree, None if tree is no union.

    `a UNION ALL b UNION c` is distinct as a whole; a distinct union nested under UNION ALL is refused."""
    if not isinstance(tree, exp.Union) or isinstance(tree, (exp.Except, exp.Intersect)):
        return None
    for clause in ("order", "limit", "offset"):
        if tree.args.get(clause):
            raise refuse(f"{clause.upper()} on a set operation")
    distinct = bool(tree.args.get("distinct"))
    branches: list[exp.Select] = []
    for side in (tree.left, tree.right):
        side = side.unnest() if isinstance(side, exp.Subquery) else side
        inner = union_branches(side)
        if inner is None:
            if isinstance(side, (exp.Except, exp.Intersect)):
                raise refuse(f"{side.key.upper()} (set operations)")
            branches.append(side)
        else:
            if inner[1] and not distinct:
                raise refuse("UNION (distinct) nested inside UNION ALL")
            branches += inner[0]
    return branches, distinct


def check_statement(tree: exp.Expression) -> exp.Select:
    """The statement is a single SELECT of the supported shape."""
    if isinstance(tree, (exp.Union, exp.Except, exp.Intersect)):
        raise refuse(f"{tree.key.upper()} (set operations)")
    if not isinstance(tree, exp.Select):
        raise UnsupportedQuery(f"a view is defined by a SELECT statement, got {tree.key.upper()}")
    for node_type, name in _REFUSED:
        if tree.find(node_type):
            raise refuse(name)
    for node in tree.find_all(exp.Union, exp.Except, exp.Intersect):
        raise refuse(f"{node.key.upper()} (set operations)")
    for join in tree.find_all(exp.Join):
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if side in ("LEFT", "RIGHT", "FULL") or kind in ("OUTER", "SEMI", "ANTI"):
            raise refuse(f"{side or kind} OUTER JOIN".replace("OUTER OUTER", "OUTER"))
    for clause in ("where", "joins"):
        parts = tree.args.get(clause)
        for part in parts if isinstance(parts, list) else [parts] if parts is not None else []:
            if part.find(exp.AggFunc):
                raise refuse("aggregates in WHERE or JOIN conditions")
    where = tree.args.get("where")
    in_where = {id(n) for n in where.find_all(exp.Exists, exp.In)} if where is not None else set()
    for node in tree.find_all(exp.Exists):
        if id(node) not in in_where:
            raise refuse("EXISTS outside WHERE")
    for node in tree.find_all(exp.In):
        if node.args.get("query") and id(node) not in in_where:
            raise refuse("IN (subquery) outside WHERE")
    for sub in tree.find_all(exp.Subquery):
        if isinstance(sub.parent, (exp.From, exp.Join)) or (isinstance(sub.parent, exp.In) and id(sub.parent) in in_where):
            continue
        raise refuse("scalar subqueries (a subquery used as a value)")
    for node in tree.find_all(exp.Select):
        if node is not tree and not isinstance(node.parent, (exp.Subquery, exp.Exists)):
            raise refuse("scalar subqueries (a subquery used as a value)")
    for node in tree.find_all(*_TIME_NODES):
        raise UnsupportedQuery(
            f"{node.sql('postgres')} changes without any table changing, so a maintained view "
            "could not stay equal to its query; use a constant or a column instead"
        )
    for node in tree.find_all(exp.Table):
        if isinstance(node.this, exp.Func) or node.args.get("joins"):
            raise refuse("table functions in FROM")
    return tree


def function_names(tree: exp.Expression) -> set[str]:
    """PostgreSQL names of the functions a tree calls."""
    names: set[str] = set()
    for f in tree.find_all(exp.Func):
        if isinstance(f, exp.Anonymous):
            names.add(str(f.name).lower())
        else:
            text = f.sql("postgres")
            if "(" in text:
                head = text.split("(", 1)[0].strip().lower()
                if head.replace("_", "").isalnum():
                    names.add(head)
    return names


def check_deterministic(conn: Connection, tree: exp.Expression) -> None:
    """Refuse volatile and stable functions: their value can change without any table changing."""
    names = sorted(function_names(tree))
    if not names:
        return
    bad = conn.execute(
        sa.text(
            "SELECT DISTINCT proname FROM pg_proc WHERE proname = ANY(:names) AND provolatile IN ('v', 's') "
            "ORDER BY 1"
        ),
        {"names": names},
    ).scalars().all()
    if bad:
        raise UnsupportedQuery(
            f"function {', '.join(bad)} is volatile or stable in PostgreSQL (its result can change between "
            "maintenances without any table changing); maintained views use immutable functions only"
        )
