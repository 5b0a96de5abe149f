"""The Δ-script: ordered SQL statements that maintain one view, and its printer.

Statements run in phases: deletes, then updates, then inserts (and, for a
grouped view, after its intermediate cache is maintained, the recomputation of
the affected groups). Every statement reads post-state base tables and
effective i-diffs, so within a phase order does not matter; deleting first
means an insert never collides with a row that a later delete would remove.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PHASES = {-1: "setup", 0: "delete", 1: "update", 2: "insert", 3: "aggregate", 4: "aggregate: insert"}


@dataclass
class Statement:
    phase: int
    purpose: str
    sql: str
    # captured table whose i-diff drives the statement: if it is empty, the statement changes nothing
    driven_by: int | None = None


@dataclass
class DeltaScript:
    strategy: str
    statements: list[Statement] = field(default_factory=list)
    derivations: list[str] = field(default_factory=list)

    def ordered(self) -> list[Statement]:
        return sorted(self.statements, key=lambda s: s.phase)

    def format(self) -> str:
        lines = []
        for i, st in enumerate(self.ordered(), 1):
            lines.append(f"-- [{i}] {PHASES[st.phase]}: {st.purpose}")
            lines.append(st.sql + ";")
        return "\n".join(lines)
