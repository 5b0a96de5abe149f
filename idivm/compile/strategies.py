"""Δ-script generation for each strategy, sharing plan, schemas and rendering.

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
from ..rules import instantiate
from ..sqltext import ident
from .diff_schemas import base_diff_schemas
from .minimize import minimize
from .render import DIFF_ALIAS, VIEW_ALIAS, Target, _where, bind_with, binder, insert_rows, render_idiff
from .script import DeltaScript, Statement
from .semijoin import subquery_statements, without_subqueries

STRATEGIES = ("id", "tuple")


def compile_script(target: Target, strategy: str, minimized: bool = True) -> DeltaScript:
    if strategy == "id":
        return id_script(target, minimized)
    if strategy == "tuple":
        return tuple_script(target)
    raise IdivmError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def id_script(target: Target, minimized: bool = True) -> DeltaScript:
    script = DeltaScript(strategy="id", statements=subquery_statements(target))
    for schema in base_diff_schemas(target.plan):
        scan = next(s for s in scans(target.plan) if s.alias == schema.scan)
        for d in instantiate(target.plan, scan, schema):
            m = minimize(d) if minimized else d
            if m is None:
                script.derivations.append("\n    ".join(d.trail) + "\n    => ∅ (minimization: provably empty)")
                continue
            d = m
            phase, sql = render_idiff(target, d)
            script.derivations.append("\n    ".join(d.trail) + f"\n    => {d.format()}")
            script.statements.append(Statement(phase=phase, purpose=f"{schema.label()} -> {d.format()}", sql=sql,
                                               driven_by=target.captured_id(schema.scan)))
    return script


MAX_PRESTATE_BRANCHES = 64  # 7 tables: the paper's largest view (Figure 12b, j = 6)


def _unchanged(target: Target, scan: str) -> str:
    """Filter: the base row of `scan` was not changed in this window (so it is also its pre-state)."""
    t = target.tables[scan]
    a = ident(target.scan_alias[scan])
    keys = ", ".join(f"{a}.{ident(k)}" for k in t.key)
    post_keys = ", ".join(ident("post__" + k) for k in t.key)
    return f"({keys}) NOT IN (SELECT {post_keys} FROM {target.delta_of(scan)} WHERE {ident('kind')} <> 'D')"


def pre_state_view_ids(target: Target, s: str, conds) -> str:
    """IDs of pre-state view tuples that use a deleted/updated tuple of scan s."""
    def ids(bind) -> list[str]:
        return [f"{bind(exp.column(i.column, i.scan))} AS {ident(i.name)}" for i in target.plan.ids]

    return pre_state_rows(target, s, conds, ids)


def pre_state_rows(target: Target, s: str, conds, outputs, s_filter: str | None = None) -> str:
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
    dd = ident(DIFF_ALIAS)
    branches = []
    for mask in range(2 ** len(others)):
        mapping = {s: (DIFF_ALIAS, "pre__")}
        froms = [f"{target.delta_of(s)} AS {dd}"]
        filters = [f"{dd}.{ident('kind')} IN ('D', 'U')"] + ([s_filter] if s_filter else [])
        for i, o in enumerate(others):
            alias = target.scan_alias[o]
            if mask >> i & 1:  # o's changed rows, as they were before
                mapping[o] = (alias, "pre__")
                froms.append(f"{target.delta_of(o)} AS {ident(alias)}")
                filters.append(f"{ident(alias)}.{ident('kind')} IN ('D', 'U')")
                # a one-time filter: PostgreSQL skips the whole branch when o did not change
                filters.append(f"EXISTS (SELECT 1 FROM {target.delta_of(o)} WHERE {ident('kind')} <> 'I')")
            else:  # o's unchanged rows
                mapping[o] = (alias, "")
                froms.append(target.base(o))
                filters.append(_unchanged(target, o))
        bind = bind_with(mapping)
        filters += [bind(c) for c in conds]
        branches.append(f"SELECT {', '.join(outputs(bind))}\n  FROM {', '.join(froms)}\n  WHERE {_where(filters)}")
    return "\n  UNION ALL\n  ".join(branches)


def tuple_script(target: Target) -> DeltaScript:
    script = DeltaScript(strategy="tuple", statements=subquery_statements(target))
    conds = conjuncts_below(target.plan)
    # pre-state tuples are found without EXISTS/IN conjuncts (their table is read in its post-state
    # here): deleting a superset of the pre-state tuples is safe, the inserts re-derive the rest
    pre_conds = without_subqueries(conds)
    v, x = ident(VIEW_ALIAS), ident("x")
    match = " AND ".join(f"{v}.{ident(i.name)} = {x}.{ident(i.name)}" for i in target.plan.ids)
    for s in scans(target.plan):
        others = [o.alias for o in scans(target.plan) if o.alias != s.alias]
        script.statements.append(Statement(
            phase=0, purpose=f"D-_V: pre-state view tuples with deleted/updated {s.alias} tuples",
            sql=f"DELETE FROM {target.table} AS {v}\nUSING (\n  {pre_state_view_ids(target, s.alias, pre_conds)}) AS {x}\nWHERE {match}",
            driven_by=target.captured_id(s.alias),
        ))
        bind_post = binder(target, s.alias)
        filters = [f"{ident(DIFF_ALIAS)}.{ident('kind')} IN ('I', 'U')"] + [bind_post(c) for c in conds]
        script.statements.append(Statement(
            phase=2, purpose=f"D+_V: post-state view tuples with inserted/updated {s.alias} tuples",
            sql=insert_rows(target, s.alias, others, filters, bind_post),
            driven_by=target.captured_id(s.alias),
        ))
    return script
