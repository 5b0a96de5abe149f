"""σ_φ (idIVM Table 6, the selection's rules): see conditions.through for the cases."""
from __future__ import annotations

from ..algebra.plan import Node, Select
from .conditions import through
from .idiff import IDiff


def rule(op: Select, d: IDiff, below: Node) -> list[IDiff]:
    return through(d, op.conjuncts, "σ", op.child, None)
