"""A part's program: a subquery that aggregates, read like a base table by the operators above it
(algebra/plan.PartScan: aggregation below a join, aggregation over aggregation).

The part is maintained first, as any grouped view is (its own rule in rules.RULES, into the view's
own table self.part_<k>); then the i-diff of what that changed in its rows is written to a scratch
relation in the shape of a base table's i-diff instance (program/relations.py: `kind`, `pre__c`,
`post__c`), keyed by the part's row number. The operators above read the part as they read a
base table: its post-state (the part's table) and that i-diff. idIVM's rules need nothing else of
an input (Section 5: an effective diff and the post-state), so every rule and strategy that
maintains an SPJ view over base tables maintains one over parts.

The i-diff is found by comparing the part's rows of the groups the maintenance touched (the
grouping's own scratch relation of affected groups, t.affected) before and after its steps: a
row number in the later rows only is an insert, in the earlier only a delete, in both with other
values an update. A group the grouping rewrote (deleted and inserted again, as the general rule
does) has a new row number: a delete and an insert.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import ROW_KEY
from ..program import relations as R
from ..program.steps import CreateScratch, InsertRows, Program
from ..program.trees import alias, any_of, col, exists, num, select, shown_differently, string, subquery
from .aggregate_target import AggregateTarget, match_keys


def _rows_of_affected_groups(t: AggregateTarget, columns: list[str]) -> exp.Select:
    hit = select([num(1)], [R.scratch(t.affected, "a")], [match_keys(t, "v", "a", t.agg.id_names)])
    return select([col("v", c) for c in columns], [t.ref("v")], [exists(hit)])


def part_program(t: AggregateTarget, part: str, program: Program, columns: list[str], stage: int) -> Program:
    """The part's program (`program`, its grouping's) with the steps that record the i-diff of its
    rows, all in `stage`; `columns`: the part's columns the view reads (its outputs and row number)."""
    before = f"idivm_before_{part}"
    kept = [c for c in columns if c != ROW_KEY]
    steps = [CreateScratch(phase=-1, purpose=f"{part}: its rows of the touched groups, before its steps",
                           name=before, source=select([col(None, c) for c in columns], [t.ref(None)])),
             InsertRows(phase=3, purpose=f"{part}: its rows of the touched groups, before its steps",
                        target=R.scratch(before), columns=columns, source=_rows_of_affected_groups(t, columns))]
    for st in program.steps:
        st.purpose = f"{part}: {st.purpose}"
        steps.append(st)
    o, n = col("o", ROW_KEY), col("n", ROW_KEY)
    kind = exp.Case(ifs=[exp.If(this=exp.Is(this=o.copy(), expression=exp.null()), true=string(R.INSERTED)),
                         exp.If(this=exp.Is(this=n.copy(), expression=exp.null()), true=string(R.DELETED))],
                    default=string(R.UPDATED))
    outs = ([alias(kind, R.KIND_COLUMN)] + [alias(col("o", c), R.pre(c)) for c in columns]
            + [alias(col("n", c), R.post(c)) for c in columns])
    changed = exp.Paren(this=shown_differently([col("o", c) for c in kept], [col("n", c) for c in kept]))
    diff = select(outs, [R.scratch(before, "o")], [any_of([exp.Is(this=o.copy(), expression=exp.null()),
                                                           exp.Is(this=n.copy(), expression=exp.null())]
                                                          + ([changed] if kept else []))])
    diff = diff.join(subquery(_rows_of_affected_groups(t, columns), "n"), on=exp.EQ(this=o.copy(), expression=n.copy()),
                     join_type="full", copy=False)
    delta = R.part_delta(part)
    steps += [CreateScratch(phase=-1, purpose=f"{part}: the i-diff of its rows", name=delta, source=diff.copy()),
              InsertRows(phase=4, purpose=f"{part}: the i-diff of its rows (row number only before: deleted; only "
                                          "after: inserted; in both with other values: updated)",
                         target=R.scratch(delta), columns=[R.KIND_COLUMN] + [R.pre(c) for c in columns]
                         + [R.post(c) for c in columns], source=diff, analyze=True)]
    for st in steps:
        st.stage = stage
    return Program(strategy=program.strategy, steps=steps, derivations=[
        f"{part}: a subquery that aggregates, maintained first as a grouped view; the i-diff of its rows "
        "(before and after, by row number) is what the operators above read, as a base table's"]
        + [f"  {d}" for d in program.derivations])
