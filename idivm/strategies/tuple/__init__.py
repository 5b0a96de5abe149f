"""The ``tuple`` strategy: the classical baseline the paper compares against. Per scan, the t-diff
of deleted view tuples is computed on the pre-state of all tables (full view tuples joined from
the base tables, rules/pre_state.py) and the t-diff of inserted ones on the post-state."""
from __future__ import annotations

from sqlglot import exp

from ...algebra.plan import conjuncts_below, scans
from ...program import relations as R
from ...program.steps import DeleteMatching, Program
from ...program.trees import alias, all_of, col, eq, subquery
from ...rules.idiff_steps import insert_rows, kind_is
from ...rules.pre_state import pre_state_rows
from ...rules import subquery_steps
from ...rules.semijoin import without_subqueries
from ...rules.spj import VIEW_ALIAS, SpjTarget, binder


def pre_state_view_ids(target: SpjTarget, s: str, conds, before: frozenset[str]) -> exp.Query:
    """IDs of pre-state view tuples whose first deleted/updated tuple, in the order of the scans,
    is one of scan s (the scans `before` it unchanged in them): each such view tuple is found by
    one scan's step, not by one per changed tuple in it (rules/pre_state.py)."""
    def ids(bind) -> list[exp.Expression]:
        return [alias(bind(exp.column(i.column, i.scan)), i.name) for i in target.plan.ids]

    return pre_state_rows(target, s, conds, ids, unchanged=before)


def tuple_program(target: SpjTarget) -> Program:
    program = Program(strategy="tuple", steps=subquery_steps(target))
    conds = conjuncts_below(target.plan)
    # pre-state tuples are found without EXISTS/IN conjuncts (their table is read in its post-state
    # here): deleting a superset of the pre-state tuples is safe, the inserts re-derive the rest
    pre_conds = without_subqueries(conds)
    match = [eq(col(VIEW_ALIAS, i.name), col("x", i.name)) for i in target.plan.ids]
    in_order = scans(target.plan)
    for k, s in enumerate(in_order):
        others = [o.alias for o in in_order if o.alias != s.alias]
        before = frozenset(o.alias for o in in_order[:k])
        program.steps.append(DeleteMatching(
            phase=0, purpose=f"D-_V: pre-state view tuples with deleted/updated {s.alias} tuples",
            target=target.ref(), using=[subquery(pre_state_view_ids(target, s.alias, pre_conds, before), "x")],
            condition=all_of(match), driven_by=target.table_key(s.alias)))
        bind_post = binder(target, s.alias)
        filters = [kind_is(R.INSERTED, R.UPDATED)] + [bind_post(c) for c in conds]
        program.steps.append(insert_rows(
            target, s.alias, others, filters, bind_post, phase=2,
            purpose=f"D+_V: post-state view tuples with inserted/updated {s.alias} tuples",
            driven_by=target.table_key(s.alias)))
    return program
