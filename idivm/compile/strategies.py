"""Δ-script generation for each strategy, sharing plan, schemas and rendering.

- ``id``: the paper's four passes: base i-diff schemas, rule instantiation
  along each scan's path to the root (rule DAG), composition, minimization.
- ``tuple``: the classical baseline. Per scan, the t-diff of deleted view
  tuples is computed on the pre-state of all tables (full view tuples joined
  from the base tables) and the t-diff of inserted ones on the post-state.
"""
from __future__ import annotations

from ..algebra.plan import conjuncts_below, scans
from ..errors import IdivmError
from ..rules import instantiate
from ..rules.idiff import pre
from ..sqltext import ident
from .diff_schemas import base_diff_schemas
from .minimize import minimize
from .render import DIFF_ALIAS, VIEW_ALIAS, Target, _id_value, _where, binder, insert_rows, render_idiff
from .script import DeltaScript, Statement

STRATEGIES = ("id", "tuple")


def compile_script(target: Target, strategy: str) -> DeltaScript:
    if strategy == "id":
        return id_script(target)
    if strategy == "tuple":
        return tuple_script(target)
    raise IdivmError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def id_script(target: Target) -> DeltaScript:
    script = DeltaScript(strategy="id")
    for schema in base_diff_schemas(target.plan):
        scan = next(s for s in scans(target.plan) if s.alias == schema.scan)
        for d in instantiate(target.plan, scan, schema):
            d = minimize(d)
            phase, sql = render_idiff(target, d)
            script.derivations.append("\n    ".join(d.trail) + f"\n    => {d.format()}")
            script.statements.append(Statement(phase=phase, purpose=f"{schema.label()} -> {d.format()}", sql=sql))
    return script


def prestate(target: Target, scan: str) -> str:
    """Pre-state of a base table: post-state minus changed keys plus the changes' pre-images."""
    t = target.tables[scan]
    delta = target.delta_of(scan)
    b, x = ident("b"), ident("x")
    cols = ", ".join(f"{b}.{ident(c)}" for c in t.column_names)
    keymatch = " AND ".join(f"{x}.{ident('post__' + k)} = {b}.{ident(k)}" for k in t.key)
    pre_cols = ", ".join(f"{ident('pre__' + c)} AS {ident(c)}" for c in t.column_names)
    return (
        f"(SELECT {cols} FROM {t.qualified} AS {b} WHERE NOT EXISTS (SELECT 1 FROM {delta} AS {x} WHERE {keymatch})"
        f" UNION ALL SELECT {pre_cols} FROM {delta} WHERE {ident('kind')} IN ('D', 'U')) AS {ident(target.scan_alias[scan])}"
    )


def tuple_script(target: Target) -> DeltaScript:
    script = DeltaScript(strategy="tuple")
    conds = conjuncts_below(target.plan)
    v, dd = ident(VIEW_ALIAS), ident(DIFF_ALIAS)
    for s in scans(target.plan):
        others = [o.alias for o in scans(target.plan) if o.alias != s.alias]
        # D-_V: view tuples built from the pre-state, with s's deleted/updated tuples
        bind_pre = binder(target, s.alias, image="pre")
        filters = [f"{dd}.{ident('kind')} IN ('D', 'U')"] + [bind_pre(pre(c, s.alias)) for c in conds]
        ids = ", ".join(f"{_id_value(target, i, s.alias, 'pre')} AS {ident(i.name)}" for i in target.plan.ids)
        froms = [f"{target.delta_of(s.alias)} AS {dd}"] + [prestate(target, o) for o in others]
        match = " AND ".join(f"{v}.{ident(i.name)} = {ident('x')}.{ident(i.name)}" for i in target.plan.ids)
        script.statements.append(Statement(
            phase=0, purpose=f"D-_V: pre-state view tuples with changed {s.alias} tuples",
            sql=(f"DELETE FROM {target.table} AS {v}\nUSING (SELECT {ids}\n  FROM {', '.join(froms)}\n"
                 f"  WHERE {_where(filters)}) AS {ident('x')}\nWHERE {match}"),
        ))
        # D+_V: view tuples built from the post-state, with s's inserted/updated tuples
        bind_post = binder(target, s.alias)
        filters = [f"{dd}.{ident('kind')} IN ('I', 'U')"] + [bind_post(c) for c in conds]
        script.statements.append(Statement(
            phase=2, purpose=f"D+_V: post-state view tuples with inserted/updated {s.alias} tuples",
            sql=insert_rows(target, s.alias, others, filters, bind_post),
        ))
    return script
