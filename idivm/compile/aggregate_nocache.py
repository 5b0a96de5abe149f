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
restricted to those groups (compile/aggregate.py, group_select).
"""
from __future__ import annotations

from ..algebra.plan import conjuncts_below, refs, scans
from ..sqltext import ident
from .render import DIFF_ALIAS, _where, binder, full_query
from .script import Statement
from .strategies import pre_state_rows


def _relevant(target, scan: str) -> str:
    """Filter on the i-diff rows of scan: inserts, deletes, and updates of attributes the input reads."""
    plan = target.plan
    read = {c for e in [e for _, e in plan.outputs] + conjuncts_below(plan.child) for a, c in refs(e) if a == scan}
    read -= set(target.tables[scan].key)
    dd = ident(DIFF_ALIAS)
    if not read:
        return f"{dd}.{ident('kind')} <> 'U'"
    changed = " OR ".join(f"{dd}.{ident('pre__' + c)} IS DISTINCT FROM {dd}.{ident('post__' + c)}" for c in sorted(read))
    return f"{dd}.{ident('kind')} <> 'U' OR {changed}"


def affected_group_statements(t) -> list[Statement]:
    cache = t.cache  # the input, as a Target that is never materialized
    keys = t.agg.keys
    key_exprs = dict(cache.plan.outputs)
    conds = conjuncts_below(cache.plan.child)
    out = [Statement(
        phase=-1, purpose="the groups this maintenance touches",
        sql=f"CREATE TEMP TABLE {t.affected} ON COMMIT DROP AS SELECT {', '.join(ident(k) for k in keys)} "
            f"FROM (\n{full_query(cache)}) AS {ident('c')} WITH NO DATA")]
    cols = ", ".join(ident(k) for k in keys)

    def key_list(bind) -> list[str]:
        return [f"{bind(key_exprs[k])} AS {ident(k)}" for k in keys]

    dd = ident(DIFF_ALIAS)
    for s in scans(cache.plan):
        others = [o.alias for o in scans(cache.plan) if o.alias != s.alias]
        bind = binder(cache, s.alias)
        relevant = _relevant(cache, s.alias)
        filters = [f"{dd}.{ident('kind')} IN ('I', 'U')", relevant] + [bind(c) for c in conds]
        froms = [f"{cache.delta_of(s.alias)} AS {dd}"] + [cache.base(o) for o in others]
        out.append(Statement(
            phase=0, purpose=f"affected groups: post-state groups of inserted/updated {s.alias} rows",
            sql=f"INSERT INTO {t.affected} ({cols})\nSELECT DISTINCT {', '.join(key_list(bind))}\n"
                f"FROM {', '.join(froms)}\nWHERE {_where(filters)}", driven_by=cache.captured_id(s.alias)))
        pre = pre_state_rows(cache, s.alias, conds, key_list, s_filter=relevant)
        out.append(Statement(
            phase=0, purpose=f"affected groups: pre-state groups of deleted/updated {s.alias} rows",
            sql=f"INSERT INTO {t.affected} ({cols})\nSELECT DISTINCT {cols} FROM (\n  {pre}) AS {ident('p')}",
            driven_by=cache.captured_id(s.alias)))
    return out

