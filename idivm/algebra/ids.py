"""Pass 1: ID inference.

Every operator's output must carry attributes forming a key of it (Table 1):
SCAN(R) has key(R); σ and π keep their input's IDs; ⋈ and × union both
inputs' IDs. The root projection is extended with hidden columns holding the
IDs, which become the maintained table's primary key. Extending the plan with
IDs widens rows but never changes their number (Section 4, pass 1).
"""
from __future__ import annotations

from ..errors import UnsupportedQuery
from .plan import IdColumn, Project, node_ids

HIDDEN_PREFIX = "__idivm_"
MAX_IDENT = 63


def hidden_name(scan: str, column: str, position: int) -> str:
    name = f"{HIDDEN_PREFIX}{scan}_{column}"
    return name if len(name.encode()) <= MAX_IDENT else f"{HIDDEN_PREFIX}{position}"


def infer_ids(root: Project) -> Project:
    """Extend the root projection with the hidden ID columns (in place) and return it."""
    for name, _ in root.outputs:
        if name.startswith(HIDDEN_PREFIX):
            raise UnsupportedQuery(f'output column "{name}": names starting with {HIDDEN_PREFIX} are reserved for idivm')
    root.ids = [IdColumn(scan=a, column=c, name=hidden_name(a, c, i)) for i, (a, c) in enumerate(node_ids(root.child))]
    return root
