"""UNION ALL: one Δ-script per branch, all writing to the same table (footnote 2 of the paper).

Each branch is an SPJ view in its own right: its rules, i-diff schemas and
statements are those of a single SPJ view whose rows carry b = branch number
and whose hidden ID columns are the branch's own (other branches' are NULL).
Deletes and updates match those ID columns, so they never touch another
branch's rows; inserts resolve conflicts on the branch's partial unique index.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..algebra.plan import BRANCH_COLUMN, Union, scans
from ..sqltext import ident, qualified, run
from .render import Target, full_query
from .script import DeltaScript


@dataclass
class UnionTarget:
    schema: str
    name: str
    union: Union
    captured: dict[tuple[str, str], int]

    @property
    def table(self) -> str:
        return qualified(self.schema, self.name)

    @property
    def branches(self) -> list[Target]:
        return [Target(self.schema, self.name, b, self.captured, branch=k)
                for k, b in enumerate(self.union.branches, 1)]

    @property
    def all_ids(self) -> list[tuple[str, str]]:
        """Every branch's hidden ID columns with their SQL types (reflected, via format_type)."""
        out = []
        for b in self.union.branches:
            tables = {s.alias: s.table for s in scans(b)}
            out += [(i.name, tables[i.scan].type_of(i.column)) for i in b.ids]
        return out


def union_script(t: UnionTarget, compile_branch) -> DeltaScript:
    scripts = [compile_branch(b) for b in t.branches]
    out = DeltaScript(strategy=scripts[0].strategy)
    for k, s in enumerate(scripts, 1):
        for st in s.statements:
            st.purpose = f"branch b = {k}: {st.purpose}"
            out.statements.append(st)
        out.derivations += [f"branch b = {k}: {d}" for d in s.derivations]
    return out


def create_union_table(conn, t: UnionTarget) -> None:
    selects = [full_query(b, t.all_ids) for b in t.branches]
    run(conn, f"CREATE TABLE {t.table} AS\n" + "\nUNION ALL\n".join(f"({q})" for q in selects))
    for b in t.branches:
        ids = ", ".join(ident(i.name) for i in b.plan.ids)
        run(conn, f"CREATE UNIQUE INDEX ON {t.table} ({ids}) WHERE ({ident(BRANCH_COLUMN)} = {b.branch})")
        for s in scans(b.plan)[1:]:
            cols = [i.name for i in b.plan.ids if i.scan == s.alias]
            run(conn, f"CREATE INDEX ON {t.table} ({', '.join(ident(c) for c in cols)})")
    stable = [n for n, _ in t.union.outputs if n in t.union.branches[0].stable]
    if stable:
        run(conn, f"CREATE INDEX ON {t.table} ({', '.join(ident(c) for c in stable)})")
