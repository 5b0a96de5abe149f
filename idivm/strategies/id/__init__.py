"""The ``id`` strategy: the idIVM paper's four passes (Katsis et al., SIGMOD'15, Sections 4-5):
base i-diff schemas, rule instantiation along each scan's path to the root (the rule DAG),
composition, and minimization (id/minimize.py, Figure 8's rewrites in id/constraint_rewrites.py);
each surviving view-level i-diff becomes one program step."""
from __future__ import annotations

from ...algebra.plan import scans
from ...program.steps import Program
from ...rules import instantiate
from ...rules.diff_schemas import base_diff_schemas
from ...rules.idiff_steps import idiff_step
from ...rules import subquery_steps
from ...rules.spj import SpjTarget
from .minimize import minimize


def id_program(target: SpjTarget, minimized: bool = True) -> Program:
    program = Program(strategy="id", steps=subquery_steps(target))
    for schema in base_diff_schemas(target.plan):
        scan = next(s for s in scans(target.plan) if s.alias == schema.scan)
        for d in instantiate(target.plan, scan, schema):
            m = minimize(d) if minimized else d
            if m is None:
                program.derivations.append("\n    ".join(d.trail) + "\n    => ∅ (minimization: provably empty)")
                continue
            d = m
            shown = d.format()  # printing an i-diff's conditions is a good part of a compilation: once
            program.derivations.append("\n    ".join(d.trail) + f"\n    => {shown}")
            program.steps.append(idiff_step(target, d, purpose=f"{schema.label()} -> {shown}",
                                            driven_by=target.table_key(schema.scan)))
    return program
