"""Δ-scripts for grouped views: the general aggregation rule (Table 7) over an intermediate cache.

1. The cache (the SPJ input below γ, Example 4.6) is maintained by its own Δ-script.
   Every statement of it is wrapped in a data-modifying CTE whose RETURNING clause
   records the group keys of the cache rows it deleted, updated or inserted. Group
   keys are never updated in place (they are conditional, see rules/project.py), so
   a row moving between groups reports both.
2. The view then deletes the affected groups and recomputes them from the cache
   (Δu_V = γ(Δ ⋉_G Input^post)); a group left empty simply gets no row back, and a new
   group gets its first one, so group creation and deletion (which the paper leaves
   out) are handled. MIN/MAX survive deletion of the extreme, and SQL's NULL/empty
   semantics are PostgreSQL's own, since PostgreSQL evaluates the aggregates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from ..algebra.plan import AGG_MARK, Aggregate
from ..sqltext import DIALECT, ident, qualified
from .render import VIEW_ALIAS, Target, full_query
from .script import DeltaScript, Statement

if TYPE_CHECKING:
    from .union import UnionTarget

CACHE_ALIAS = "c"


@dataclass
class AggregateTarget:
    schema: str
    name: str
    view_id: int
    agg: Aggregate
    cache: "Target | UnionTarget"  # the intermediate cache: an SPJ view or a UNION ALL
    # set when the specialized SUM/COUNT/AVG rules apply (aggregate_sum.choose_rule): the
    # aggregated cache columns, each with whether it is summed
    sum_args: dict[str, bool] | None = None

    @property
    def table(self) -> str:
        return qualified(self.schema, self.name)

    @property
    def affected(self) -> str:
        return f"pg_temp.{ident(f'idivm_affected_{self.view_id}')}"

    @property
    def group_deltas(self) -> str:
        return f"pg_temp.{ident(f'idivm_group_deltas_{self.view_id}')}"

    @property
    def columns(self) -> list[str]:
        return [n for n, _ in self.agg.outputs] + self.agg.id_names + [n for n, _ in self.state_columns]

    @property
    def state_columns(self) -> list[tuple[str, str]]:
        """Hidden operator-cache columns of the view (specialized rules only)."""
        from .aggregate_sum import state_columns

        return state_columns(self.sum_args) if self.sum_args is not None else []


def cache_name(view_id: int) -> str:
    return f"cache_{view_id}"


def bind_cache(e: exp.Expression) -> str:
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table == AGG_MARK:
            return exp.column(node.name, CACHE_ALIAS, quoted=True)
        return node

    return e.copy().transform(fn).sql(DIALECT)


def same_key(a: str, b: str, nullable: bool = True) -> str:
    """Equality of two group-key values. A key that can be NULL needs the null-safe form, written so
    that PostgreSQL can still use an index on either side (a BitmapOr of `= b` and `IS NULL`; IS NOT
    DISTINCT FROM cannot), but that costs an index probe per group and cannot be hashed; a key that
    cannot (Aggregate.never_null_keys) gets plain equality."""
    return f"({a} = {b} OR ({a} IS NULL AND {b} IS NULL))" if nullable else f"{a} = {b}"


def match_keys(t: "AggregateTarget", left: str, right: str, left_names: list[str] | None = None) -> str:
    """`left` and `right` rows have the same group (left's key columns named left_names, else as the
    keys); TRUE for a global aggregate."""
    never_null = t.agg.never_null_keys()
    names = left_names or t.agg.keys
    return " AND ".join(same_key(f"{left}.{ident(n)}", f"{right}.{ident(k)}", k not in never_null)
                        for n, k in zip(names, t.agg.keys)) or "TRUE"


def input_source(t: AggregateTarget) -> str:
    """What the aggregate reads: its intermediate cache, or (footnote 6) its SPJ input itself."""
    if t.agg.no_cache:
        return f"(\n{full_query(t.cache)})"
    return t.cache.table


def affected_rows(t: AggregateTarget, source: str) -> str:
    """The input rows of the affected groups. Keys without NULLs are matched by plain equality,
    which PostgreSQL can hash (many groups) or look up in an index (few); the rare keys with a
    NULL use the null-safe form. The two sets of affected keys are disjoint."""
    c, a = ident(CACHE_ALIAS), ident("a")
    keys = [ident(k) for k in t.agg.keys]
    distinct = f"SELECT DISTINCT {', '.join(keys)} FROM {t.affected}"
    equal = " AND ".join(f"{c}.{k} = {a}.{k}" for k in keys)
    if set(t.agg.keys) <= t.agg.never_null_keys():
        return f"SELECT {c}.* FROM {source} AS {c} JOIN ({distinct}) AS {a} ON {equal}"
    same = match_keys(t, c, a)
    no_null = " AND ".join(f"{k} IS NOT NULL" for k in keys)
    some_null = " OR ".join(f"{k} IS NULL" for k in keys)
    return (f"SELECT {c}.* FROM {source} AS {c} JOIN ({distinct} WHERE {no_null}) AS {a} ON {equal}\n"
            f"UNION ALL\n"
            f"SELECT {c}.* FROM {source} AS {c} JOIN ({distinct} WHERE {some_null}) AS {a} ON {same}")


def group_select(t: AggregateTarget, restrict: bool) -> str:
    """The aggregate over the cache (or input): all groups, or only the affected ones."""
    c = ident(CACHE_ALIAS)
    keys = t.agg.keys
    outs = [f"{bind_cache(e)} AS {ident(n)}" for n, e in t.agg.outputs]
    outs += [f"{c}.{ident(k)} AS {ident(h)}" for k, h in zip(keys, t.agg.id_names)]
    outs += [f"{agg} AS {ident(n)}" for n, agg in t.state_columns]
    source = input_source(t)
    if restrict and keys:
        source = f"(\n{affected_rows(t, source)})"
    sql = f"SELECT {', '.join(outs)}\nFROM {source} AS {c}"
    if keys:
        sql += "\nGROUP BY " + ", ".join(f"{c}.{ident(k)}" for k in keys)
    if t.agg.having is not None:
        sql += f"\nHAVING {bind_cache(t.agg.having)}"
    if restrict and not keys:  # one global group: recompute only if the input changed at all
        sql = f"SELECT * FROM (\n{sql}) AS {ident('q')}\nWHERE EXISTS (SELECT 1 FROM {t.affected})"
    return sql


def aggregate_script(t: AggregateTarget, cache_script: DeltaScript) -> DeltaScript:
    if t.sum_args is not None:
        from .aggregate_sum import sum_script

        return sum_script(t, cache_script)
    keys = t.agg.keys
    script = DeltaScript(strategy=cache_script.strategy)
    if t.agg.no_cache:
        from .aggregate_nocache import affected_group_statements

        script.statements += affected_group_statements(t)
    else:
        returning = ", ".join(f"{ident(VIEW_ALIAS)}.{ident(k)}" for k in keys) or "1"
        setup_cols = ", ".join(ident(k) for k in keys) or f"1 AS {ident('any_change')}"
        script.derivations = list(cache_script.derivations)
        script.statements.append(Statement(
            phase=-1, purpose="the groups this maintenance touches",
            sql=f"CREATE TEMP TABLE {t.affected} ON COMMIT DROP AS SELECT {setup_cols} FROM {t.cache.table} WITH NO DATA",
        ))
        for st in cache_script.statements:
            script.statements.append(Statement(
                phase=st.phase, purpose=f"cache: {st.purpose}  (records affected groups)",
                sql=f"WITH {ident('changed')} AS (\n{st.sql}\nRETURNING {returning})\n"
                    f"INSERT INTO {t.affected} SELECT * FROM {ident('changed')}",
                driven_by=st.driven_by,
            ))
    script.derivations.append(
        "γ (general rule, Table 7; non-blocking): each i-diff of its input marks the groups it touches;\n"
        "    => Δ-V = the marked groups, Δ+V = γ(Input^post ⋉_G marked groups), read from "
        + ("the base tables (no cache, footnote 6)" if t.agg.no_cache else "the intermediate cache"))
    v, a = ident(VIEW_ALIAS), ident("a")
    if keys:
        same = match_keys(t, v, a, t.agg.id_names)
        delete = (f"DELETE FROM {t.table} AS {v}\nUSING (SELECT DISTINCT {', '.join(ident(k) for k in keys)} "
                  f"FROM {t.affected}) AS {a}\nWHERE {same}")
    else:
        delete = f"DELETE FROM {t.table} WHERE EXISTS (SELECT 1 FROM {t.affected})"
    script.statements.append(Statement(phase=3, purpose="Δ-V: remove the affected groups", sql=delete))
    cols = ", ".join(ident(c) for c in t.columns)
    source = "the base tables (no cache, footnote 6)" if t.agg.no_cache else "the cache"
    script.statements.append(Statement(
        phase=4, purpose=f"Δ+V: recompute the affected groups from {source} (Table 7, general rule)",
        sql=f"INSERT INTO {t.table} ({cols})\n{group_select(t, restrict=True)}",
    ))
    return script
