"""π_D,f(X)->c (idIVM Table 8, the generalized projection's rules): the view-level i-diffs.

Inserts project the output and ID columns; deletes keep the origin's IDs;
an update reaches the view only if some output expression reads an updated
attribute (otherwise σ_isupd would drop every tuple: "not triggered").
"""
from __future__ import annotations

from ..algebra.plan import Node, Project, conjuncts_below, refs, scans
from .idiff import IDiff


def rule(op: Project, d: IDiff, below: Node) -> list[IDiff]:
    if d.kind != "u":
        return [d.derive("π: projects output and ID columns")]
    touched = {(d.origin, a) for a in d.schema.attrs}
    if any(refs(e) & touched for n, e in op.outputs if n in op.stable):
        # a group key of the cache changes: the row moves between groups, so both must hear of it
        others = tuple(s.alias for s in scans(op.child) if s.alias != d.origin)
        return [
            d.derive("π: update of a group key -> delete", kind="-"),
            d.derive("π: update of a group key -> insert Input^post ⋉ Δu", kind="+", joined=d.joined + others,
                     where=d.where + tuple(conjuncts_below(op.child)), semijoined=True),
        ]
    if not any(refs(e) & touched for _, e in op.outputs):
        return []
    return [d.derive("π: update of output columns reading the changed attributes")]


def updated_outputs(op: Project, d: IDiff) -> list[str]:
    touched = {(d.origin, a) for a in d.schema.attrs}
    return [n for n, e in op.outputs if refs(e) & touched]
