"""The clauses of a parsed SELECT as the plan builders read them: its first FROM item, and a
condition (ON, WHERE) split into its top-level conjuncts. Shared by build_plan.py and
outer_joins.py, which read the same qualified tree."""
from __future__ import annotations

from sqlglot import exp


def from_item(tree: exp.Select) -> exp.Expression:
    """What the SELECT's FROM names first (a table or a subquery)."""
    return (tree.args.get("from_") or tree.args.get("from")).this


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    return [c.unnest() for c in e.flatten()] if isinstance(e, exp.And) else [e.unnest()]


def where_conjuncts(tree: exp.Select) -> list[exp.Expression]:
    return conjuncts(tree.args["where"].this) if tree.args.get("where") else []
