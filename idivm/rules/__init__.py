"""Every operator's maintenance rules, one module per operator, found through one table, RULES.

idIVM (Section 4) annotates each relational operator with rules that say how a change of its input
becomes a change of its output; a view's Δ-program is composed from the rules of the operators of
its plan. An operator's entry in RULES holds the kinds of rule it has:

- `idiffs`, pass 2's i-diff propagation rule: rule(operator, i-diff, the input it comes from) ->
  the i-diffs above the operator (σ, ⋈, π: select.py, join.py, project.py; a scan's base i-diff,
  scan.py, is where the walk starts). ``instantiate`` walks a base-table i-diff from its scan up to
  the root; an operator may turn one input i-diff into several (an update through a selection can
  become an insert, a delete and an update), which is what makes the rule DAG of Figure 6.
- `steps`, the rule for changes of an input that a condition reads rather than the plan joins:
  rule(SPJ target, the operator) -> steps (the semijoin's and antijoin's, [NOT] EXISTS / IN, for
  changes of the subquery's tables: semijoin.py, idIVM Table 13).
- `program`, for an operator maintained as a table of its own over its inputs' maintained results:
  rule(target, its inputs' programs, row ids) -> its program (γ over its intermediate cache,
  aggregate.py with Tables 7, 9, 11, 12; ∪ over its branches, union.py, idIVM footnote 2).

Outer joins and set difference have no rules of their own: the frontend expresses them with these
operators (frontend/outer_joins.py, setops.py). The strategies consume the table: `id` and `tuple`
compose the SPJ rules into their programs (strategies/id, strategies/tuple), and
strategies/targets.py builds a view's program operator by operator through it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..algebra.plan import Aggregate, Join, Node, Project, Scan, Select, SubqueryPredicate, Union, parent_chain, scans
from ..program.steps import Program, Step
from . import aggregate, join, project, scan, select, semijoin, union
from .idiff import IDiff

__all__ = ["IDiff", "RULES", "Rules", "instantiate", "subquery_steps"]


@dataclass(frozen=True)
class Rules:
    """The rules of one operator (see the module docstring for each kind's signature)."""

    idiffs: Callable[[Node, IDiff, Node], list[IDiff]] | None = None
    steps: Callable[..., list[Step]] | None = None
    program: Callable[..., Program] | None = None


RULES: dict[type, Rules] = {
    Select: Rules(idiffs=select.rule),
    Join: Rules(idiffs=join.rule),
    Project: Rules(idiffs=project.rule),
    SubqueryPredicate: Rules(steps=semijoin.rule),
    Aggregate: Rules(program=aggregate.rule),
    Union: Rules(program=union.rule),
}


def instantiate(root: Node, s: Scan, schema) -> list[IDiff]:
    """Pass 2 for one base-table i-diff schema: the view-level i-diffs it leads to. An operator
    without an i-diff rule passes nothing up (the SPJ plans' roots are Projects)."""
    tables = tuple((x.alias, (x.table.schema, x.table.name)) for x in scans(root))
    diffs = [replace(scan.rule(s, schema), tables=tables)]
    below: Node = s
    for op in parent_chain(root, s):
        rule = RULES[type(op)].idiffs if type(op) in RULES else None
        diffs = [out for d in diffs for out in rule(op, d, below)] if rule is not None else []
        below = op
    return diffs


def subquery_steps(target) -> list[Step]:
    """The steps of every [NOT] EXISTS / IN subquery of an SPJ target for changes of its own tables
    (their operator's `steps` rule)."""
    return [st for sq in target.plan.subqueries for st in RULES[type(sq)].steps(target, sq)]
