"""i-diff propagation rules (pass 2), one module per operator.

``propagate(plan, diff)`` walks a base-table i-diff from its scan up to the
root, applying each operator's rules; an operator may turn one input i-diff
into several (an update through a selection can become an insert, a delete
and an update), which is what makes the rule DAG of Figure 6.
"""
from dataclasses import replace

from ..algebra.plan import Join, Node, Project, Scan, Select, parent_chain, scans, walk
from . import join, project, scan, select
from .idiff import IDiff

__all__ = ["IDiff", "propagate", "instantiate"]


def instantiate(root: Node, s: Scan, schema) -> list[IDiff]:
    """Pass 2 for one base-table i-diff schema: the view-level i-diffs it leads to."""
    tables = tuple((x.alias, (x.table.schema, x.table.name)) for x in scans(root))
    diffs = [replace(scan.rule(s, schema), tables=tables)]
    path = parent_chain(root, s)
    below: Node = s
    for op in path:
        out: list[IDiff] = []
        for d in diffs:
            if isinstance(op, Select):
                out += select.rule(op, d)
            elif isinstance(op, Join):
                out += join.rule(op, d, from_left=_contains(op.left, below))
            elif isinstance(op, Project):
                out += project.rule(op, d)
        diffs = out
        below = op
    return diffs


def _contains(node: Node, target: Node) -> bool:
    return any(n is target for n in walk(node))
