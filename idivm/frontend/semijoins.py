"""EXISTS / IN subqueries in WHERE: validation and normalisation into SubqueryPredicates.

Supported: a subquery over one base table, with an optional WHERE that may
reference the outer query's columns (correlation), and for IN exactly one output
column. Its alias is renamed to an idivm-owned one so that it can never shadow
the aliases of generated statements.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import SubqueryPredicate
from ..algebra.tables import TableInfo
from .checks import refuse

SUBQUERY_ALIAS = "__idivm_sq{}"


def extract_subqueries(tree: exp.Select, infos: dict[tuple[str, str], TableInfo]) -> list[SubqueryPredicate]:
    where = tree.args.get("where")
    if where is None:
        return []
    in_queries = {id(n.args["query"]) for n in where.find_all(exp.In) if n.args.get("query")}
    nodes = [n for n in where.find_all(exp.Exists)] + [n for n in where.find_all(exp.In) if n.args.get("query")]
    nodes += [n for n in where.find_all(exp.Subquery) if id(n) not in in_queries]  # scalar subqueries
    return [_extract(node, infos, i) for i, node in enumerate(nodes)]


def extract_having_subqueries(tree: exp.Select, infos: dict[tuple[str, str], TableInfo],
                              start: int) -> list[SubqueryPredicate]:
    """Scalar subqueries in HAVING (nested aggregates compared with a group's aggregates); their
    aliases are numbered from `start`, after those of WHERE."""
    having = tree.args.get("having")
    if having is None:
        return []
    if having.find(exp.Exists) or any(n.args.get("query") for n in having.find_all(exp.In)):
        raise refuse("EXISTS / IN subqueries in HAVING")
    return [_extract(node, infos, start + i) for i, node in enumerate(having.find_all(exp.Subquery))]


def _extract(node: exp.Expression, infos: dict[tuple[str, str], TableInfo], index: int) -> SubqueryPredicate:
    """One subquery, checked and with its table renamed to idivm's own alias."""
    scalar = isinstance(node, exp.Subquery)
    inner = node.this if isinstance(node, (exp.Exists, exp.Subquery)) else node.args["query"].this
    what = "a scalar subquery" if scalar else "an EXISTS/IN subquery"
    if not isinstance(inner, exp.Select):
        raise refuse("set operations inside a subquery")
    for clause, name in (("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT"),
                         ("limit", "LIMIT"), ("order", "ORDER BY"), ("joins", "joins")):
        if inner.args.get(clause):
            raise refuse(f"{name} inside {what}")
    if inner.find(exp.Exists) or inner.find(exp.Subquery):
        raise refuse(f"nested subqueries inside {what}")
    if scalar and (len(inner.expressions) != 1 or not inner.expressions[0].find(exp.AggFunc)):
        raise refuse("a scalar subquery that is not one aggregate (SELECT count(*), sum(x), avg(x) ... FROM t WHERE ...)")
    if not scalar and inner.find(exp.AggFunc):
        raise refuse("aggregates inside an EXISTS/IN subquery")
    src = (inner.args.get("from_") or inner.args.get("from")).this
    if not isinstance(src, exp.Table):
        raise refuse("a subquery in FROM of an EXISTS/IN subquery")
    old, new = src.alias_or_name, SUBQUERY_ALIAS.format(index)
    for c in inner.find_all(exp.Column):
        if c.table == old:
            c.set("table", exp.to_identifier(new, quoted=True))
    src.set("alias", exp.TableAlias(this=exp.to_identifier(new, quoted=True)))
    in_lhs = in_col = None
    if isinstance(node, exp.In):
        if len(inner.expressions) != 1 or isinstance(node.this, exp.Tuple):
            raise refuse("IN (subquery) over several columns")
        in_lhs, in_col = node.this, inner.expressions[0].unalias()
    inner_where = inner.args.get("where")
    return SubqueryPredicate(alias=new, table=infos[(src.db, src.name)],
                             where=inner_where.this if inner_where is not None else None,
                             in_lhs=in_lhs, in_col=in_col,
                             scalar=inner.expressions[0].unalias() if scalar else None)
