"""Shared by σ (idIVM Table 6) and ⋈ (idIVM Table 10): how an i-diff passes a set of conjuncts.

- insert: filter by the conditions on post-state values (joining the other
  input's post-state for a join).
- delete: filter by the conjuncts that only read the origin scan, on its
  pre-state values; the rest may overestimate (Example 4.8).
- update of attributes no conjunct reads: passes unchanged ("not triggered").
- update of attributes read only by conjuncts local to the origin scan
  (X ⊆ I ∪ A''): rows now failing them -> delete, rows passing -> update,
  rows newly passing -> insert of Input^post ⋉ Δu, all from the diff alone.
- update of attributes read by a conjunct that also reads other scans (a join
  attribute): the input rows of those IDs may change arbitrarily, so delete
  them by ID and insert the post-state rows of Input^post ⋉ Δu.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import Node, conjuncts_below, refs, scans
from .idiff import IDiff, conj, is_not_true, pre


def _scans_of(e: exp.Expression) -> set[str]:
    return {a for a, _ in refs(e)}


def through(d: IDiff, conjuncts: list[exp.Expression], name: str, input_node: Node, other: Node | None) -> list[IDiff]:
    other_scans = tuple(s.alias for s in scans(other)) if other is not None else ()
    other_conds = conjuncts_below(other) if other is not None else []
    if d.kind == "+":
        return [d.derive(f"{name}: insert filtered", joined=d.joined + other_scans,
                         where=d.where + tuple(other_conds) + tuple(conjuncts))]
    if d.kind == "-":
        local = [c for c in conjuncts if _scans_of(c) == {d.origin}]
        return [d.derive(f"{name}: delete" + (" filtered on pre-state" if local else " passes"),
                         where=d.where + tuple(pre(c, d.origin) for c in local))]
    touched = {(d.origin, a) for a in d.schema.attrs}
    affected = [c for c in conjuncts if refs(c) & touched]
    if not affected:
        return [d.derive(f"{name}: update passes (condition not affected)")]

    # Input^post ⋉ Δu: the input's rows for the updated IDs, re-derived from post-state
    rederive_scans = tuple(s.alias for s in scans(input_node) if s.alias != d.origin) + other_scans
    rederive_where = tuple(conjuncts_below(input_node)) + tuple(other_conds) + tuple(conjuncts)
    if any(_scans_of(c) != {d.origin} for c in affected):
        return [
            d.derive(f"{name}: update of a join attribute -> delete by ID", kind="-"),
            d.derive(f"{name}: update of a join attribute -> insert Input^post ⋉ Δu", kind="+",
                     joined=d.joined + rederive_scans, where=d.where + rederive_where, semijoined=True),
        ]
    c = conj(affected)
    return [
        d.derive(f"{name}: update now failing the condition -> delete", kind="-", where=d.where + (is_not_true(c),)),
        d.derive(f"{name}: update passing the condition -> update", where=d.where + (c,)),
        d.derive(f"{name}: update newly passing the condition -> insert Input^post ⋉ Δu", kind="+",
                 joined=d.joined + rederive_scans, semijoined=True,
                 where=d.where + (is_not_true(pre(c, d.origin)),) + rederive_where),
    ]
