"""Δ-programs for grouped views: the general aggregation rule (Table 7) over an intermediate cache.

1. The cache (the SPJ input below γ, Example 4.6) is maintained by its own program.
   Every step of it records (a Record, program/steps.py) the group keys of the cache
   rows it deleted, updated or inserted into a scratch relation. Group
   keys are never updated in place (they are conditional, see rules/project.py), so
   a row moving between groups reports both.
2. The view then deletes the affected groups and recomputes them from the cache
   (Δu_V = γ(Δ ⋉_G Input^post)); a group left empty simply gets no row back, and a new
   group gets its first one, so group creation and deletion (which the paper leaves
   out) are handled. MIN/MAX survive deletion of the extreme, and SQL's NULL/empty
   semantics are PostgreSQL's own, since PostgreSQL evaluates the aggregates.
"""
from __future__ import annotations

from sqlglot import exp

from ..program import relations as R
from ..program.steps import CreateScratch, DeleteMatching, InsertRows, Program, Record
from ..program.trees import alias, all_of, any_of, col, eq, exists, num, select, subquery, union_all
from .aggregate_nocache import affected_group_steps
from .aggregate_sum import sum_program
from .aggregate_target import CACHE_ALIAS, AggregateTarget, bind_cache, match_keys
from .spj import VIEW_ALIAS, full_query


def input_source(t: AggregateTarget) -> exp.Expression:
    """What the aggregate reads (aliased CACHE_ALIAS): its intermediate cache, or (footnote 6) its SPJ
    input itself."""
    if t.agg.no_cache:
        return subquery(full_query(t.cache), CACHE_ALIAS)
    return t.cache.ref(CACHE_ALIAS)


def affected_rows(t: AggregateTarget, source: exp.Expression) -> exp.Query:
    """The input rows of the affected groups. Keys without NULLs are matched by plain equality,
    which PostgreSQL can hash (many groups) or look up in an index (few); the rare keys with a
    NULL use the null-safe form. The two sets of affected keys are disjoint."""
    keys = t.agg.keys

    def distinct(where=None) -> exp.Expression:
        return subquery(select([col(None, k) for k in keys], [R.scratch(t.affected)], where, distinct=True), "a")

    def rows_of(affected, on) -> exp.Select:
        q = select([exp.Column(this=exp.Star(), table=exp.to_identifier(CACHE_ALIAS, quoted=True))], [source.copy()])
        return q.join(affected, on=on, join_type="inner", copy=False)

    equal = all_of([eq(col(CACHE_ALIAS, k), col("a", k)) for k in keys])
    if set(keys) <= t.agg.never_null_keys():
        return rows_of(distinct(), equal)
    no_null = [exp.Not(this=exp.Is(this=col(None, k), expression=exp.null())) for k in keys]
    some_null = any_of([exp.Is(this=col(None, k), expression=exp.null()) for k in keys])
    return union_all([rows_of(distinct(no_null), equal), rows_of(distinct([some_null]), match_keys(t, CACHE_ALIAS, "a"))])


def group_select(t: AggregateTarget, restrict: bool) -> exp.Query:
    """The aggregate over the cache (or input): all groups, or only the affected ones."""
    keys = t.agg.keys
    outs = [alias(bind_cache(e), n) for n, e in t.agg.outputs]
    outs += [alias(col(CACHE_ALIAS, k), h) for k, h in zip(keys, t.agg.id_names)]
    outs += [alias(agg, n) for n, agg in t.state_columns]
    source = input_source(t)
    if restrict and keys:
        source = subquery(affected_rows(t, source), CACHE_ALIAS)
    q = select(outs, [source])
    if keys:
        q = q.group_by(*[col(CACHE_ALIAS, k) for k in keys], copy=False)
    if t.agg.having is not None:
        q = q.having(bind_cache(t.agg.having), copy=False)
    if restrict and not keys:  # one global group: recompute only if the input changed at all
        q = select([exp.Star()], [subquery(q, "q")], [any_change(t)])
    return q


def any_change(t: AggregateTarget) -> exp.Expression:
    return exists(select([exp.Literal.number(1)], [R.scratch(t.affected)]))


def general_program(t: AggregateTarget, cache_program: Program) -> Program:
    """Table 7's rule over the cache's program (empty without a cache: footnote 6)."""
    keys = t.agg.keys
    program = Program(strategy=cache_program.strategy)
    if t.agg.no_cache:
        program.steps += affected_group_steps(t)
    else:
        setup = [col(None, k) for k in keys] or [alias(num(1), "any_change")]
        program.derivations = list(cache_program.derivations)
        program.steps.append(CreateScratch(phase=-1, purpose="the groups this maintenance touches",
                                           name=t.affected, source=select(setup, [t.cache.ref(None)])))
        for st in cache_program.steps:
            st.record = Record(into=t.affected, returning=[col(VIEW_ALIAS, k) for k in keys] or [num(1)],
                               body=select([exp.Star()], [R.returned()]))
            st.purpose = f"cache: {st.purpose}  (records affected groups)"
            st.role = "cache"
            program.steps.append(st)
    program.derivations.append(
        "γ (general rule, Table 7; non-blocking): each i-diff of its input marks the groups it touches;\n"
        "    => Δ-V = the marked groups, Δ+V = γ(Input^post ⋉_G marked groups), read from "
        + ("the base tables (no cache, footnote 6)" if t.agg.no_cache else "the intermediate cache"))
    if keys:
        marked = subquery(select([col(None, k) for k in keys], [R.scratch(t.affected)], distinct=True), "a")
        delete = DeleteMatching(phase=3, purpose="Δ-V: remove the affected groups", target=t.ref(), using=[marked],
                                condition=match_keys(t, VIEW_ALIAS, "a", t.agg.id_names))
    else:
        delete = DeleteMatching(phase=3, purpose="Δ-V: remove the affected groups", target=t.ref(), using=[],
                                condition=any_change(t))
    program.steps.append(delete)
    source = "the base tables (no cache, footnote 6)" if t.agg.no_cache else "the cache"
    program.steps.append(InsertRows(
        phase=4, purpose=f"Δ+V: recompute the affected groups from {source} (Table 7, general rule)",
        target=t.ref(), columns=t.columns, source=group_select(t, restrict=True)))
    return program


def rule(t: AggregateTarget, inputs: list[Program], row_ids: dict[int, list[str]]) -> Program:
    """γ's program rule, over its input's program (its intermediate cache's, one without a cache
    being empty): the specialized SUM/COUNT/AVG rules where they apply (aggregate_sum.py, Tables 9,
    11, 12), else the general rule (Table 7). row_ids: the rows each step of a union cache writes
    (union.rule)."""
    (cache,) = inputs
    if t.sum_args is not None:
        return sum_program(t, cache, row_ids)
    return general_program(t, cache)
