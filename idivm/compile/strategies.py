"""Δ-program generation for each strategy, sharing plan, schemas and rendering.

- ``id``: the paper's four passes: base i-diff schemas, rule instantiation
  along each scan's path to the root (rule DAG), composition, minimization.
- ``tuple``: the classical baseline. Per scan, the t-diff of deleted view
  tuples is computed on the pre-state of all tables (full view tuples joined
  from the base tables) and the t-diff of inserted ones on the post-state.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import conjuncts_below, scans
from ..errors import IdivmError
from ..program import relations as R
from ..program.steps import DeleteMatching, Program
from ..program.trees import alias, col, eq, exists, select, subquery, union_all, all_of
from ..rules import instantiate
from .diff_schemas import base_diff_schemas
from .minimize import minimize
from .render import DIFF_ALIAS, VIEW_ALIAS, Target, bind_with, binder, idiff_step, insert_rows, kind_is, kind_is_not
from .semijoin import subquery_steps, without_subqueries

STRATEGIES = ("id", "tuple")


def compile_program(target: Target, strategy: str, minimized: bool = True) -> Program:
    if strategy == "id":
        return id_program(target, minimized)
    if strategy == "tuple":
        return tuple_program(target)
    raise IdivmError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def id_program(target: Target, minimized: bool = True) -> Program:
    program = Program(strategy="id", steps=subquery_steps(target))
    for schema in base_diff_schemas(target.plan):
        scan = next(s for s in scans(target.plan) if s.alias == schema.scan)
        for d in instantiate(target.plan, scan, schema):
            m = minimize(d) if minimized else d
            if m is None:
                program.derivations.append("\n    ".join(d.trail) + "\n    => ∅ (minimization: provably empty)")
                continue
            d = m
            program.derivations.append("\n    ".join(d.trail) + f"\n    => {d.format()}")
            program.steps.append(idiff_step(target, d, purpose=f"{schema.label()} -> {d.format()}",
                                            driven_by=target.captured_id(schema.scan)))
    return program


MAX_PRESTATE_BRANCHES = 64  # 7 tables: the paper's largest view (Figure 12b, j = 6)


def _unchanged(target: Target, scan: str) -> exp.Expression:
    """Filter: the base row of `scan` was not changed in this window (so it is also its pre-state)."""
    t = target.tables[scan]
    a = target.scan_alias[scan]
    keys = exp.Tuple(expressions=[col(a, k) for k in t.key])
    changed = select([col(None, R.post(k)) for k in t.key], [target.delta_of(scan, alias=None)],
                     [kind_is_not(R.DELETED, alias=None)])
    return exp.Not(this=exp.In(this=keys, query=exp.Subquery(this=changed)))


def pre_state_view_ids(target: Target, s: str, conds) -> exp.Query:
    """IDs of pre-state view tuples that use a deleted/updated tuple of scan s."""
    def ids(bind) -> list[exp.Expression]:
        return [alias(bind(exp.column(i.column, i.scan)), i.name) for i in target.plan.ids]

    return pre_state_rows(target, s, conds, ids)


def pre_state_rows(target: Target, s: str, conds, outputs, s_filter: exp.Expression | None = None) -> exp.Query:
    """Pre-state rows of the target's input that use a deleted/updated tuple of scan s, as the
    select list outputs(bind) produces over them (bind rebinds scan columns to their pre-state).

    The pre-state of every other scan is its unchanged base rows UNION ALL the pre-images of
    its changed rows; s_filter further restricts s's i-diff rows. Instead of one subquery per table (which PostgreSQL cannot push join
    keys into), the union is expanded into one plain join per choice of branch, so that each
    branch can drive index lookups from the small i-diff tables.
    """
    others = [o.alias for o in scans(target.plan) if o.alias != s]
    if 2 ** len(others) > MAX_PRESTATE_BRANCHES:
        raise IdivmError(f"the tuple strategy supports views over at most "
                         f"{MAX_PRESTATE_BRANCHES.bit_length()} tables; use --strategy id")
    branches = []
    for mask in range(2 ** len(others)):
        mapping = {s: (DIFF_ALIAS, R.pre(""))}
        froms = [target.delta_of(s)]
        filters = [kind_is(R.DELETED, R.UPDATED)] + ([s_filter.copy()] if s_filter is not None else [])
        for i, o in enumerate(others):
            a = target.scan_alias[o]
            if mask >> i & 1:  # o's changed rows, as they were before
                mapping[o] = (a, R.pre(""))
                froms.append(target.delta_of(o, alias=a))
                filters.append(kind_is(R.DELETED, R.UPDATED, alias=a))
                # a one-time filter: PostgreSQL skips the whole branch when o did not change
                filters.append(exists(select([exp.Literal.number(1)], [target.delta_of(o, alias=None)],
                                             [kind_is_not(R.INSERTED, alias=None)])))
            else:  # o's unchanged rows
                mapping[o] = (a, "")
                froms.append(target.base(o))
                filters.append(_unchanged(target, o))
        bind = bind_with(mapping)
        filters += [bind(c) for c in conds]
        branches.append(select(outputs(bind), froms, filters))
    return union_all(branches)


def tuple_program(target: Target) -> Program:
    program = Program(strategy="tuple", steps=subquery_steps(target))
    conds = conjuncts_below(target.plan)
    # pre-state tuples are found without EXISTS/IN conjuncts (their table is read in its post-state
    # here): deleting a superset of the pre-state tuples is safe, the inserts re-derive the rest
    pre_conds = without_subqueries(conds)
    match = [eq(col(VIEW_ALIAS, i.name), col("x", i.name)) for i in target.plan.ids]
    for s in scans(target.plan):
        others = [o.alias for o in scans(target.plan) if o.alias != s.alias]
        program.steps.append(DeleteMatching(
            phase=0, purpose=f"D-_V: pre-state view tuples with deleted/updated {s.alias} tuples",
            target=target.ref(), using=[subquery(pre_state_view_ids(target, s.alias, pre_conds), "x")],
            condition=all_of(match), driven_by=target.captured_id(s.alias)))
        bind_post = binder(target, s.alias)
        filters = [kind_is(R.INSERTED, R.UPDATED)] + [bind_post(c) for c in conds]
        program.steps.append(insert_rows(
            target, s.alias, others, filters, bind_post, phase=2,
            purpose=f"D+_V: post-state view tuples with inserted/updated {s.alias} tuples",
            driven_by=target.captured_id(s.alias)))
    return program
