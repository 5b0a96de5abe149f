"""The specialized aggregation rules: SUM (Table 9), COUNT (Table 11) and AVG over SUM/COUNT
operator caches (Table 12), with group creation and deletion, which the paper leaves out.

The general rule (rules/aggregate.py) re-reads every affected group from the
intermediate cache; these rules never do. The view row of each group carries its
operator caches as hidden columns: ``__idivm_n`` (COUNT(*) of the group), and per
aggregated cache column a: ``__idivm_s_a`` (its sum) and ``__idivm_c_a`` (COUNT(a)).

1. Every statement maintaining the cache records the rows it changed, signed:
   a deleted row -1 with its old values, an inserted row +1, an updated row -1 with
   its old values (read from the cache in the statement's own snapshot, which does
   not see the statement's effect) and +1 with its new ones. These are Table 9's
   Δ1 ∪ Δ2 ∪ Δ3 (x_post - x_pre, 0 - x_pre, x_post) in row form.
2. The signed rows are summed per group (γ_G,sum(x_Δ)) and applied to the operator
   caches: Δu_V = Output ⋈ γ(...). The visible outputs are recomputed from the
   caches: COUNT(*) = n, COUNT(a) = c_a, SUM(a) = s_a if c_a > 0 else NULL, and
   AVG(a) = s_a / c_a as numeric (exactly what PostgreSQL's avg computes for
   integer and numeric arguments). A group whose n reaches 0 is deleted; a group
   that had no row gets one. All three are one step (MergeRows, a MERGE) over the
   per-group sums, computed as its source: no scratch table for them, and one
   statement where a delete, an update and an insert each paid their own start
   and end (in immediate mode's single-row writes, a tenth of the write). A view
   without GROUP BY keeps its single row, updated from a scratch row of sums.

Only integer and numeric arguments of SUM/AVG use these rules: float sums maintained by
differences drift from recomputation, so float views keep the general rule. A numeric argument
whose values each have their own scale (an unconstrained numeric) keeps one more operator cache,
``__idivm_scales_a``, from which its SUM and AVG get the scale the query shows
(program/numeric_scale.py).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.placeholders import CACHE
from ..program import relations as R
from ..program.steps import CreateScratch, DeleteMatching, InsertRows, MergeRows, Program, Record, UpdateMatching
from ..program.numeric_scale import EXACT_TYPE_OIDS, fixed_scale, scale_weight, shown_sum
from ..program.trees import alias, all_of, col, eq, num, paren, select, subquery, union_all
from .aggregate_target import STATE_N, match_keys, state_count, state_scales, state_sum
from .spj import VIEW_ALIAS
from .union import UnionTarget

SIGN = "__idivm_sign"


def choose_rule(target, column_types) -> None:
    """Set target.sum_args if the specialized rules apply: supported aggregates, and every summed
    argument of an exact type (integers, numeric); target.scaled_args, those whose values each have
    their own scale. column_types(query tree) gives the types of a query's columns
    (sqltext.ColumnType)."""
    args = target.agg.sum_count_args()
    if args is None:
        return
    summed = [c for c, s in args.items() if s]
    if summed:
        types = column_types(select([col(None, c) for c in summed], [subquery(target.cache.query(), "q")]))
        if any(t.oid not in EXACT_TYPE_OIDS for t in types):
            return
        target.scaled_args = frozenset(c for c, t in zip(summed, types) if fixed_scale(t) is None)
    target.sum_args = args


def over_state(e: exp.Expression, state, key, scaled: frozenset[str] = frozenset()) -> exp.Expression:
    """An output expression over the operator caches: state(name) and key(cache column) give
    the SQL trees standing for a state column's value and a group key's value; the sums of the
    columns in `scaled` are shown with the scale their values give them (program/numeric_scale.py)."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.AggFunc):
            arg = node.this
            if isinstance(node, exp.Count):
                return state(STATE_N) if arg is None or isinstance(arg, exp.Star) else state(state_count(arg.name))
            count, total = state(state_count(arg.name)), state(state_sum(arg.name))
            if arg.name in scaled:
                total = shown_sum(total, state(state_scales(arg.name)))
            if isinstance(node, exp.Avg):
                total = exp.Div(this=exp.cast(total, "numeric"), expression=exp.cast(count, "numeric"))
            return exp.Case(ifs=[exp.If(this=exp.GT(this=count, expression=exp.Literal.number(0)), true=total)])
        if CACHE.marks(node):
            return key(node.name)
        return node

    return e.transform(fn)


def _signed(t, write, keys: list[str], args: list[str], ids: list[str]) -> Record:
    """Record Table 9's signed rows of one cache write into the changes scratch: an insert +1 with its
    new values, a delete -1 with its old ones, an update both (old images read from the cache as the
    write's own snapshot sees it, which does not include the write, matched by `ids`: the columns
    that identify the cache row the write changes)."""
    ch = "changed"
    if isinstance(write, UpdateMatching):
        match = all_of([eq(col("o", i), col(ch, i)) for i in ids])
        olds = [col("o", k) for k in keys] + [num(-1)] + [col("o", a) for a in args]
        news = [col(ch, k) for k in keys] + [num(1)] + [col(ch, a) for a in args]
        old_rows = select(olds, [t.cache.ref("o")]).join(R.returned(ch), on=match, join_type="inner", copy=False)
        return Record(into=t.affected, returning=[col(VIEW_ALIAS, c) for c in dict.fromkeys(keys + args + ids)],
                      body=union_all([select(news, [R.returned(ch)]), old_rows]))
    sign = num(-1) if isinstance(write, DeleteMatching) else num(1)
    return Record(into=t.affected, returning=[col(VIEW_ALIAS, c) for c in keys + args] or [num(1)],
                  body=select([col(None, k) for k in keys] + [sign] + [col(None, a) for a in args], [R.returned(ch)]))


def sum_program(t, cache_program: Program, row_ids: dict[int, list[str]] | None = None) -> Program:
    """The specialized rules over the cache's program. row_ids: for a UNION ALL cache (outer joins),
    the columns identifying the rows each step writes (union.rule); an SPJ cache's rows
    are identified by its IDs."""
    keys, args = t.agg.keys, list(t.sum_args)
    own_ids = None if isinstance(t.cache, UnionTarget) else [i.name for i in t.cache.plan.ids]
    program = Program(strategy=cache_program.strategy, derivations=list(cache_program.derivations) + [
        "γ (specialized SUM/COUNT/AVG rules, Tables 9, 11, 12; blocking): combines every i-diff of the cache\n"
        "    Δ1 ∪ Δ2 ∪ Δ3 (signed rows) -> γ_G,sum(x_Δ) -> ΔuV on the operator caches (n, sums, counts),\n"
        "    => Δ-V where n reaches 0, Δ+V for groups without a row, AVG = sum / count"])
    program.steps.append(CreateScratch(
        phase=-1, purpose="signed cache rows this maintenance changes (Table 9: Δ1 ∪ Δ2 ∪ Δ3)", name=t.affected,
        source=select([col(None, k) for k in keys] + [alias(num(1), SIGN)] + [col(None, a) for a in args],
                      [t.cache.ref(None)])))
    sign = col(None, SIGN)
    sums = [alias(exp.Sum(this=sign.copy()), STATE_N)]
    for c, summed in t.sum_args.items():
        if summed:
            sums.append(alias(exp.Sum(this=exp.Mul(this=sign.copy(), expression=col(None, c))), state_sum(c)))
        if c in t.scaled_args:
            weighted = exp.Mul(this=sign.copy(), expression=scale_weight(col(None, c)))
            sums.append(alias(exp.Sum(this=weighted), state_scales(c)))
        zero_if_null = exp.Case(ifs=[exp.If(this=exp.Is(this=col(None, c), expression=exp.null()), true=num(0))],
                                default=sign.copy())
        sums.append(alias(exp.Sum(this=zero_if_null), state_count(c)))
    # one row per changed group; without GROUP BY one row, and only if anything changed
    per_group = select([col(None, k) for k in keys] + sums, [R.scratch(t.affected)])
    if keys:
        per_group = per_group.group_by(*[col(None, k) for k in keys], copy=False)
    else:
        per_group = per_group.having(exp.GT(this=exp.Count(this=exp.Star()), expression=num(0)), copy=False)
    for st in cache_program.steps:
        st.record = _signed(t, st, keys, args, own_ids or row_ids[id(st)])
        st.purpose = f"cache: {st.purpose}  (records signed changes)"
        st.role = "cache"
        program.steps.append(st)

    def new_value(name: str) -> exp.Expression:
        """A cache's value after the change, COALESCE(v.s, 0) + COALESCE(x.ds, 0): a sum over only
        NULLs is NULL on either side (a group of NULL arguments, or changes of NULL rows only)."""
        return paren(exp.Add(this=exp.func("COALESCE", col(VIEW_ALIAS, name), num(0)),
                             expression=exp.func("COALESCE", col("x", name), num(0))))

    states = [n for n, _ in t.state_columns]
    key_of = dict(zip(keys, t.agg.id_names))
    sets = [(n, new_value(n)) for n in states]
    sets += [(n, over_state(e, new_value, lambda k: col(VIEW_ALIAS, key_of[k]), t.scaled_args))
             for n, e in t.agg.outputs if e.find(exp.AggFunc)]
    match = match_keys(t, VIEW_ALIAS, "x", t.agg.id_names)
    if keys:
        # one MERGE over the per-group sums: a group whose count reaches 0 is deleted (only a
        # group whose count went down can: a row of the view has n > 0), another changed group
        # updated, a group that had no row gets one
        outs = [over_state(e, lambda n: col("x", n), lambda k: col("x", k), t.scaled_args) for _, e in t.agg.outputs]
        outs += [col("x", k) for k in key_of]
        outs += [col("x", n) for n in states]
        program.steps.append(MergeRows(
            phase=3, purpose="Δ-V where n reaches 0, ΔuV on the operator caches (SUM/COUNT/AVG recomputed from them), "
                             "Δ+V for groups without a row: the per-group sums of the signed changes merged into "
                             "the view (Tables 9, 11, 12)",
            target=t.ref(), source=per_group, source_alias="x", condition=match,
            delete_when=all_of([exp.LT(this=col("x", STATE_N), expression=num(0)), eq(new_value(STATE_N), num(0))]),
            assignments=sets, columns=t.columns, values=outs,
            insert_when=exp.GT(this=col("x", STATE_N), expression=num(0))))
        return program
    # without GROUP BY: the one row of sums, kept in a scratch relation, updates the view's one row
    group_cols = [n for n, _ in t.state_columns]
    program.steps += [
        CreateScratch(phase=-1, purpose="per-group sums of the signed changes (γ_G,sum(x_Δ))",
                      name=t.group_deltas, source=per_group.copy()),
        InsertRows(phase=3, purpose="sum the signed changes", target=R.scratch(t.group_deltas), columns=group_cols,
                   source=per_group),
        UpdateMatching(phase=3, purpose="ΔuV: apply the sums to the operator caches, recompute SUM/COUNT/AVG "
                                        "(Tables 9, 11, 12)",
                       target=t.ref(), assignments=sets, using=[R.scratch(t.group_deltas, "x")], condition=match)]
    return program
