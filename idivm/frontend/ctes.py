"""Non-recursive WITH: every reference to a CTE becomes a subquery in FROM.

After inlining, the subqueries are merged like any other SPJ subquery in FROM
(sqlglot merge_subqueries); a CTE that cannot be merged (one that aggregates,
say) is refused by the same check as an unmergeable subquery.
"""
from __future__ import annotations

from sqlglot import exp

from .checks import refuse


def inline_ctes(tree: exp.Expression) -> exp.Expression:
    """Inline the WITH of the statement and of every nested query (a subquery may have its own)."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Select, exp.Union)) and (node.args.get("with") or node.args.get("with_")):
            return inline_ctes(_inline_one(node))  # the inlined bodies may have WITHs of their own
        return node

    return tree.transform(fn)


def _inline_one(tree: exp.Expression) -> exp.Expression:
    with_ = tree.args.get("with") or tree.args.get("with_")
    if with_ is None:
        return tree
    if with_.args.get("recursive"):
        raise refuse("WITH RECURSIVE")
    ctes: dict[str, exp.Expression] = {}
    for cte in with_.expressions:
        body = cte.this.copy()
        columns = cte.args["alias"].columns if cte.args.get("alias") else []
        if columns:
            raise refuse("column lists on CTE names (WITH name(col, ...))")
        # a CTE may read earlier CTEs
        ctes[cte.alias] = _replace_refs(body, ctes)
    tree = tree.copy()
    tree.set("with" if "with" in tree.args else "with_", None)
    return _replace_refs(tree, ctes)


def _replace_refs(tree: exp.Expression, ctes: dict[str, exp.Expression]) -> exp.Expression:
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and not node.db and node.name in ctes:
            alias = node.alias or node.name
            return exp.Subquery(this=ctes[node.name].copy(),
                                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
        return node

    return tree.transform(fn)
