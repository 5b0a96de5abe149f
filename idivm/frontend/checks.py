"""Refusals: constructs the SPJ core cannot maintain, named in the error.

Each check looks at the parsed tree before anything is created, so a refused
view leaves the database untouched.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQuery
from .clauses import aggregating_subqueries

SUPPORTED = (
    "see docs/sql-support.md for what is (inner and outer joins, WHERE, [NOT] EXISTS / [NOT] IN over one table, "
    "GROUP BY with count/sum/avg/min/max, HAVING, DISTINCT, UNION [ALL], EXCEPT, INTERSECT, WITH, "
    "subqueries in FROM)"
)

# (node type, how to name it) - checked in this order
_REFUSED: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.Limit, "LIMIT"),
    (exp.Offset, "OFFSET"),
    (exp.Fetch, "FETCH"),
    (exp.Order, "ORDER BY"),
    (exp.Lateral, "LATERAL"),
    (exp.Values, "VALUES lists"),
)

# Functions whose value may change between maintenances without any table changing.
_TIME_NODES = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.CurrentUser)


SYSTEM_COLUMNS = ("xmin", "xmax", "cmin", "cmax", "ctid", "tableoid")


def check_constructs(tree: exp.Expression) -> None:
    """Refusals that look at the whole statement as parsed, before any rewrite: constructs that
    no rewrite handles, each named (with the rewrite that works, where one exists)."""
    if not isinstance(tree, exp.Query):
        raise UnsupportedQuery(f"a view is defined by a SELECT statement, got {tree.key.upper()}")
    for node in tree.walk():
        if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Merge)):
            raise UnsupportedQuery(
                f"a data-modifying statement ({node.key.upper()}) inside the view's query: a view is defined "
                "by a SELECT that only reads; run the modification separately")
        if isinstance(node, exp.TableSample):
            raise UnsupportedQuery(
                "TABLESAMPLE is not deterministic (each run samples other rows), so a maintained view could not "
                "stay equal to its query; filter rows with a WHERE condition instead")
        if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
            name = {"rollup": "ROLLUP", "cube": "CUBE", "groupingsets": "GROUPING SETS"}[node.key]
            raise refuse(f"GROUP BY {name}", "register one view per grouping, or combine them with UNION ALL")
        if isinstance(node, exp.Window):
            raise refuse("window functions (OVER ...)")
        if isinstance(node, exp.WithinGroup):
            raise refuse("ordered-set aggregates (WITHIN GROUP)")
        if (isinstance(node, exp.Order) and isinstance(node.parent, exp.AggFunc)) or (
                isinstance(node, exp.AggFunc) and isinstance(node.this, exp.Order)):
            raise refuse(f"ordered aggregates, {node.sql('postgres')},")
        if isinstance(node, exp.Distinct) and isinstance(node.parent, exp.AggFunc) and (
                len(node.expressions) > 1 or any(isinstance(e, exp.Tuple) for e in node.expressions)
                and not isinstance(node.parent, exp.Count)):
            raise refuse(f"an aggregate over DISTINCT row values, {node.parent.sql('postgres')},",
                         "count(DISTINCT (a, b)) is maintained; aggregate distinct rows of a subquery for the others")
        if isinstance(node, (exp.Any, exp.All)) and isinstance(node.this, (exp.Query, exp.Subquery)):
            raise refuse(f"a comparison with {node.key.upper()} of a subquery under NOT, in CASE, outside WHERE, or "
                         "over a subquery that groups, aggregates or limits",
                         "in WHERE under AND and OR it becomes an EXISTS: see docs/sql-support.md")
        if isinstance(node, exp.Column) and node.name.lower() in SYSTEM_COLUMNS:
            raise refuse(f"system column {node.name}", "its value changes without the row's values changing")


def drop_ignored_order(tree: exp.Expression) -> tuple[exp.Expression, list[str]]:
    """A top-level ORDER BY (without LIMIT or OFFSET) means nothing for a stored table: drop it, and say
    so (explain shows the notice). Read the view with ORDER BY instead."""
    order = tree.args.get("order")
    if order is None or tree.args.get("limit") or tree.args.get("offset") or tree.args.get("fetch"):
        return tree, []
    tree = tree.copy()
    tree.set("order", None)
    return tree, [f"{order.sql('postgres').strip()} is ignored: a maintained view is a table, whose rows have no "
                  "order; order them when you read it (SELECT ... FROM view ORDER BY ...)"]


def refuse(construct: str, instead: str | None = None) -> UnsupportedQuery:
    """The one-line refusal of a construct, with the rewrite that works where there is one."""
    return UnsupportedQuery(f"{construct} not supported in maintained views yet"
                            + (f" ({instead})" if instead else "") + f"; {SUPPORTED}")


def union_branches(tree: exp.Expression) -> tuple[list[exp.Select], bool] | None:
    """(branches, distinct) of a UNION [ALL] tree, None if tree is no union.

    `a UNION ALL b UNION c` is distinct as a whole; a distinct union nested under UNION ALL is refused."""
    if not isinstance(tree, exp.Union) or isinstance(tree, (exp.Except, exp.Intersect)):
        return None
    for clause in ("limit", "offset", "order"):
        if tree.args.get(clause):
            raise refuse(f"{'ORDER BY' if clause == 'order' else clause.upper()} on a set operation")
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


def checked_branches(tree: exp.Expression) -> tuple[list[exp.Select], bool | None]:
    """The statement's SELECTs, each checked (check_statement): the one SELECT and None, or a
    UNION [ALL]'s branches and whether it is distinct."""
    union = union_branches(tree)
    if union is None:
        return [check_statement(tree)], None
    selects, distinct = union
    return [check_statement(s) for s in selects], distinct


def check_statement(tree: exp.Expression) -> exp.Select:
    """The statement is a single SELECT of the supported shape; each subquery that aggregates in its
    FROM (a part of the view, build_plan.py) is checked as a statement of its own."""
    if isinstance(tree, (exp.Union, exp.Except, exp.Intersect)):
        raise refuse(f"{tree.key.upper()} (set operations)")
    if not isinstance(tree, exp.Select):
        raise UnsupportedQuery(f"a view is defined by a SELECT statement, got {tree.key.upper()}")
    parts = aggregating_subqueries(tree)
    if parts:
        for sq in parts:
            check_statement(sq.this)
        outer = tree.copy()
        for sq in aggregating_subqueries(outer):
            sq.replace(exp.Table(this=exp.to_identifier("part"), alias=sq.args.get("alias")))
        _check_select(outer)
        return tree
    _check_select(tree)
    return tree


def _check_select(tree: exp.Select) -> None:
    for node_type, name in _REFUSED:
        if tree.find(node_type):
            raise refuse(name)
    for node in tree.find_all(exp.Union, exp.Except, exp.Intersect):
        raise refuse(f"{node.key.upper()} (set operations)")
    after_right_or_full = False
    for join in tree.args.get("joins") or []:
        if after_right_or_full and (join.args.get("using") or (join.args.get("method") or "").upper() == "NATURAL"):
            # PostgreSQL merges the USING columns of RIGHT (its right side's) and FULL joins (COALESCE)
            raise refuse("JOIN ... USING or NATURAL JOIN after a RIGHT or FULL JOIN",
                         "write its condition with ON, e.g. ON COALESCE(a.k, b.k) = c.k")
        after_right_or_full = after_right_or_full or (join.side or "").upper() in ("RIGHT", "FULL")
    for join in tree.find_all(exp.Join):
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if kind in ("SEMI", "ANTI") or (kind == "OUTER" and side not in ("LEFT", "RIGHT", "FULL")):
            raise refuse(f"{side} {kind} JOIN".strip())
    for clause in ("where", "joins"):
        parts = tree.args.get(clause)
        for part in parts if isinstance(parts, list) else [parts] if parts is not None else []:
            if any(f.find_ancestor(exp.Subquery) is None for f in part.find_all(exp.AggFunc)):
                raise refuse("aggregates in WHERE or JOIN conditions")
    where = tree.args.get("where")
    in_where = {id(n) for n in where.find_all(exp.Exists, exp.In)} if where is not None else set()
    for node in tree.find_all(exp.Exists):
        if id(node) not in in_where:
            raise refuse("EXISTS outside WHERE")
    for node in tree.find_all(exp.In):
        if node.args.get("query") and id(node) not in in_where:
            raise refuse("IN (subquery) outside WHERE")
    having = tree.args.get("having")
    in_where_at_all = {id(n) for part in (where, having) if part is not None for n in part.find_all(exp.Subquery)}
    for sub in tree.find_all(exp.Subquery):
        if isinstance(sub.parent, (exp.From, exp.Join)) or (isinstance(sub.parent, exp.In) and id(sub.parent) in in_where):
            continue
        if id(sub) in in_where_at_all:
            continue  # a scalar subquery in WHERE or HAVING: semijoins checks its shape
        raise refuse("scalar subqueries outside WHERE and HAVING (a subquery used as an output) other than an "
                     "aggregate correlated only by equalities with the outer row")
    for node in tree.find_all(exp.Select):
        if node is not tree and not isinstance(node.parent, (exp.Subquery, exp.Exists)):
            raise refuse("scalar subqueries (a subquery used as a value)")
    for node in tree.find_all(*_TIME_NODES):
        # sqlglot reads now() as CURRENT_TIMESTAMP; a call written as a function keeps its position
        written = "now()" if isinstance(node, exp.CurrentTimestamp) and "start" in node.meta else node.sql("postgres")
        raise UnsupportedQuery(
            f"{written} changes without any table changing, so a maintained view "
            "could not stay equal to its query; use a constant or a column instead"
        )
    for node in tree.find_all(exp.Table):
        if isinstance(node.this, exp.Func) or node.args.get("joins"):
            raise refuse("table functions in FROM")
