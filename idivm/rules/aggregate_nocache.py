"""The general aggregation rule without an intermediate cache (footnote 6).

When the aggregate's input has a many-to-many join (algebra/functional.py), the
paper does not materialize it: recomputing a group from the base tables reads no
more tuples than reading it from such a cache, and the cache would be larger
than its tables. Table 7's rule then reads Input^post directly, and the affected
groups are found from the base-table changes themselves:

- post-state groups: inserted and updated rows of each table (their post-images),
  joined with the other tables' post-state, give the groups they now belong to;
- pre-state groups: deleted and updated rows (their pre-images), joined with the
  other tables' pre-state (unchanged rows plus pre-images, expanded as in the
  tuple strategy), give the groups they belonged to.

Updates that change no attribute the input reads are skipped. The view then
deletes the affected groups and re-aggregates them from the base tables,
restricted to those groups (rules/aggregate.py, group_select).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import conjuncts_below, refs, scans
from ..program import relations as R
from ..program.steps import CreateScratch, InsertRows, Step
from ..program.trees import alias, any_of, col, select, subquery
from .idiff_steps import changed_any, kind_is, kind_is_not
from .pre_state import pre_state_rows
from .spj import binder, full_query


def _relevant(target, scan: str) -> exp.Expression:
    """Filter on the i-diff rows of scan: inserts, deletes, and updates of attributes the input reads."""
    plan = target.plan
    read = {c for e in [e for _, e in plan.outputs] + conjuncts_below(plan.child) for a, c in refs(e) if a == scan}
    read -= set(target.tables[scan].key)
    if not read:
        return kind_is_not(R.UPDATED)
    return any_of([kind_is_not(R.UPDATED), changed_any(sorted(read))])


def affected_group_steps(t) -> list[Step]:
    cache = t.cache  # the input, as a SpjTarget that is never materialized
    keys = t.agg.keys
    key_exprs = dict(cache.plan.outputs)
    conds = conjuncts_below(cache.plan.child)
    out: list[Step] = [CreateScratch(
        phase=-1, purpose="the groups this maintenance touches", name=t.affected,
        source=select([col(None, k) for k in keys], [subquery(full_query(cache), "c")]))]

    def key_list(bind) -> list[exp.Expression]:
        return [alias(bind(key_exprs[k]), k) for k in keys]

    for s in scans(cache.plan):
        others = [o.alias for o in scans(cache.plan) if o.alias != s.alias]
        bind = binder(cache, s.alias)
        relevant = _relevant(cache, s.alias)
        filters = [kind_is(R.INSERTED, R.UPDATED), relevant] + [bind(c) for c in conds]
        froms = [cache.delta_of(s.alias)] + [cache.base(o) for o in others]
        out.append(InsertRows(
            phase=0, purpose=f"affected groups: post-state groups of inserted/updated {s.alias} rows",
            target=R.scratch(t.affected), columns=list(keys),
            source=select(key_list(bind), froms, filters, distinct=True), driven_by=cache.table_key(s.alias)))
        pre = pre_state_rows(cache, s.alias, conds, key_list, s_filter=relevant)
        out.append(InsertRows(
            phase=0, purpose=f"affected groups: pre-state groups of deleted/updated {s.alias} rows",
            target=R.scratch(t.affected), columns=list(keys),
            source=select([col(None, k) for k in keys], [subquery(pre, "p")], distinct=True),
            driven_by=cache.table_key(s.alias)))
    return out
