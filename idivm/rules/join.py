"""⋈_φ (idIVM Table 10, the join's rules), with × as the case of no conjuncts (Table 4, the cross
product's rules).

An insert from one input joins the other input's post-state; deletes and
updates keep identifying rows by the origin scan's IDs alone, which is why a
non-conditional update never touches the other input (Example 1.2).
"""
from __future__ import annotations

from ..algebra.plan import Join, Node, walk
from .conditions import through
from .idiff import IDiff


def rule(op: Join, d: IDiff, below: Node) -> list[IDiff]:
    """`below`: the input the i-diff comes from (one of op's two)."""
    from_left = any(n is below for n in walk(op.left))
    mine, other = (op.left, op.right) if from_left else (op.right, op.left)
    return through(d, op.conjuncts, "⋈", mine, other)
