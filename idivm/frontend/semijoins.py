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
    out: list[SubqueryPredicate] = []
    nodes = [n for n in where.find_all(exp.Exists)] + [n for n in where.find_all(exp.In) if n.args.get("query")]
    for node in nodes:
        inner = node.this if isinstance(node, exp.Exists) else node.args["query"].this
        if not isinstance(inner, exp.Select):
            raise refuse("set operations inside a subquery")
        for clause, name in (("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT"),
                             ("limit", "LIMIT"), ("order", "ORDER BY"), ("joins", "joins")):
            if inner.args.get(clause):
                raise refuse(f"{name} inside an EXISTS/IN subquery")
        if inner.find(exp.AggFunc) or inner.find(exp.Exists) or inner.find(exp.Subquery):
            raise refuse("aggregates or nested subqueries inside an EXISTS/IN subquery")
        src = (inner.args.get("from_") or inner.args.get("from")).this
        if not isinstance(src, exp.Table):
            raise refuse("a subquery in FROM of an EXISTS/IN subquery")
        old, new = src.alias_or_name, SUBQUERY_ALIAS.format(len(out))
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
        out.append(SubqueryPredicate(alias=new, table=infos[(src.db, src.name)],
                                     where=inner_where.this if inner_where is not None else None,
                                     in_lhs=in_lhs, in_col=in_col))
    return out
