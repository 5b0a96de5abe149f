"""Statements for changes of the table inside an EXISTS / IN subquery (semijoin, antijoin).

Changes of the outer query's tables need nothing new: the conjunct holding the
subquery is a condition of the σ rules like any other (an update of a correlated
attribute deletes and re-derives the row; an insert is filtered by it on the
post-state). A change of the subquery's table R can flip the condition for the
outer rows it is related to (Table 13 and its semijoin counterpart). Those rows,
selected through ``SubqueryPredicate.affected`` on the pre- and the post-image of
every changed R row, are deleted by ID and re-derived from the post-state, where
PostgreSQL evaluates EXISTS / IN / NOT IN with its exact NULL semantics. An
uncorrelated subquery relates to every outer row, so its changes re-derive all
of them.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import BRANCH_COLUMN, SubqueryPredicate, conjuncts_below, has_subquery, refs
from ..sqltext import ident
from .render import DIFF_ALIAS, VIEW_ALIAS, Target, _where, base_mapping, bind_with, binder, delta_table, insert_rows
from .script import Statement


def _changed(target: Target, sq: SubqueryPredicate) -> str:
    """Changed R rows (pre- or post-image) related to the outer row in scope."""
    outer = base_mapping(target)
    dd = ident(DIFF_ALIAS)
    cond = sq.affected()
    pre = bind_with({**outer, sq.alias: (DIFF_ALIAS, "pre__")})(cond)
    post = bind_with({**outer, sq.alias: (DIFF_ALIAS, "post__")})(cond)
    return f"({dd}.{ident('kind')} <> 'I' AND ({pre})) OR ({dd}.{ident('kind')} <> 'D' AND ({post}))"


def subquery_statements(target: Target) -> list[Statement]:
    out: list[Statement] = []
    v, dd = ident(VIEW_ALIAS), ident(DIFF_ALIAS)
    for sq in target.plan.subqueries:
        cid = target.captured[(sq.table.schema, sq.table.name)]
        delta = delta_table(cid)
        related = sorted({a for a, _ in refs(sq.affected()) if a in target.scan_alias})
        froms = [f"{delta} AS {dd}"] + [target.base(a) for a in related]
        by_id = [f"{ident(target.scan_alias[a])}.{ident(i.column)} = {v}.{ident(i.name)}"
                 for a in related for i in target.ids_of(a)]
        if target.branch is not None:  # an uncorrelated subquery matches no ID: stay in this branch's rows
            by_id.append(f"{v}.{ident(BRANCH_COLUMN)} = {int(target.branch)}")
        label = f"Δ[{sq.table.name}] of subquery {sq.alias}"
        out.append(Statement(
            phase=0, purpose=f"{label}: delete the outer rows it may affect, by ID",
            sql=f"DELETE FROM {target.table} AS {v}\nUSING {', '.join(froms)}\nWHERE {_where(by_id + [_changed(target, sq)])}",
            driven_by=cid,
        ))
        bind = binder(target, None)
        filters = [bind(c) for c in conjuncts_below(target.plan)]
        filters.append(f"EXISTS (SELECT 1 FROM {delta} AS {dd} WHERE {_changed(target, sq)})")
        everything = ", ".join(target.base(s) for s in target.scan_alias)
        out.append(Statement(
            phase=2, purpose=f"{label}: re-derive those outer rows from the post-state",
            sql=insert_rows(target, None, [], filters, bind, from_sql=everything, id_image=None),
            driven_by=cid,
        ))
    return out


def without_subqueries(conds: list[exp.Expression]) -> list[exp.Expression]:
    return [c for c in conds if not has_subquery(c)]
