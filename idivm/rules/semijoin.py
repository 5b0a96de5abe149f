"""Statements for changes of the table inside an EXISTS / IN subquery (semijoin, antijoin).

Changes of the outer query's tables need nothing new: the conjunct holding the
subquery is a condition of the σ rules like any other (an update of a correlated
attribute deletes and re-derives the row; an insert is filtered by it on the
post-state). A change of the subquery's table R can flip the condition for the
outer rows it is related to (idIVM Table 13, the antisemijoin's rules, here for a change of its
right input; the paper has no semijoin table, and ours mirrors it). Those rows,
selected through ``SubqueryPredicate.affected`` on the pre- and the post-image of
every changed R row, are deleted by ID and re-derived from the post-state, where
PostgreSQL evaluates EXISTS / IN / NOT IN with its exact NULL semantics. An
uncorrelated subquery relates to every outer row, so its changes re-derive all
of them. A subquery over an inner join R ⋈ S gets the same two steps for each of
its tables, the others read in either state (``_through_others``); the right-only
rows of a RIGHT or FULL join after several tables are such an antijoin
(frontend/outer_joins.py).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import BRANCH_COLUMN, SubqueryPredicate, conjuncts_below, has_subquery, refs
from ..program import relations as R
from ..program.steps import DeleteMatching, Step
from ..program.trees import alias as alias_
from ..program.trees import all_of, any_of, col, eq, exists, num, select, subquery, union_all
from .idiff_steps import changed_any, insert_rows, kind_is_not
from .spj import DIFF_ALIAS, VIEW_ALIAS, SpjTarget, base_mapping, bind_with, binder


def _changed(target: SpjTarget, sq: SubqueryPredicate, changed: str,
             outer: dict[str, tuple[str, str]] | None = None) -> exp.Expression:
    """Changed rows of the subquery's table `changed` (pre- or post-image) related to the outer row in
    scope.

    An update that leaves every column of that table the subquery reads as it was cannot flip the
    condition for any outer row (an i-diff's update keeps its key): it is skipped. So a price update
    of a part re-derives nothing through `NOT EXISTS (SELECT 1 FROM parts WHERE pid = dp.pid)`, the
    anti-join of an outer join on the part's key."""
    outer = outer or base_mapping(target)
    cond = sq.affected()
    read = sorted({c.name for c in cond.find_all(exp.Column) if c.table == changed} - set(dict(sq.tables())[changed].key))
    cond = _through_others(target, sq, changed, cond)
    pre = bind_with({**outer, changed: (DIFF_ALIAS, R.pre(""))})(cond)
    post = bind_with({**outer, changed: (DIFF_ALIAS, R.post(""))})(cond)
    related = any_of([all_of([kind_is_not(R.INSERTED), pre]), all_of([kind_is_not(R.DELETED), post])])
    moved = [kind_is_not(R.UPDATED)] + ([changed_any(read)] if read else [])
    return all_of([any_of(moved), related])


def _through_others(target: SpjTarget, sq: SubqueryPredicate, changed: str, cond: exp.Expression) -> exp.Expression:
    """For a subquery over a join, `cond` required of some rows of its other tables, in either state.

    An outer row's condition flips only if a combination of subquery rows matching it appears or
    goes; one of its rows changed. When it is a row of `changed`, the others of that combination
    were there before or are there now (a partner deleted in the same window is only in the
    pre-state): so each other table is read as its post-state UNION ALL the pre-images of its changed
    rows. More rows than needed only re-derive more outer rows; none is missed."""
    others = [(a, t) for a, t in sq.tables() if a != changed]
    if not others:
        return cond
    return exists(select([exp.Literal.number(1)], [_either_state(target, sq, a, t) for a, t in others], [cond]))


def _either_state(target: SpjTarget, sq: SubqueryPredicate, alias: str, table) -> exp.Subquery:
    """A table's rows in the post-state and the pre-images of its changed rows, as `alias` (the
    columns the subquery reads of it: a schema change of the others leaves the program valid)."""
    now, before = f"{alias}_now", f"{alias}_before"
    read = sorted({c.name for c in sq.affected().find_all(exp.Column) if c.table == alias}) or list(table.key)
    post = select([col(now, c) for c in read], [R.base(table.schema, table.name, now)])
    pre = select([alias_(col(before, R.pre(c)), c) for c in read],
                 [R.delta(table.schema, table.name, before)], [kind_is_not(R.INSERTED, alias=before)])
    return subquery(union_all([post, pre]), alias)


def rule(target: SpjTarget, sq: SubqueryPredicate) -> list[Step]:
    """The semijoin's or antijoin's steps for changes of its right input, the subquery's tables: for
    each of them, delete the outer rows its changes may affect, by ID, then re-derive them from the
    post-state."""
    out: list[Step] = []
    related = sorted({a for a, _ in refs(sq.affected()) if a in target.scan_alias})
    by_id = [eq(col(target.scan_alias[a], i.column), col(VIEW_ALIAS, i.name))
             for a in related for i in target.ids_of(a)]
    if target.branch is not None:  # an uncorrelated subquery matches no ID: stay in this branch's rows
        by_id.append(eq(col(VIEW_ALIAS, BRANCH_COLUMN), num(int(target.branch))))
    for changed, table in sq.tables():
        delta = R.delta(table.schema, table.name, DIFF_ALIAS)
        label = f"Δ[{table.name}] of subquery {changed}"
        out.append(DeleteMatching(
            phase=0, purpose=f"{label}: delete the outer rows it may affect, by ID", target=target.ref(),
            using=[delta] + [target.base(a) for a in related],
            condition=all_of(by_id + [_changed(target, sq, changed)]),
            driven_by=R.table_key(table.schema, table.name)))
        bind = binder(target, None)
        filters = [bind(c) for c in conjuncts_below(target.plan)]
        filters.append(_affected_ids(target, sq, changed, related, delta)
                       or exists(select([exp.Literal.number(1)], [delta.copy()], [_changed(target, sq, changed)])))
        out.append(insert_rows(
            target, None, [], filters, bind, froms=[target.base(s) for s in target.scan_alias], id_image=None,
            phase=2, purpose=f"{label}: re-derive those outer rows from the post-state",
            driven_by=R.table_key(table.schema, table.name)))
    return out


def _affected_ids(target: SpjTarget, sq: SubqueryPredicate, changed: str, related: list[str],
                  delta: exp.Table) -> exp.Expression | None:
    """`(IDs of the related outer scans) IN (those IDs of the rows the changed R rows relate to)`.

    Driven from the i-diff: PostgreSQL plans the subquery from the few changed rows into the outer
    tables' indexes (an OR of the pre- and the post-image condition becomes a BitmapOr), then joins
    its distinct IDs to the outer query by key. An EXISTS over the i-diff inside the outer query's
    WHERE is evaluated once per outer row instead: for the anti-join of `devices LEFT JOIN
    devices_parts`, a scan of every link for one changed part. None for an uncorrelated subquery."""
    if not related:
        return None
    inner = {a: f"{target.scan_alias[a]}_r" for a in related}
    ids = [(a, i.column) for a in related for i in target.ids_of(a)]
    bases = [R.base(target.tables[a].schema, target.tables[a].name, inner[a]) for a in related]
    source = select([col(inner[a], c) for a, c in ids], [delta.copy()] + bases,
                    [_changed(target, sq, changed, {a: (inner[a], "") for a in related})])
    outer = [col(target.scan_alias[a], c) for a, c in ids]
    return exp.In(this=outer[0] if len(outer) == 1 else exp.Tuple(expressions=outer), query=exp.Subquery(this=source))


def without_subqueries(conds: list[exp.Expression]) -> list[exp.Expression]:
    return [c for c in conds if not has_subquery(c)]
