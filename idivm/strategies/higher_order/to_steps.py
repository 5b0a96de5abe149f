"""The viewlet transform's maps and triggers (viewlet.py) as Δ-program steps, so that every engine
runs them like any other strategy's program.

A monomial c * Sum[G](f1 * ... * fn) becomes one SELECT: each atom is a FROM item (ΔR: the base
table's signed batch; a map: its table; a base relation: its table), a variable is bound by its
first atom column and equated to later ones, comparisons go to WHERE, and the value is
SUM(c * Π multiplicities * Π value variables) grouped by G. A trigger's increments are computed
into scratch relations first and only then added to their maps (AddToMap), so that every increment
reads the maps as they were before the batch, as the delta rules require.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sqlglot
from sqlglot import exp

from ...calculus.expr import VAR_TABLE, Atom, Cmp, Const, DeltaRel, Expr, Extern, Var
from ...errors import UnsupportedQuery
from ...program import relations as Rl
from ...program.steps import CACHE_ROLE, MAPS_PHASE, AddToMap, CreateScratch, InsertRows, Step
from ...program.trees import alias, aliased, col, eq, num, select, string, subquery, union_all
from ...rules.idiff_steps import kind_is_not
from .viewlet import Compiled, MapDef, expand, is_lift

VALUE = "__value"
MULT = "__m"


@dataclass
class BaseTable:
    """A base relation of the calculus: where it is and its columns in atom order."""

    schema: str
    name: str
    columns: tuple[str, ...]


def signed_batch(t: BaseTable) -> exp.Query:
    """ΔR as signed tuples from the i-diff instance: +1 for each post-image, -1 for each pre-image."""
    d = Rl.delta(t.schema, t.name)
    plus = select([alias(col(None, Rl.post(c)), c) for c in t.columns] + [alias(num(1), MULT)], [d.copy()],
                  [kind_is_not(Rl.DELETED, alias=None)])
    minus = select([alias(col(None, Rl.pre(c)), c) for c in t.columns] + [alias(num(-1), MULT)], [d.copy()],
                   [kind_is_not(Rl.INSERTED, alias=None)])
    return union_all([plus, minus])


class Binder:
    """How atoms read: base relations and their batches by name, maps by name; `nullable`: the
    variables that may hold NULL."""

    def __init__(self, tables: dict[str, BaseTable], map_ref: Callable[[str], exp.Table], map_keys: dict[str, tuple],
                 nullable: frozenset[str] = frozenset()):
        self.tables, self.map_ref, self.map_keys, self.nullable = tables, map_ref, map_keys, nullable

    def atom(self, a: Atom, alias_: str) -> tuple[exp.Expression, list[str], exp.Expression | None]:
        """(FROM item, its column per atom variable, its multiplicity or None for 1)."""
        if isinstance(a, DeltaRel):
            t = self.tables[a.name]
            return subquery(signed_batch(t), alias_), list(t.columns), col(alias_, MULT)
        if a.name in self.map_keys:
            return aliased(self.map_ref(a.name), alias_), list(self.map_keys[a.name]), col(alias_, VALUE)
        t = self.tables[a.name]
        return Rl.base(t.schema, t.name, alias_), list(t.columns), None


def _term(t, bound: dict[str, exp.Expression]) -> exp.Expression:
    if isinstance(t, Var):
        return bound[t.name].copy()
    if isinstance(t.value, str):
        return string(t.value)
    v = t.value
    return exp.Literal.number(str(v.numerator)) if v.denominator == 1 else exp.Div(
        this=exp.cast(exp.Literal.number(v.numerator), "numeric"), expression=exp.Literal.number(v.denominator))


def extern_sql(f: Extern, bound: dict[str, exp.Expression]) -> exp.Expression:
    """An interpreted function's SQL with each variable replaced by what binds it."""
    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table == VAR_TABLE:
            return bound[node.name].copy()
        return node

    return exp.Paren(this=sqlglot.parse_one(f.sql, read="postgres").transform(put))


CMP = {"=": exp.EQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}


def monomial_select(coef, group: tuple[str, ...], factors: tuple[Expr, ...], binder: Binder) -> exp.Select:
    """SELECT group vars, SUM(coef * multiplicities * values) AS __value ... GROUP BY group vars."""
    froms, where, weights = [], [], [_term(Const(coef), {})]
    bound: dict[str, exp.Expression] = {}
    for i, f in enumerate(factors):
        if isinstance(f, Atom):
            item, columns, mult = binder.atom(f, f"a{i}")
            froms.append(item)
            for var, column in zip(f.vars, columns):
                c = col(f"a{i}", column)
                if var in bound:
                    where.append(eq(bound[var].copy(), c))
                else:
                    bound[var] = c
            if mult is not None:
                weights.append(mult)
    for f in factors:  # lifts first: conditions and the group may read what they bind
        if is_lift(f):
            bound[f.var] = extern_sql(f.q, bound)
    for f in factors:
        if is_lift(f):
            continue
        if isinstance(f, Cmp):
            where.append(CMP[f.op](this=_term(f.left, bound), expression=_term(f.right, bound)))
        elif isinstance(f, Extern):
            (where if f.kind == "cond" else weights).append(extern_sql(f, bound))
        elif isinstance(f, Var):
            weights.append(bound[f.name].copy())
        elif isinstance(f, Const):
            weights.append(_term(f, {}))
        elif not isinstance(f, Atom):
            raise UnsupportedQuery(f"the higher-order strategy cannot yet run the factor {f}")
    product = weights[0]
    for w in weights[1:]:
        product = exp.Mul(this=product, expression=w)
    outs = [alias(bound[g].copy(), g) for g in group] + [alias(exp.Sum(this=product), VALUE)]
    q = select(outs, froms, where)
    if group:
        q = q.group_by(*[bound[g].copy() for g in group], copy=False)
    return q


def increment_query(e: Expr, binder: Binder) -> exp.Query:
    """All monomials of an increment (or a map's definition), as one query of (keys, __value) rows."""
    return union_all([monomial_select(c, g or (), fs, binder) for c, g, fs in expand(e)])


def _reads(e: Expr) -> set[str]:
    """Names of the maps and relations an increment reads."""
    return {f.name for _, _, fs in expand(e) for f in fs if isinstance(f, Atom) and not isinstance(f, DeltaRel)}


def trigger_steps(compiled: Compiled, relation: str, binder: Binder, scratch_name: Callable[[int], str],
                  driven_by: str | None = None, kept: frozenset[str] = frozenset()) -> tuple[list[Step], list[tuple[str, str]]]:
    """The trigger program of one relation's batch. Returns the steps and, per increment kept in a
    scratch relation, (map, scratch): the keys the batch touched, for the maps in `kept`.

    Every increment must read the maps as they were before this batch. When no increment of the
    batch reads a map the batch itself changes (no self-join), each increment is added to its map
    straight from its query (in any order); otherwise all increments are first computed into
    scratch relations, then added. Increments of maps in `kept` always go through a scratch
    relation, which later steps read. Scratch relations are created in the setup phase, like the
    map they mirror; the rest runs in the maps phase in this order, after the batches of the
    relations before this one (see program/steps.py)."""
    triggers = compiled.triggers.get(relation, [])
    changed = {name for name, _ in triggers}
    self_reading = any(_reads(e) & changed for _, e in triggers)
    setup: list[Step] = []
    increments: list[Step] = []
    additions: list[Step] = []
    written: list[tuple[str, str]] = []
    for k, (name, e) in enumerate(triggers):
        if not expand(e):
            continue  # an increment that is 0 (its condition never holds: WHERE 1 = 2) adds nothing
        keys = list(binder.map_keys[name])
        source = increment_query(e, binder)
        add = dict(phase=MAPS_PHASE, purpose=f"Δ{relation}: {name} += {e}", target=binder.map_ref(name), keys=keys,
                   value=VALUE, driven_by=driven_by, role=CACHE_ROLE, nullable=[k for k in keys if k in binder.nullable])
        if not self_reading and name not in kept:
            additions.append(AddToMap(source=source, **add))
            continue
        scratch = scratch_name(k)
        setup.append(CreateScratch(phase=-1, purpose=f"increment of {name} for Δ{relation}", name=scratch,
                                   source=select([exp.Star()], [binder.map_ref(name)]), role=CACHE_ROLE))
        increments.append(InsertRows(phase=MAPS_PHASE, purpose=f"Δ{relation}: the increment of {name}",
                                     target=Rl.scratch(scratch), columns=keys + [VALUE], source=source,
                                     driven_by=driven_by, role=CACHE_ROLE, analyze=True))
        additions.append(AddToMap(source=select([exp.Star()], [Rl.scratch(scratch)]), **add))
        written.append((name, scratch))
    return setup + increments + additions, written


def definition_query(m: MapDef, binder: Binder) -> exp.Query:
    """A map's rows from its definition over the base tables: (keys, __value), zeros left out (the
    initial fill; a map's absent key has value 0)."""
    inner = subquery(increment_query(m.query, binder), "d")
    keys = [col("d", k) for k in m.keys]
    total = exp.Sum(this=col("d", VALUE))
    q = select([alias(k.copy(), k.name) for k in keys] + [alias(total, VALUE)], [inner])
    if keys:
        q = q.group_by(*[k.copy() for k in keys], copy=False)
    return q.having(exp.NEQ(this=total.copy(), expression=num(0)), copy=False)
