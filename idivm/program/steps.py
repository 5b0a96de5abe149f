"""The Δ-program IR: what every strategy emits and every engine renders (idivm's counterpart of
DBToaster's M3 trigger programs; ../shared/papers/dbtoaster-vldbj14.md Section 4).

A program is an ordered list of steps. Each step says what it does to which target, from which
source, keyed by what, and which base table's i-diff drives it (when that i-diff is empty the step
changes nothing and the engine skips it). Sources, conditions and values are sqlglot trees whose
relations are abstract (program/relations.py) until an engine binds them, so nothing here is
PostgreSQL text: the PostgreSQL engine renders a DeleteMatching as ``DELETE ... USING``, another
engine as an anti-join.

Steps run in phases (PHASES), within stages (a view's parts, then the view): deletes, then updates, then inserts, then a grouped view's
recomputation. Every step reads post-state base tables and effective i-diffs, so within those
phases order does not matter; deleting first means an insert never collides with a row that a
later delete removes.

The higher-order strategy's programs use two phases of their own, and in them the order of the
steps is the order they were emitted (Program.ordered sorts stably): "maps" processes one base
table's batch after another (its increments computed from the maps as they are, then added), and
"view from maps" rewrites the view's rows whose keys the batches touched.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from sqlglot import exp

from .relations import VIEW, Relation, relation_of

PHASES = {-1: "setup", 0: "delete", 1: "update", 2: "insert", 3: "aggregate", 4: "aggregate: insert",
          5: "maps", 6: "view from maps"}
MAPS_PHASE, VIEW_FROM_MAPS_PHASE = 5, 6
VIEW_ROLE, CACHE_ROLE = "view", "cache"
MAP_UNIT = "__unit"  # the key column of a map without keys (AddToMap): a constant TRUE, so it has a row to match


@dataclass(kw_only=True)
class Record:
    """Record the rows a write step changed into a scratch relation: `returning` are the values
    taken from each changed target row (over the target's alias; for an update, its new image),
    `body` the query over relations.returned() whose rows are inserted into `into`."""

    into: str
    returning: list[exp.Expression]
    body: exp.Query


@dataclass(kw_only=True)
class Step:
    phase: int
    purpose: str
    # the base table whose i-diff drives the step: its relations.table_key as compiled, its captured
    # table id once registration bound the program (bind.py)
    driven_by: int | str | None = None
    role: str = VIEW_ROLE  # what it maintains: the view, or an intermediate cache of it
    # a view that reads parts (algebra/plan.PartScan) runs each part's steps, then its own: stage k
    # is the k-th part's (from 0), the view's own steps come last
    stage: int = 0


@dataclass(kw_only=True)
class CreateScratch(Step):
    """A scratch relation with the columns of `source` and no rows, dropped when the maintenance ends."""

    name: str
    source: exp.Query


@dataclass(kw_only=True)
class DeleteMatching(Step):
    """Delete the rows of `target` (aliased) for which some combination of rows of `using` satisfies
    `condition` (e.g. delete by IDs: the view's ID columns equal an i-diff row's pre-image)."""

    target: exp.Table
    using: list[exp.Expression]
    condition: exp.Expression
    record: Record | None = None


@dataclass(kw_only=True)
class UpdateMatching(Step):
    """Set `assignments` (column -> value over target and using) on the rows of `target` matched by
    `condition` with rows of `using` (update by IDs)."""

    target: exp.Table
    assignments: list[tuple[str, exp.Expression]]
    using: list[exp.Expression]
    condition: exp.Expression
    record: Record | None = None


@dataclass(kw_only=True)
class InsertRows(Step):
    """Insert the rows of `source` into `columns` of `target`. With `unique_on`, a row whose values
    there equal an existing row's (within the rows satisfying `unique_where`, a partial unique
    index) is skipped: the view already holds it."""

    target: exp.Table
    columns: list[str]
    source: exp.Query
    unique_on: list[str] | None = None
    unique_where: exp.Expression | None = None
    record: Record | None = None
    analyze: bool = False  # then gather statistics on target (a scratch relation that later steps join)


@dataclass(kw_only=True)
class MergeRows(Step):
    """Merge the rows of `source` (aliased `source_alias`) into `target` (aliased) in one statement:
    a target row that `condition` matches with a source row is deleted where `delete_when` holds,
    else updated with `assignments`; a source row that matches no target row is inserted into
    `columns` as `values` where `insert_when` holds. Each target row may match at most one source
    row. A grouped view applies its per-group sums this way (rules/aggregate_sum.py): one
    statement instead of a scratch table and a delete, an update and an insert over it, which in a
    single-row write of immediate mode cost about a tenth of the write (docs/benchmarks.md)."""

    target: exp.Table
    source: exp.Query
    source_alias: str
    condition: exp.Expression
    assignments: list[tuple[str, exp.Expression]]
    columns: list[str]
    values: list[exp.Expression]
    delete_when: exp.Expression | None = None
    insert_when: exp.Expression | None = None


@dataclass(kw_only=True)
class AddToMap(Step):
    """Add signed values to a map (a higher-order strategy's auxiliary view, VLDBJ'14 Section 4):
    `source` yields rows of `keys` and `value`; each is added to the map's row with those keys
    (created if absent), and rows whose value reaches 0 are removed. A map with no keys has one
    row. Keys in `nullable` may be NULL: NULL keys are one key, as GROUP BY groups them."""

    target: exp.Table
    keys: list[str]
    value: str
    source: exp.Query
    nullable: list[str] = field(default_factory=list)


def relations_read(step: Step) -> list[Relation]:
    """The relations a step reads (every table its trees name, but not the table it writes), in
    the order they appear: what `explain` summarizes as the joins a change goes through."""
    out: list[Relation] = []
    for f in fields(step):
        if f.name == "target":
            continue
        values = getattr(step, f.name)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, Record):
                value = value.body
            if isinstance(value, tuple):  # an assignment (column, value)
                value = value[1]
            if not isinstance(value, exp.Expression):
                continue
            for node in value.find_all(exp.Table):
                rel = relation_of(node)
                if rel is not None and rel not in out:
                    out.append(rel)
    return out


def written_tables(targets: Iterable[exp.Expression]) -> list[tuple[str, str]]:
    """(schema, name) of every maintained table among a program's step targets (serialize.targets):
    the view, its caches, its maps."""
    out: list[tuple[str, str]] = []
    for target in targets:
        rel = relation_of(target)
        if rel is not None and rel.kind == VIEW and (rel.schema, rel.name) not in out:
            out.append((rel.schema, rel.name))
    return out


@dataclass(kw_only=True)
class Refill:
    """One table of the view brought to what its defining query now returns, when a maintenance
    recomputes the view instead of running its steps (a batch the steps would take longer over than
    the view's query, docs/maintenance.md "Recomputing instead"). The view's own table (role
    VIEW_ROLE) gets only the difference from the query's rows, so that readers are never blocked or
    shown an empty table, the rows that stay keep their identity (a reader view's capture logs only
    what changed), and a small change to a costly view writes little; its parts, cache and maps
    (CACHE_ROLE), which only its maintenance reads, are filled again.

    Every table idivm maintains holds each row once (its IDs, group keys or map keys identify it,
    or it has at most one row), so rows are compared as sets. `keys`: columns that are never NULL
    and identify a row (a hash join on them, the whole row compared beside it); empty when there
    are none, then only whole rows are compared.

    `direct`: for the view's table of an aggregate over a cache, its rows computed from the
    cache's query rather than its table. A recomputation can then leave the cache as it was
    (stale), which a run of large batches never needs: the next maintenance that would run the
    Δ-script recomputes with the cache first."""

    target: exp.Table
    columns: list[str]
    source: exp.Query
    keys: list[str] = field(default_factory=list)
    role: str = VIEW_ROLE
    direct: exp.Query | None = None


@dataclass
class Program:
    """One view's Δ-program, with the derivations (rule trails) that explain prints, and the
    refills that recompute its tables instead (Refill: its parts', caches' and maps' before the
    view's own, in the order they are read)."""

    strategy: str
    steps: list[Step] = field(default_factory=list)
    derivations: list[str] = field(default_factory=list)
    refills: list[Refill] = field(default_factory=list)

    def ordered(self) -> list[Step]:
        """Steps by stage, then phase; within a phase in the order emitted (a stable sort)."""
        return sorted(self.steps, key=lambda s: (s.stage, s.phase))
