"""The specialized aggregation rules: SUM (Table 9), COUNT (Table 11) and AVG over SUM/COUNT
operator caches (Table 12), with group creation and deletion, which the paper leaves out.

The general rule (compile/aggregate.py) re-reads every affected group from the
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
   that had no row gets one. A view without GROUP BY keeps its single row.

Only integer and numeric arguments of SUM/AVG use these rules: float sums
maintained by differences drift from recomputation, so float views keep the
general rule.
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import AGG_MARK
from ..sqltext import DIALECT, ident
from .aggregate import CACHE_ALIAS, match_keys
from .render import VIEW_ALIAS, full_query
from .script import DeltaScript, Statement

STATE_N = "__idivm_n"
EXACT_TYPE_OIDS = {20, 21, 23, 1700}  # int8, int2, int4, numeric
SIGN = "__idivm_sign"


def state_sum(col: str) -> str:
    return f"__idivm_s_{col}"


def state_count(col: str) -> str:
    return f"__idivm_c_{col}"


def state_columns(args: dict[str, bool]) -> list[tuple[str, str]]:
    """(view column, aggregate over the cache (aliased CACHE_ALIAS) that fills it) for every operator cache."""
    c = ident(CACHE_ALIAS)
    out = [(STATE_N, "count(*)")]
    for col, summed in args.items():
        if summed:
            out.append((state_sum(col), f"sum({c}.{ident(col)})"))
        out.append((state_count(col), f"count({c}.{ident(col)})"))
    return out


def choose_rule(target, column_types) -> None:
    """Set target.sum_args if the specialized rules apply: supported aggregates, and every
    summed argument of an exact type. column_types(sql) gives the type OIDs of a query's columns."""
    args = target.agg.sum_count_args()
    if args is None:
        return
    summed = [col for col, s in args.items() if s]
    if summed:
        cols = ", ".join(ident(col) for col in summed)
        types = column_types(f"SELECT {cols} FROM ({full_query(target.cache)}) AS {ident('q')}")
        if any(t not in EXACT_TYPE_OIDS for t in types):
            return
    target.sum_args = args


def over_state(e: exp.Expression, state, key) -> str:
    """An output expression over the operator caches: state(name) and key(cache column) give
    the SQL trees standing for a state column's value and a group key's value."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.AggFunc):
            arg = node.this
            if isinstance(node, exp.Count):
                return state(STATE_N) if arg is None or isinstance(arg, exp.Star) else state(state_count(arg.name))
            count, total = state(state_count(arg.name)), state(state_sum(arg.name))
            if isinstance(node, exp.Avg):
                total = exp.Div(this=exp.cast(total, "numeric"), expression=exp.cast(count, "numeric"))
            return exp.Case(ifs=[exp.If(this=exp.GT(this=count, expression=exp.Literal.number(0)), true=total)])
        if isinstance(node, exp.Column) and node.table == AGG_MARK:
            return key(node.name)
        return node

    return e.copy().transform(fn).sql(DIALECT)


def _col(table: str, name: str) -> exp.Column:
    return exp.column(name, table, quoted=True)


def sum_script(t, cache_script: DeltaScript) -> DeltaScript:
    keys, args = t.agg.keys, list(t.sum_args)
    changes, groups = t.affected, t.group_deltas
    v, x, o, ch = ident(VIEW_ALIAS), ident("x"), ident("o"), ident("changed")
    script = DeltaScript(strategy=cache_script.strategy, derivations=list(cache_script.derivations) + [
        "γ (specialized SUM/COUNT/AVG rules, Tables 9, 11, 12; blocking): combines every i-diff of the cache\n"
        "    Δ1 ∪ Δ2 ∪ Δ3 (signed rows) -> γ_G,sum(x_Δ) -> ΔuV on the operator caches (n, sums, counts),\n"
        "    => Δ-V where n reaches 0, Δ+V for groups without a row, AVG = sum / count"])
    script.statements.append(Statement(
        phase=-1, purpose="signed cache rows this maintenance changes (Table 9: Δ1 ∪ Δ2 ∪ Δ3)",
        sql=f"CREATE TEMP TABLE {changes} ON COMMIT DROP AS SELECT {', '.join([*(ident(k) for k in keys), f'1 AS {ident(SIGN)}', *(ident(a) for a in args)])} "
            f"FROM {t.cache.table} WITH NO DATA"))
    sums = [f"sum({ident(SIGN)}) AS {ident(STATE_N)}"]
    for col, summed in t.sum_args.items():
        if summed:
            sums.append(f"sum({ident(SIGN)} * {ident(col)}) AS {ident(state_sum(col))}")
        sums.append(f"sum(CASE WHEN {ident(col)} IS NULL THEN 0 ELSE {ident(SIGN)} END) AS {ident(state_count(col))}")
    # one row per changed group; without GROUP BY one row, and only if anything changed
    group_by = f" GROUP BY {', '.join(ident(k) for k in keys)}" if keys else " HAVING count(*) > 0"
    per_group = f"SELECT {', '.join([*(ident(k) for k in keys), *sums])} FROM {changes}{group_by}"
    script.statements.append(Statement(
        phase=-1, purpose="per-group sums of the signed changes (γ_G,sum(x_Δ))",
        sql=f"CREATE TEMP TABLE {groups} ON COMMIT DROP AS {per_group} WITH NO DATA"))

    returned = ", ".join(f"{v}.{ident(c)}" for c in keys + args)
    ids = [i.name for i in t.cache.plan.ids]
    for st in cache_script.statements:
        verb = st.sql.lstrip().split(None, 1)[0].upper()
        assert verb in ("DELETE", "INSERT", "UPDATE"), st.sql
        if verb == "UPDATE":  # old images from the cache as this statement's snapshot sees it
            match = " AND ".join(f"{o}.{ident(i)} = {ch}.{ident(i)}" for i in ids)
            olds = ", ".join([*(f"{o}.{ident(k)}" for k in keys), "-1", *(f"{o}.{ident(a)}" for a in args)])
            news = ", ".join([*(f"{ch}.{ident(k)}" for k in keys), "1", *(f"{ch}.{ident(a)}" for a in args)])
            ret = ", ".join(f"{v}.{ident(c)}" for c in dict.fromkeys(keys + args + ids))
            body = (f"SELECT {news} FROM {ch}\nUNION ALL\nSELECT {olds} FROM {t.cache.table} AS {o} JOIN {ch} ON {match}")
        else:
            ret = returned or "1"
            sign = "-1" if verb == "DELETE" else "1"
            body = f"SELECT {', '.join([*(ident(k) for k in keys), sign, *(ident(a) for a in args)])} FROM {ch}"
        script.statements.append(Statement(
            phase=st.phase, purpose=f"cache: {st.purpose}  (records signed changes)",
            sql=f"WITH {ch} AS (\n{st.sql}\nRETURNING {ret})\nINSERT INTO {changes}\n{body}",
            driven_by=st.driven_by))

    script.statements.append(Statement(
        phase=3, purpose="sum the signed changes per group", sql=f"INSERT INTO {groups}\n{per_group}"))

    def new_value(name: str) -> exp.Expression:
        """A cache's value after the change, COALESCE(v.s, 0) + COALESCE(x.ds, 0): a sum over only
        NULLs is NULL on either side (a group of NULL arguments, or changes of NULL rows only)."""
        zero = exp.Literal.number(0)
        return exp.Paren(this=exp.Add(this=exp.func("COALESCE", _col(VIEW_ALIAS, name), zero),
                                      expression=exp.func("COALESCE", _col("x", name), zero)))

    states = [n for n, _ in state_columns(t.sum_args)]
    key_of = dict(zip(keys, t.agg.id_names))
    sets = [f"{ident(n)} = {new_value(n).sql(DIALECT)}" for n in states]
    sets += [f"{ident(n)} = {over_state(e, new_value, lambda k: _col(VIEW_ALIAS, key_of[k]))}"
             for n, e in t.agg.outputs if e.find(exp.AggFunc)]
    match = match_keys(t, v, x, t.agg.id_names)
    if keys:
        script.statements.append(Statement(
            phase=3, purpose="Δ-V: groups whose last row went (n reaches 0)",
            # only a group whose count went down can reach 0 (a row of the view has n > 0)
            sql=f"DELETE FROM {t.table} AS {v}\nUSING {groups} AS {x}\nWHERE {x}.{ident(STATE_N)} < 0 AND {match} AND "
                f"{new_value(STATE_N).sql(DIALECT)} = 0"))
    script.statements.append(Statement(
        phase=3, purpose="ΔuV: apply the sums to the operator caches, recompute SUM/COUNT/AVG (Tables 9, 11, 12)",
        sql=f"UPDATE {t.table} AS {v} SET {', '.join(sets)}\nFROM {groups} AS {x}\nWHERE {match}"))
    if keys:
        outs = [f"{over_state(e, lambda n: _col('x', n), lambda k: _col('x', k))} AS {ident(n)}"
                for n, e in t.agg.outputs]
        outs += [f"{x}.{ident(k)} AS {ident(h)}" for k, h in key_of.items()]
        outs += [f"{x}.{ident(n)} AS {ident(n)}" for n in states]
        cols = ", ".join(ident(c) for c in t.columns)
        script.statements.append(Statement(
            phase=4, purpose="Δ+V: groups that had no row get one",
            sql=f"INSERT INTO {t.table} ({cols})\nSELECT {', '.join(outs)}\nFROM {groups} AS {x}\n"
                f"WHERE {x}.{ident(STATE_N)} > 0 AND NOT EXISTS (SELECT 1 FROM {t.table} AS {v} WHERE {match})"))
    return script
