"""Base-table i-diff schema generation (idIVM Section 5: which shapes of change, each an i-diff
schema with its own Δ-script statements, a base table's modifications are logged as).

Per scan of a base table R(I, A): one insert schema, one delete schema, one
update schema per set of conditional attributes C_op (the non-key attributes
of R that one conjunct reads), and one update schema for the
non-conditional attributes the output reads. An update of a non-conditional
attribute then takes the cheap path (no base-table join), and attributes the
view never reads produce no i-diff at all.
"""
from __future__ import annotations

from ..algebra.plan import Project, conjuncts_below, refs, scans
from .idiff import DiffSchema


def base_diff_schemas(root: Project) -> list[DiffSchema]:
    out: list[DiffSchema] = []
    # group keys of an intermediate cache are conditional too: they decide a row's group
    conds = conjuncts_below(root) + [e for n, e in root.outputs if n in root.stable]
    for s in scans(root):
        non_key = set(s.table.non_key)
        out.append(DiffSchema(scan=s.alias, table=s.table, kind="+"))
        out.append(DiffSchema(scan=s.alias, table=s.table, kind="-"))
        cond_sets: list[tuple[str, ...]] = []
        for c in conds:
            attrs = tuple(a for a in s.table.non_key if (s.alias, a) in refs(c))
            if attrs and attrs not in cond_sets:
                cond_sets.append(attrs)
        conditional = {a for cs in cond_sets for a in cs}
        for cs in cond_sets:
            out.append(DiffSchema(scan=s.alias, table=s.table, kind="u", attrs=cs, conditional=True))
        read = {a for _, e in root.outputs for (sc, a) in refs(e) if sc == s.alias}
        nc = tuple(a for a in s.table.non_key if a in read and a not in conditional and a in non_key)
        if nc:
            out.append(DiffSchema(scan=s.alias, table=s.table, kind="u", attrs=nc, conditional=False))
    return out
