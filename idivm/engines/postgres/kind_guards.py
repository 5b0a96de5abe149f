"""Compiled maintenance skips the statements whose driving i-diff lacks the change kinds they read.

Each compiled function (a view's deferred maintenance, server_maintenance.py; the immediate apply,
immediate.py) fills every i-diff instance in one statement that also returns how many rows it
folded and which kinds they have, as a bit mask (program/kinds_needed.py: I = 1, D = 2, U = 4). A
statement driven by that instance then runs only when the mask is one under which it can change
anything (program/kinds_needed.driving_masks): a single-row INSERT's write runs the Δ+ statements of
its table, not the Δ- and Δu ones, which would find nothing: most of a grouped view's statements
in a single-row INSERT (docs/benchmarks.md, "Measurements behind the code").
"""
from __future__ import annotations

from ...program import relations as R
from ...program.kinds_needed import ANY_MASK, BIT
from ...sqltext import ident, string_literal


def counted_fill(insert: str, emptied: str | None = None, taken: tuple[str, str] | None = None) -> str:
    """`insert` (an INSERT ... SELECT of i-diff rows) as a query returning (rows, kind mask);
    `emptied`: a table deleted from in the same statement first (its rows are not seen by the
    insert's SELECT, as in every data-modifying CTE); `taken`: (name, table): the table's rows are
    deleted in the same statement and read by the insert as the CTE `name` (one statement where
    reading a staging table and emptying it were two)."""
    kind = ident(R.KIND_COLUMN)
    mask = " ".join(f"WHEN {string_literal(k)} THEN {b}" for k, b in BIT.items())
    first = f"{ident('emptied')} AS (DELETE FROM {emptied}), " if emptied else ""
    if taken is not None:
        first += f"{ident(taken[0])} AS (DELETE FROM {taken[1]} RETURNING *), "
    return (f"WITH {first}{ident('added')} AS ({insert} RETURNING {kind}) "
            f"SELECT count(*), coalesce(bit_or(CASE {kind} {mask} END), 0) FROM {ident('added')}")


def guard(nonempty: str, kinds: str, masks: frozenset[int]) -> str:
    """PL/pgSQL condition: a statement with these driving masks may change something, given the
    condition that its driving instance has rows (`nonempty`) and the variable holding its kind mask
    (`kinds`, 0 when it has none)."""
    if masks == ANY_MASK:
        return nonempty
    if not masks:
        return "false"
    return f"{kinds} IN ({', '.join(str(m) for m in sorted(masks))})"
