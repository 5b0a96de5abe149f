"""Which part of a Δ-program step an engine other than PostgreSQL may compute beforehand, and the
step rewritten to read those rows (staged) instead.

Such an engine (Spark, engines/spark/) computes queries over i-diff instances and base tables
alone: both are fixed by the maintenance snapshot, which its reads import. Everything the
transaction itself writes (the view, its caches, a higher-order strategy's maps, scratch
relations) is invisible to another session's snapshot, so a query that reads it stays in
PostgreSQL. Three shapes of step carry such a query:

- an insert (InsertRows) or a map increment (AddToMap) whose whole source reads Δ and base
  tables: the other engine computes the source; the step inserts (or adds) the staged rows. This
  is where the joins of a batch with large base tables are (idIVM Section 6: an i-diff's ⋈ with
  the other inputs, for `id` and `tuple`; the Δ-only aggregations of VLDBJ'14 Section 4 for
  `higher-order`);
- a delete or an update by matching (DeleteMatching, UpdateMatching) whose USING list joins Δ
  with base tables: the tuple strategy's pre-state deletes (a subquery of Δ ⋈ base, UNION ALL
  over pre-states, paper Section 5) and a semijoin's re-check. The condition's conjuncts that do
  not name the target row are evaluated with the USING list apart, which returns the columns
  the remaining conjuncts, the assignments and the recorded image use; the step then matches the
  target against those staged rows. The split is exact: DELETE/UPDATE ... USING s WHERE a AND b,
  with b not naming the target, matches the same target rows as USING (SELECT ... FROM s WHERE b).

Steps whose USING list reads Δ alone are left to PostgreSQL: there is no join to take off it.

A source may also read a relation the program maintains (a higher-order strategy's map, a cache)
if no earlier step of the program writes it (offloads): its state when the step runs is then its
state before this maintenance, which the transaction can read before any step runs (DBToaster's
trigger statements read other maps, VLDBJ'14 Section 5; e.g. M1 += Δr ⋈ M2 before M2 += Δs).
A map that earlier steps only added to (AddToMap), from sources the engine could compute where
they stand, is read as it is when the step runs all the same: its state before this maintenance
and those sources' rows, summed by key, the keys whose sum is 0 left out, as AddToMap leaves them
(`_as_changed`; a batch changing r and s: M1 += Δs ⋈ M3 after M3 += Δr reads M3 and Δr).
Such reads are optional (Offload.reads): where the engine cannot take the relation exactly, the
step stays in PostgreSQL, which is exact too.

The PostgreSQL engine compiles both forms of every such step into the view's maintenance function
(engines/postgres/server_maintenance.py), the staged one reading the scratch relation
`staged_name(k)` for the k-th offload: the other engine fills the relations it computed, and the
one deferred maintenance path runs the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable

from sqlglot import exp

from . import relations as R
from .relations import relations
from .steps import AddToMap, DeleteMatching, InsertRows, Step, UpdateMatching
from .trees import alias, all_of, col, conjuncts, num, select, subquery, union_all

STAGED_ALIAS = "idivm_staged"


def staged_name(k: int) -> str:
    """The scratch relation holding the rows of a program's k-th offload (offloads() order)."""
    return f"idivm_staged_{int(k)}"


@dataclass(frozen=True)
class Offload:
    """One step's query that another engine computes, and how the step reads its rows instead."""

    step: Step
    # the query, built on first use: installing the maintenance functions needs only `rewrite`, and
    # a delete's query copies its USING list (the tuple strategy's pre-states, 2^(n-1) branches)
    build: Callable[[], exp.Query]
    rewrite: Callable[[str], Step]  # the step reading the rows staged in the named scratch relation
    reads: frozenset = frozenset()  # relations the program maintains that the query reads (optional offload)
    # of those, the maps read as earlier steps' increments left them: (map, its key columns)
    changed: frozenset = frozenset()

    @cached_property
    def query(self) -> exp.Query:
        return self.build()


def _computable(rels: list[R.Relation], written: set | None = None) -> bool:
    """Whether trees reading `rels` read Δ, and else only base tables and (with `written`: the
    relations earlier steps write) maintained relations no earlier step writes."""
    maintained = [rel for rel in rels if rel.kind == R.VIEW]
    if maintained and (written is None or any(rel in written for rel in maintained)):
        return False
    kinds = {rel.kind for rel in rels}
    return R.DELTA in kinds and kinds <= {R.DELTA, R.BASE, R.VIEW}


# a map's increments so far in a program: per map, the AddToMap steps that added to it whose sources
# the engine could compute where they stand (None once a step the engine cannot take wrote it)
Increments = dict


def _from_source(step: InsertRows | AddToMap, written: set, increments: Increments | None = None) -> Offload | None:
    rels = relations(step.source)  # each tree walked once: registration analyses every step
    changed = {rel for rel in rels if rel.kind == R.VIEW and rel in (written or ())}
    if changed and (increments is None or any(increments.get(rel) is None for rel in changed)):
        return None
    if not _computable(rels, None if written is None else written - changed):
        return None
    added = {rel: increments[rel] for rel in changed}
    reads = frozenset({rel for rel in rels if rel.kind == R.VIEW}
                      | {r for adds in added.values() for a in adds for r in relations(a.source) if r.kind == R.VIEW})
    build = (lambda: _as_changed(step.source, added)) if added else (lambda: step.source)
    return Offload(step, build, lambda name: replace(step, source=select([exp.Star()], [R.scratch(name)])),
                   reads, frozenset((rel, tuple(adds[0].keys)) for rel, adds in added.items()))


def _as_changed(source: exp.Query, added: dict) -> exp.Query:
    """`source` reading each map of `added` as its earlier increments (AddToMap steps) leave it: the
    map's rows as before this maintenance and each increment's source's rows, summed by key; keys
    whose sum is 0 are left out (AddToMap removes them; a map without keys keeps its one row)."""
    def changed(node: exp.Expression) -> exp.Expression:
        rel = R.relation_of(node)
        adds = added.get(rel) if rel is not None else None
        if not adds:
            return node
        keys, value = list(adds[0].keys), adds[0].value
        branches = [select([col("m", k) for k in keys] + [alias(col("m", value), "__v")],
                           [R.view(rel.schema, rel.name, "m")])]
        branches += [select([col("i", k) for k in keys] + [alias(col("i", a.value), "__v")], [subquery(a.source.copy(), "i")])
                     for a in adds]
        total = exp.Sum(this=col("u", "__v"))
        out = select([col("u", k) for k in keys] + [alias(total, value)], [subquery(union_all(branches), "u")])
        if keys:
            out.set("group", exp.Group(expressions=[col("u", k) for k in keys]))
            out.set("having", exp.Having(this=exp.NEQ(this=total.copy(), expression=num(0))))
        return subquery(out, node.alias_or_name)

    return source.copy().transform(changed, copy=False)


def _names(e: exp.Expression, table: str) -> bool:
    return any(c.table == table for c in e.find_all(exp.Column))


def _from_matching(step: DeleteMatching | UpdateMatching) -> Offload | None:
    target = step.target.alias_or_name
    parts = conjuncts(step.condition)
    local = [c for c in parts if not _names(c, target)]  # they go into the offloaded query with the USING list:
    if any(rel.kind not in (R.DELTA, R.BASE, R.VIEW) for c in local for rel in relations(c)):
        return None  # one reading a scratch relation cannot (a semijoin over a part reads the part's i-diff)
    rels = [rel for item in step.using for rel in relations(item)]
    if not _computable(rels) or not any(rel.kind == R.BASE for rel in rels):
        return None
    rest = [c for c in parts if _names(c, target)]
    assignments = getattr(step, "assignments", [])
    returning = step.record.returning if step.record else []
    outside = rest + [v for _, v in assignments] + returning
    if any(e.find(exp.Select) for e in outside):
        return None  # a subquery there could shadow a USING alias: leave the step to PostgreSQL
    using = {item.alias_or_name for item in step.using}
    if STAGED_ALIAS == target or any(not c.table for e in outside for c in e.find_all(exp.Column)):
        return None
    needed: list[tuple[str, str]] = []
    for e in outside:
        for c in e.find_all(exp.Column):
            if c.table in using and (c.table, c.name) not in needed:
                needed.append((c.table, c.name))
    names = {ref: f"c{i}" for i, ref in enumerate(needed)}
    outputs = [alias(col(t, n), names[(t, n)]) for t, n in needed] or [alias(num(1), "c0")]

    def staged(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and (node.table, node.name) in names:
            return col(STAGED_ALIAS, names[(node.table, node.name)])
        return node

    def rewrite(name: str) -> Step:
        out = replace(step, using=[R.scratch(name, alias=STAGED_ALIAS)],
                      condition=all_of([c.transform(staged) for c in rest]))
        if assignments:
            out = replace(out, assignments=[(k, v.transform(staged)) for k, v in assignments])
        if step.record:
            out = replace(out, record=replace(step.record, returning=[e.transform(staged) for e in returning]))
        return out

    return Offload(step, lambda: select(outputs, [item.copy() for item in step.using], [c.copy() for c in local]), rewrite)


def offload(step: Step, written: set | None = None, increments: Increments | None = None) -> Offload | None:
    """What another engine may compute of this step (None: it runs in PostgreSQL as it is); `written`: the
    relations the steps before it write (None: it may read no maintained relation); `increments`: what
    those steps added to maps (offloads())."""
    if isinstance(step, (InsertRows, AddToMap)):
        return _from_source(step, written, increments)
    if isinstance(step, (DeleteMatching, UpdateMatching)):
        return _from_matching(step)
    return None


def offloads(steps: list[Step]) -> list[Offload]:
    """What another engine may compute of a program's steps (in execution order), each source free to read the
    maintained relations that no earlier step writes."""
    out, written, increments = [], set(), {}
    for st in steps:
        o = offload(st, written, increments)
        if o is not None:
            out.append(o)
        target = getattr(st, "target", None)
        if target is not None and (rel := R.relation_of(target)) is not None:
            computable = isinstance(st, AddToMap) and o is not None and not o.changed
            adds = increments.get(rel, [])  # every relation written so far has its entry
            increments[rel] = adds + [st] if computable and adds is not None else None
            written.add(rel)
    return out
