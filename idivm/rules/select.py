"""σ_φ (Table 6): see conditions.through for the cases."""
from __future__ import annotations

from ..algebra.plan import Node, Select
from .conditions import through
from .idiff import IDiff


def rule(op: Select, d: IDiff, below: Node) -> list[IDiff]:
    return through(d, op.conjuncts, "σ", op.child, None)
