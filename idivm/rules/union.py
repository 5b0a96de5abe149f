"""UNION ALL: one Δ-program per branch, all writing to the same table (idIVM footnote 2: the union
that keeps IDs tags each row with the branch it came from, the attribute b).

Each branch is an SPJ view in its own right: its rules, i-diff schemas and
statements are those of a single SPJ view whose rows carry b = branch number
and whose hidden ID columns are the branch's own (other branches' are NULL).
Deletes and updates match those ID columns, so they never touch another
branch's rows; inserts resolve conflicts on the branch's partial unique index.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..algebra.plan import BRANCH_COLUMN, Union, scans
from ..program.steps import Program
from ..program.trees import union_all
from .spj import MaintainedTable, SpjTarget, full_query


@dataclass
class UnionTarget(MaintainedTable):
    schema: str
    name: str
    union: Union
    parts: list = field(default_factory=list)  # the targets of the parts it reads (rules/part.py), maintained first

    @property
    def operator(self) -> Union:
        return self.union

    @property
    def inputs(self) -> list[SpjTarget]:
        """What it is maintained over (rules.RULES' program rule): its branches."""
        return self.branches

    @property
    def branches(self) -> list[SpjTarget]:
        return [SpjTarget(self.schema, self.name, b, branch=k)
                for k, b in enumerate(self.union.branches, 1)]

    @property
    def all_ids(self) -> list[tuple[str, str]]:
        """Every branch's hidden ID columns with their SQL types (reflected, via format_type)."""
        out = []
        for b in self.union.branches:
            tables = {s.alias: s.table for s in scans(b)}
            out += [(i.name, tables[i.scan].type_of(i.column)) for i in b.ids]
        return out

    def query(self):
        """The union over post-state base tables (its initial contents), every branch with all IDs."""
        return union_all([full_query(b, self.all_ids) for b in self.branches])


def rule(t: UnionTarget, programs: list[Program], row_ids: dict[int, list[str]]) -> Program:
    """∪'s program rule: the branches' programs (one per branch of t, in order), one after the other.
    row_ids receives for each step (by id()) the columns that identify the row it writes: the branch
    column and the branch's own IDs (other branches' are NULL in it), which the specialized
    aggregation rules match old images by."""
    out = Program(strategy=programs[0].strategy)
    for k, (b, s) in enumerate(zip(t.branches, programs), 1):
        for st in s.steps:
            st.purpose = f"branch b = {k}: {st.purpose}"
            out.steps.append(st)
            row_ids[id(st)] = [BRANCH_COLUMN] + [i.name for i in b.plan.ids]
        out.derivations += [f"branch b = {k}: {d}" for d in s.derivations]
    return out
