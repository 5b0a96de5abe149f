"""From a view's logical plan to AGCA (VLDBJ'14 Section 3.2): the queries the higher-order
strategy materializes as its top-level maps, and how the view's columns derive from them.

- A scan ``R AS r`` is the atom R(r.c1, ..., r.ck): one variable per column the view reads (its
  key among them), named ``alias.column`` (scope.Scope.atom).
- A join or WHERE conjunct is a factor: a comparison of columns and constants stays AGCA's
  comparison; any other deterministic predicate (OR, NOT, IS NULL, IN lists, CASE, functions) is
  an interpreted condition over its variables (calculus/expr.Extern), kept where SQL keeps a row:
  where it is TRUE.
- An SPJ view is Sum[V](scans * conditions) over the variables V its outputs read: the COUNT(*)
  map, whose value at a key is how many times the rows computed from it occur.
- A grouped view is one map per aggregate, each a Sum over the group variables: COUNT(*) is
  Sum[G](Q); COUNT(e) is Sum[G](Q * [e IS NOT NULL]); SUM(e) is Sum[G](Q * e) with its COUNT(e)
  map beside it (SUM of no non-NULL values is NULL, not 0); AVG(e) is those two maps divided,
  never an inverse count. A group exists while its COUNT(*) map is nonzero and its HAVING holds.

NULLs: a variable may hold NULL. Comparisons and interpreted conditions are empty (0) where SQL's
are not TRUE, values are empty where SQL's SUM would skip them, and map keys that may be NULL are
grouped as GROUP BY groups them (NULLs together). Output expressions and HAVING are evaluated by
the database over the maps' values, so their NULL rules are SQL's own.

A GROUP BY expression (and SELECT DISTINCT of one) is a variable bound to its value,
x := f(y⃗), DBToaster's lift of a value term; it may be NULL, like any GROUP BY value.

EXISTS / IN subqueries are nested counts (nesting.py): the view's maps are then keyed by the
group variables and the outer variables the subqueries read, and the view is re-evaluated from
them and the subqueries' maps.

MIN, MAX and COUNT(DISTINCT e) are exact by a map of how many rows have each value per group: the
view reads its least or greatest key, or how many keys it has (a deleted minimum falls back to the
next value, as recomputation would).

UNION ALL is one COUNT map over the output values, the branches its terms (_union_count).

What is not translated yet is refused with UnsupportedQuery naming it: SUM/AVG(DISTINCT),
aggregates over a UNION, and subqueries inside a UNION branch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from ...algebra.columns_read import columns_read
from ...algebra.placeholders import CACHE, SUBQUERY
from ...algebra.plan import Aggregate, Join, Project, Scan, Select, Union, part_scans
from ...calculus.expr import Assign, Expr, Sum, Var, add, mul
from ...errors import UnsupportedQuery
from ...program.numeric_scale import scale_weight
from .nesting import Nesting, NestingBuilder, subquery_nodes
from .scope import Scope, SlotValue, SumType, Variable, refuse, shown


@dataclass(frozen=True)
class Slot:
    """A value the view table reads from the maps: "count" (maps[0], 0 where absent), "sum"
    (maps[0], NULL where the COUNT map maps[1] is 0), "avg" (maps[0] / maps[1]); or over a values
    map (keyed by the group and the aggregated value `var`, counting the rows with that value):
    "min", "max" (its least / greatest key), "count_distinct" (how many keys it has; the map is
    keyed by several variables for COUNT(DISTINCT (a, b))), "sum_distinct" and "avg_distinct" (the
    sum / average of its keys)."""

    kind: str
    maps: tuple[str, ...]
    vars: tuple[str, ...] = ()
    type: str | None = None  # "sum", "avg": the type PostgreSQL gives the SUM (its map's values are numeric)
    # "sum", "avg": the scale all the argument's values share; None where each has its own (an
    # unconstrained numeric): maps[2] then sums their scale weights (program/numeric_scale.py)
    scale: int | None = None

    @property
    def over_values(self) -> bool:
        return self.kind in VALUE_SLOTS


VALUE_SLOTS = ("min", "max", "count_distinct", "sum_distinct", "avg_distinct")


@dataclass
class Translation:
    """The view in AGCA. ``maps``: name -> query; ``group``: the keys of every top-level map;
    ``outputs`` and ``having``: SQL over the placeholders Variable(variable) and SlotValue(slot)."""

    group: tuple[str, ...]
    maps: dict[str, Expr] = field(default_factory=dict)
    outputs: list[tuple[str, exp.Expression]] = field(default_factory=list)
    slots: dict[str, Slot] = field(default_factory=dict)
    having: exp.Expression | None = None
    count_map: str = "count"
    grouped: bool = False  # one row per group; else a multiset of rows
    types: dict[str, str] = field(default_factory=dict)  # each variable's SQL type
    nullable: frozenset[str] = frozenset()  # group variables that may hold NULL
    lifted: frozenset[str] = frozenset()  # variables bound to expressions that may be NULL (GROUP BY's, a row value's)
    map_keys: tuple[str, ...] = ()  # keys of the view's maps: group, then the outer variables of nesting
    value_vars: dict[str, tuple[str, ...]] = field(default_factory=dict)  # values map -> the variables it adds
    nesting: Nesting | None = None  # EXISTS / IN subqueries: the view is re-evaluated from its maps
    having_nested: list = field(default_factory=list)  # nesting.Nested of HAVING's scalar subqueries

    def nested_map(self, i: int) -> str:
        return f"nested_{i}"

    def having_map(self, i: int) -> str:
        return f"having_{i}"

    def shown_var(self, name: str) -> str | None:
        """The variable an output shows as it is, if it is just one."""
        e = dict(self.outputs)[name]
        return e.name if Variable.marks(e) else None


def _body(node, scope: Scope, nesting: NestingBuilder) -> Expr:
    """scans * conditions of an SPJ subtree; conjuncts with subqueries go to `nesting`."""
    def conditions(conjuncts) -> list[Expr]:
        out = []
        for c in conjuncts:
            if subquery_nodes(c):
                nesting.condition(c)
            else:
                out.append(scope.condition(c))
        return out

    if isinstance(node, Scan):
        return scope.atom(node.alias, node.table)
    if isinstance(node, Join):
        return mul(_body(node.left, scope, nesting), _body(node.right, scope, nesting), *conditions(node.conjuncts))
    if isinstance(node, Select):
        return mul(_body(node.child, scope, nesting), *conditions(node.conjuncts))
    raise refuse(type(node).__name__)


def _union_count(union: Union, read) -> tuple[tuple[str, ...], Expr, frozenset[str]]:
    """A UNION ALL as one COUNT map over its output values: each branch's rows lifted into the same
    variables #o0, #o1, ... (x := f(y), as GROUP BY expressions are), their counts added
    (AGCA's +: the branches' terms have the same output variables). Returns the variables, the
    query and the variables that may be NULL (all of them: a branch's output may be)."""
    group = tuple(f"#o{j}" for j in range(len(union.outputs)))
    terms = []
    for branch in union.branches:
        scope, body, nesting = _spj(branch, read)
        if nesting:  # an outer join's padded rows are such a branch: NOT EXISTS (no partner)
            raise refuse("outer joins whose padded rows need a NOT EXISTS over a table" if union.outer_join
                         else "EXISTS / IN or scalar subqueries inside a UNION branch")
        lifts = [Assign(v, scope.extern("value", scope.joined_column(e))) for v, (_, e) in zip(group, branch.outputs)]
        terms.append(Sum(group, mul(body, *lifts)))
    return group, Sum(group, add(*terms)), frozenset(group)


def _spj(plan, read) -> tuple[Scope, Expr, Nesting]:
    if not isinstance(plan, Project):
        raise refuse("UNION")
    scope = Scope(plan, read)
    builder = NestingBuilder(scope, plan.subqueries)
    body = _body(plan.child, scope, builder)
    return scope, body, builder.out


def _nest(out: Translation, nesting: Nesting) -> None:
    """The view's maps keyed by the group and the outer variables its subqueries read, and the
    subqueries' own maps (nesting.py)."""
    out.map_keys = out.group + tuple(v for v in nesting.outer if v not in out.group)
    if nesting:
        out.nesting = nesting
        for i, n in enumerate(nesting.nested):
            out.maps[out.nested_map(i)] = n.query


def _vars_of(e: exp.Expression) -> list[str]:
    return list(dict.fromkeys(c.name for c in Variable.find_all(e)))


def _sum_type(cache_column: str, e: exp.Expression, scope: Scope, sum_type) -> SumType | None:
    if sum_type is not None:
        return sum_type(cache_column)
    return scope.sum_type(scope.term(e))  # without the database's word: a column's declared type


def translate(plan, sum_type: Callable[[str], SumType | None] | None = None) -> Translation:
    """The plan of a view (frontend/build_plan.py) in AGCA. sum_type(cache column) is the SumType
    of a SUM/AVG argument of an exact type (integers, numeric), None for any other: sums of
    floating-point values depend on the order of the additions, which maintenance cannot reproduce."""
    if part_scans(plan):  # first-order only: a part's i-diff feeds the first-order rules (rules/part.py)
        raise refuse("a subquery that aggregates, joined with other tables, aggregated again or read by EXISTS / IN")
    read = columns_read(plan)
    if isinstance(plan, Aggregate):
        return _aggregate(plan, sum_type, read)
    if isinstance(plan, Union):
        group, count, nullable = _union_count(plan, read)
        return Translation(group=group, maps={"count": count}, map_keys=group, nullable=nullable, lifted=nullable,
                           outputs=[(n, Variable(v)) for (n, _), v in zip(plan.outputs, group)])
    scope, body, nesting = _spj(plan, read)
    outputs = [(n, scope.over_vars(scope.joined_column(e))) for n, e in plan.outputs]
    group = tuple(dict.fromkeys(v for _, e in outputs for v in _vars_of(e)))
    out = Translation(group=group, outputs=outputs, types=scope.types, nullable=scope.nullable & set(group))
    _nest(out, nesting)
    out.maps = {"count": Sum(out.map_keys, body), **out.maps}
    return out


def _aggregate(agg: Aggregate, sum_type, read) -> Translation:
    if isinstance(agg.cache, Union):  # UNION (distinct): a grouping on every output of the UNION ALL
        if [e for _, e in agg.outputs if not CACHE.marks(e)]:
            raise refuse("aggregates over outer joins" if agg.cache.outer_join else "aggregates over a UNION")
        group, count, nullable = _union_count(agg.cache, read)
        key_var = dict(zip([n for n, _ in agg.cache.outputs], group))
        return Translation(group=group, maps={"count": count}, map_keys=group, nullable=nullable, lifted=nullable,
                           grouped=True, outputs=[(n, Variable(key_var[e.name])) for n, e in agg.outputs])
    scope, body, nesting = _spj(agg.cache, read)
    cols = dict(agg.cache.outputs)
    group, lifts = [], []
    for k in agg.keys:
        e = scope.joined_column(cols[k])
        if isinstance(e, exp.Column):
            group.append(scope.var(e))
        else:  # GROUP BY an expression: a variable bound to its value (x := f(y⃗)), NULL a value too
            group.append(f"#{k}")
            lifts.append(Assign(group[-1], scope.extern("value", e)))
    body = mul(body, *lifts)
    key_var = dict(zip(agg.keys, group))
    group_t = tuple(dict.fromkeys(group))
    lifted = frozenset(a.var for a in lifts)
    out = Translation(group=group_t, grouped=True, types=scope.types,
                      nullable=(scope.nullable | lifted) & set(group_t), lifted=lifted)
    _nest(out, nesting)
    keys = out.map_keys
    out.maps = {"count": Sum(keys, body), **out.maps}

    def arg_of(a: exp.Expression) -> exp.Expression:
        """An aggregate's argument over the base columns (it is written over the cache's columns)."""
        if not CACHE.marks(a):
            raise refuse(f"the aggregate argument {shown(a)}")
        return cols[a.name]

    def count_of(e: exp.Expression) -> str:
        cond = scope.not_null(e)
        if cond is None:
            return "count"
        return map_of(cond, "count")

    def sum_of(value: Expr) -> str:
        return map_of(value, "sum")

    def map_of(factor: Expr, prefix: str) -> str:
        """The map Sum(keys, body * factor): one already made with that definition, else a new one."""
        query = Sum(keys, mul(body, factor))
        name = next((k for k, q in out.maps.items() if q == query), f"{prefix}_{len(out.maps)}")
        out.maps[name] = query
        return name

    def slot(node: exp.Expression) -> exp.Expression:
        if CACHE.marks(node):
            if node.name not in key_var:
                raise refuse(f"the column {node.name} outside an aggregate")
            return Variable(key_var[node.name])
        if not isinstance(node, exp.AggFunc):
            return node
        distinct = isinstance(node.this, exp.Distinct)
        if isinstance(node, (exp.Min, exp.Max)) or (isinstance(node, (exp.Count, exp.Sum, exp.Avg)) and distinct):
            s = values_slot(node)
        elif not isinstance(node, (exp.Count, exp.Sum, exp.Avg)) or node.args.get("distinct"):
            raise refuse(f"the aggregate {shown(node)}")
        elif isinstance(node, exp.Count) and (node.this is None or isinstance(node.this, exp.Star)):
            s = Slot("count", ("count",))
        else:
            e = arg_of(node.this)
            if isinstance(node, exp.Count):
                s = Slot("count", (count_of(e),))
            else:
                typed = exact_sum_type(node, node.this)
                maps = (sum_of(scope.value(e)), count_of(e))
                if typed.scale is None:
                    maps += (sum_of(scope.extern("value", scale_weight(e.copy()))),)
                s = Slot("sum" if isinstance(node, exp.Sum) else "avg", maps, type=typed.type, scale=typed.scale)
        key = next((k for k, v in out.slots.items() if v == s), f"v{len(out.slots)}")
        out.slots[key] = s
        return SlotValue(key)

    def exact_sum_type(node: exp.Expression, arg: exp.Expression, distinct: str = "") -> SumType:
        """The type PostgreSQL gives SUM of the argument (`arg`, a cache column); refused where it
        is not exact (floating point: sums depend on the order of the additions)."""
        typed = _sum_type(arg.name, arg_of(arg), scope, sum_type)
        if typed is None:
            raise UnsupportedQuery(
                f"the higher-order strategy cannot keep {node.key.upper()}({distinct}{shown(arg_of(arg))}) exactly: its "
                "argument is not an integer or numeric, and sums of floating-point values depend on the order of "
                "the additions; use --strategy id")
        return typed

    def values_slot(node: exp.Expression) -> Slot:
        """MIN, MAX, COUNT / SUM / AVG(DISTINCT): a map of how many rows have each non-NULL value per
        group (re-read at the top: the least key, the greatest, the number of keys, their sum or
        average). COUNT(DISTINCT (a, b)) keys the map by both values, NULLs included: PostgreSQL
        counts a row value whose fields are all NULL (the row itself is not NULL)."""
        args = node.this.expressions if isinstance(node.this, exp.Distinct) else [node.this]
        if len(args) != 1:
            raise refuse(f"the aggregate {shown(node)}")
        arg = args[0]
        row = arg.expressions if isinstance(arg, exp.Tuple) else None
        if row is not None and not isinstance(node, exp.Count):
            raise refuse(f"the aggregate {shown(node)}")
        if isinstance(node, (exp.Sum, exp.Avg)):  # its distinct values are summed again at every read
            exact_sum_type(node, arg, "DISTINCT ")
        factors, value_vars = [body], []
        for e in (arg_of(a) for a in (row or [arg])):
            term = scope.term(e)
            if isinstance(term, Var):
                value_vars.append(term.name)
            else:  # an expression: a variable bound to its value
                value_vars.append(f"#v{len(out.maps)}_{len(value_vars)}")
                factors.append(Assign(value_vars[-1], scope.extern("value", e)))
                if row is not None:
                    out.lifted |= {value_vars[-1]}
            cond = scope.not_null(e) if row is None else None
            if cond is not None:
                factors.append(cond)
        var = tuple(dict.fromkeys(value_vars))
        query = Sum(tuple(dict.fromkeys(keys + var)), mul(*factors))
        # the same map only for the same value variables: under nesting a values map is summed over the
        # outer variables except its value variables, so two values maps never share with each other
        # or with the COUNT map (the compiler still stores equal definitions once)
        name = next((k for k, q in out.maps.items() if q == query and out.value_vars.get(k) == var),
                    f"values_{len(out.maps)}")
        out.maps[name] = query
        out.value_vars[name] = var
        kind = f"{node.key.lower()}_distinct" if isinstance(node, (exp.Count, exp.Sum, exp.Avg)) else node.key.lower()
        return Slot(kind, (name,), var)

    out.outputs = [(n, e.transform(slot)) for n, e in agg.outputs]
    if agg.having is not None:
        out.having = agg.having.transform(slot)
    if agg.having_subqueries:
        _having_subqueries(out, agg, scope, key_var)
    return out


def _having_subqueries(out: Translation, agg: Aggregate, scope: Scope, key_var: dict[str, str]) -> None:
    """Scalar subqueries of HAVING: nested counts and sums (nesting.py) correlated with the group's
    keys, looked up when the view table's HAVING is evaluated over the group's maps."""
    def group_key(c: exp.Column) -> str:
        if not CACHE.marks(c) or c.name not in key_var:
            raise refuse(f"the column {shown(c)} in a HAVING subquery")
        return key_var[c.name]

    for sq in agg.having_subqueries:
        scope.add(sq.alias, sq.table)
    builder = NestingBuilder(scope, agg.having_subqueries, outer_var=group_key, prefix="h")
    values = {sq.alias: builder.scalar_value(sq) for sq in agg.having_subqueries}

    def put(node: exp.Expression) -> exp.Expression:
        if SUBQUERY.marks(node):
            return exp.Paren(this=values[node.name].copy())
        return node

    out.having = out.having.transform(put)
    out.having_nested = builder.out.nested
    for i, n in enumerate(builder.out.nested):
        out.maps[out.having_map(i)] = n.query
