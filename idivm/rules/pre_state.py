"""The pre-state of a join, from post-state base tables and i-diffs: every table's unchanged rows
UNION ALL the pre-images of its changed rows. The tuple strategy finds deleted view tuples with it;
the cacheless aggregation rule (aggregate_nocache.py) the groups rows left."""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import scans
from ..errors import IdivmError
from ..program import relations as R
from ..program.trees import col, eq, exists, select, union_all
from .idiff_steps import kind_is, kind_is_not
from .spj import DIFF_ALIAS, SpjTarget, bind_with

MAX_PRESTATE_BRANCHES = 64  # 7 tables: the paper's largest view (Figure 12b, j = 6)


CHANGED_ALIAS = "__idivm_changed"


def _unchanged(target: SpjTarget, scan: str) -> exp.Expression:
    """Filter: the base row of `scan` was not changed in this window (so it is also its pre-state):
    no i-diff row with its key as post-image. NOT EXISTS rather than NOT (key) IN (...): the same
    here, since primary keys are never NULL, and an anti-join for every engine, where Spark plans a
    multi-column NOT IN as a nested loop over both sides (minutes for 50,000 changed links)."""
    t = target.tables[scan]
    a = target.scan_alias[scan]
    changed = select([exp.Literal.number(1)], [target.delta_of(scan, alias=CHANGED_ALIAS)],
                     [kind_is_not(R.DELETED, alias=CHANGED_ALIAS)]
                     + [eq(col(CHANGED_ALIAS, R.post(k)), col(a, k)) for k in t.key])
    return exp.Not(this=exists(changed))


def pre_state_rows(target: SpjTarget, s: str, conds, outputs, s_filter: exp.Expression | None = None,
                   unchanged: frozenset[str] = frozenset()) -> exp.Query:
    """Pre-state rows of the target's input that use a deleted/updated tuple of scan s, as the
    select list outputs(bind) produces over them (bind rebinds scan columns to their pre-state).

    The pre-state of every other scan is its unchanged base rows UNION ALL the pre-images of
    its changed rows, except the scans in `unchanged`, read in their unchanged rows alone;
    s_filter further restricts s's i-diff rows. Instead of one subquery per table (which PostgreSQL cannot push join
    keys into), the union is expanded into one plain join per choice of branch, so that each
    branch can drive index lookups from the small i-diff tables.

    A caller that needs every pre-state row using some deleted/updated tuple, once, takes the scans
    in order and passes the scans before s as `unchanged`: a row belongs to the pass of the first
    scan whose tuple in it changed. Over n scans that is 2^n - 1 joins where a pass per scan with
    every other scan in both states plans n * 2^(n-1) of them (a seven-way join: 127 against 448).
    """
    others = [o.alias for o in scans(target.plan) if o.alias != s]
    either = [o for o in others if o not in unchanged]  # read unchanged or as pre-images, one branch each
    if 2 ** len(either) > MAX_PRESTATE_BRANCHES:
        raise IdivmError(f"the tuple strategy supports views over at most "
                         f"{MAX_PRESTATE_BRANCHES.bit_length()} tables; use --strategy id")
    branches = []
    for mask in range(2 ** len(either)):
        mapping = {s: (DIFF_ALIAS, R.pre(""))}
        froms = [target.delta_of(s)]
        filters = [kind_is(R.DELETED, R.UPDATED)] + ([s_filter.copy()] if s_filter is not None else [])
        for o in others:
            a = target.scan_alias[o]
            if o in either and mask >> either.index(o) & 1:  # o's changed rows, as they were before
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
