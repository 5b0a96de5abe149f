"""The clauses of a parsed SELECT as the frontend reads them: whether it has a FROM, its first FROM
item, and a condition (ON, WHERE) split into its top-level conjuncts. Shared by the rewrites,
checks.py, build_plan.py and outer_joins.py."""
from __future__ import annotations

from sqlglot import exp


def has_from(tree: exp.Select) -> bool:
    return bool(tree.args.get("from_") or tree.args.get("from"))


def from_item(tree: exp.Select) -> exp.Expression:
    """What the SELECT's FROM names first (a table or a subquery)."""
    return (tree.args.get("from_") or tree.args.get("from")).this


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    """The conjuncts of e, parenthesized ANDs split too: `(a AND b) AND c` is [a, b, c]."""
    if e is None:
        return []
    e = e.unnest()
    return [c for part in e.flatten() for c in conjuncts(part)] if isinstance(e, exp.And) else [e]


def where_conjuncts(tree: exp.Select) -> list[exp.Expression]:
    return conjuncts(tree.args["where"].this) if tree.args.get("where") else []


def has_aggregation(tree: exp.Select) -> bool:
    """Whether a SELECT groups or aggregates (GROUP BY, DISTINCT, HAVING, an aggregate in its outputs)."""
    return bool(tree.args.get("group") or tree.args.get("distinct") or tree.args.get("having")
                or any(e.find(exp.AggFunc) for e in tree.expressions))


def aggregating_subqueries(select: exp.Select) -> list[exp.Subquery]:
    """The subqueries that aggregate in this SELECT's own FROM and JOINs: the parts of a view
    (algebra/plan.PartScan), each a statement of its own."""
    return [sq for sq in select.find_all(exp.Subquery)
            if isinstance(sq.parent, (exp.From, exp.Join)) and sq.parent.parent is select
            and isinstance(sq.this, exp.Select) and has_aggregation(sq.this)]


def inline_columns(e: exp.Expression, alias: str, by_name: dict[str, exp.Expression]) -> exp.Expression:
    """e (a copy) with each column of the subquery `alias` (qualified by it, or not qualified)
    replaced by the subquery's expression of that name (`by_name`), parenthesized where precedence
    could change; a name the subquery has not (an output alias of the query itself) is left."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) and node.table in ("", alias) \
                and node.name in by_name:
            value = by_name[node.name].copy()
            return value if isinstance(value, (exp.Column, exp.Func, exp.Literal, exp.Paren)) else exp.Paren(this=value)
        return node

    return e.transform(fn)
