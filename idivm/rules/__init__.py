"""i-diff propagation rules (pass 2), one module per operator.

``propagate(plan, diff)`` walks a base-table i-diff from its scan up to the
root, applying each operator's rules; an operator may turn one input i-diff
into several (an update through a selection can become an insert, a delete
and an update), which is what makes the rule DAG of Figure 6.
"""
from dataclasses import replace
from typing import Callable

from ..algebra.plan import Join, Node, Project, Scan, Select, parent_chain, scans
from . import join, project, scan, select
from .idiff import IDiff

__all__ = ["IDiff", "RULES", "instantiate"]

# The i-diff propagation rule of each operator a base-table i-diff passes through on its way up:
# rule(operator, i-diff, the input it comes from) -> the i-diffs above the operator. A plan operator
# not listed here passes nothing up (the aggregation, union and subquery operators are maintained
# by strategies/ from the i-diffs of the SPJ plans below them).
Rule = Callable[[Node, IDiff, Node], list[IDiff]]
RULES: dict[type[Node], Rule] = {
    Select: select.rule,
    Join: join.rule,
    Project: project.rule,
}


def instantiate(root: Node, s: Scan, schema) -> list[IDiff]:
    """Pass 2 for one base-table i-diff schema: the view-level i-diffs it leads to."""
    tables = tuple((x.alias, (x.table.schema, x.table.name)) for x in scans(root))
    diffs = [replace(scan.rule(s, schema), tables=tables)]
    below: Node = s
    for op in parent_chain(root, s):
        rule = RULES.get(type(op))
        diffs = [out for d in diffs for out in rule(op, d, below)] if rule is not None else []
        below = op
    return diffs
