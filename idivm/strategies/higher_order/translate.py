"""From a view's logical plan to AGCA (VLDBJ'14 Section 3.2): the queries the higher-order
strategy materializes as its top-level maps, and how the view's columns derive from them.

- A scan ``R AS r`` is the atom R(r.c1, ..., r.ck): one variable per column, named ``alias.column``.
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

What is not translated yet is refused with UnsupportedQuery naming it: MIN/MAX and DISTINCT
aggregates, UNION, EXISTS/IN subqueries and nested aggregates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

from sqlglot import exp

from ...algebra.plan import AGG_MARK, Aggregate, Join, Project, Scan, Select, scans
from ...calculus.expr import VAR_TABLE, Assign, Cmp, Const, Expr, Extern, Rel, Sum, Var, mul
from ...errors import UnsupportedQuery

OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
VAR, SLOT = "@var", "@slot"  # placeholders in output and HAVING expressions: a variable, a map value


def variable(alias: str, column: str) -> str:
    return f"{alias}.{column}"


def relation_name(scan: Scan) -> str:
    return f"{scan.table.schema}.{scan.table.name}"


@dataclass(frozen=True)
class Slot:
    """A value the view table reads from the maps: "count" (maps[0], 0 where absent), "sum"
    (maps[0], NULL where the COUNT map maps[1] is 0) or "avg" (maps[0] / maps[1])."""

    kind: str
    maps: tuple[str, ...]


@dataclass
class Translation:
    """The view in AGCA. ``maps``: name -> query; ``group``: the keys of every top-level map;
    ``outputs`` and ``having``: SQL over placeholders Column(VAR, variable) and Column(SLOT, slot)."""

    group: tuple[str, ...]
    maps: dict[str, Expr] = field(default_factory=dict)
    outputs: list[tuple[str, exp.Expression]] = field(default_factory=list)
    slots: dict[str, Slot] = field(default_factory=dict)
    having: exp.Expression | None = None
    count_map: str = "count"
    grouped: bool = False  # one row per group; else a multiset of rows
    types: dict[str, str] = field(default_factory=dict)  # each variable's SQL type
    nullable: frozenset[str] = frozenset()  # group variables that may hold NULL
    lifted: frozenset[str] = frozenset()  # variables bound to GROUP BY expressions (they may be NULL)

    def shown_var(self, name: str) -> str | None:
        """The variable an output shows as it is, if it is just one."""
        e = dict(self.outputs)[name]
        return e.name if isinstance(e, exp.Column) and e.table == VAR else None


def refuse(what: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"the higher-order strategy does not translate {what} yet; use --strategy id")


def shown(e: exp.Expression) -> str:
    """An expression as a user would write it (identifiers quoted only where they must be)."""
    def plain(node: exp.Expression) -> exp.Expression:
        return exp.to_identifier(node.name) if isinstance(node, exp.Identifier) else node

    return e.copy().transform(plain).sql("postgres")


def placeholder(kind: str, name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True), table=exp.to_identifier(kind, quoted=True))


class _Scope:
    """Variables of the scans under one SPJ plan."""

    def __init__(self, plan):
        self.tables = {s.alias: s.table for s in scans(plan)}
        self.types = {variable(a, c): t for a, tbl in self.tables.items() for c, t in tbl.columns}
        self.nullable = frozenset(variable(a, c) for a, tbl in self.tables.items()
                                  for c in tbl.column_names if not tbl.never_null(c))
        self.equal: set[frozenset[str]] = set()  # variables a join or WHERE conjunct equates

    def joined_column(self, e: exp.Expression) -> exp.Expression:
        """COALESCE(a.x, b.x) of columns that an equality conjunct equates (how a NATURAL or USING
        join's column reads) is a.x: an inner join's equal columns are equal and not NULL."""
        if isinstance(e, exp.Coalesce) and all(isinstance(a, exp.Column) for a in [e.this, *e.expressions]):
            first = self.var(e.this)
            if all(frozenset((first, self.var(a))) in self.equal for a in e.expressions):
                return e.this
        return e

    def var(self, e: exp.Column) -> str:
        if e.table not in self.tables:
            raise refuse(f"the column {shown(e)}")
        return variable(e.table, e.name)

    def term(self, e: exp.Expression) -> Var | Const | None:
        """A column or a number or text constant as an AGCA term; None for anything else."""
        if isinstance(e, exp.Paren):
            return self.term(e.this)
        if isinstance(e, exp.Column):
            return Var(self.var(e))
        if isinstance(e, exp.Literal):
            return Const(e.this if e.is_string else Fraction(e.this))
        if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
            return Const(-Fraction(e.this.this))
        return None

    def extern(self, kind: str, e: exp.Expression) -> Extern:
        """e as an interpreted function of its variables."""
        if e.find(exp.Subquery, exp.Exists, exp.AggFunc) is not None:
            raise refuse(f"the subquery or aggregate in {shown(e)}")
        names: list[str] = []

        def put(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column):
                v = self.var(node)
                names.append(v)
                return placeholder(VAR_TABLE, v)
            return node

        sql = e.copy().transform(put).sql("postgres")
        return Extern(kind, sql, tuple(dict.fromkeys(names)))

    def condition(self, e: exp.Expression) -> Expr:
        if isinstance(e, exp.Paren):
            return self.condition(e.this)
        if isinstance(e, exp.And):
            return mul(self.condition(e.this), self.condition(e.expression))
        op = OPS.get(type(e))
        if op is not None:
            left, right = self.term(e.this), self.term(e.expression)
            if left is not None and right is not None:
                if op == "=" and isinstance(left, Var) and isinstance(right, Var):
                    self.equal.add(frozenset((left.name, right.name)))
                return Cmp(op, left, right)
        return self.extern("cond", e)

    def value(self, e: exp.Expression) -> Expr:
        """e as a multiplicity: a variable, or an interpreted value."""
        t = self.term(e)
        return t if isinstance(t, Var) else self.extern("value", e)

    def not_null(self, e: exp.Expression) -> Expr | None:
        """The condition that e is not NULL (None: it never is)."""
        t = self.term(e)
        if isinstance(t, Const) or (isinstance(t, Var) and t.name not in self.nullable):
            return None
        return self.extern("cond", exp.Not(this=exp.Is(this=e.copy(), expression=exp.Null())))

    def over_vars(self, e: exp.Expression) -> exp.Expression:
        """An output expression with its columns as variable placeholders."""
        if e.find(exp.Subquery, exp.Exists, exp.AggFunc) is not None:
            raise refuse(f"the output {shown(e)}")

        def put(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column):
                return placeholder(VAR, self.var(node))
            return node

        return e.copy().transform(put)


def _body(node, scope: _Scope) -> Expr:
    """scans * conditions of an SPJ subtree."""
    if isinstance(node, Scan):
        cols = node.table.column_names
        return Rel(relation_name(node), tuple(variable(node.alias, c) for c in cols))
    if isinstance(node, Join):
        return mul(_body(node.left, scope), _body(node.right, scope), *(scope.condition(c) for c in node.conjuncts))
    if isinstance(node, Select):
        return mul(_body(node.child, scope), *(scope.condition(c) for c in node.conjuncts))
    raise refuse(type(node).__name__)


def _plain(plan) -> Project:
    if not isinstance(plan, Project):
        raise refuse("UNION")
    if plan.subqueries:
        raise refuse("EXISTS / IN subqueries")
    return plan


def _vars_of(e: exp.Expression) -> list[str]:
    return list(dict.fromkeys(c.name for c in e.find_all(exp.Column) if c.table == VAR))


EXACT_TYPES = ("smallint", "integer", "bigint", "numeric")


def _exact(cache_column: str, e: exp.Expression, scope: _Scope, exact) -> bool:
    if exact is not None:
        return exact(cache_column)
    t = scope.term(e)  # without the database's word: a column's declared type
    return isinstance(t, Var) and scope.types[t.name].split("(", 1)[0] in EXACT_TYPES


def translate(plan, exact: Callable[[str], bool] | None = None) -> Translation:
    """The plan of a view (frontend/build_plan.py) in AGCA. exact(cache column) says whether a
    SUM/AVG argument is of an exact type (integers, numeric): sums of floating-point values depend
    on the order of the additions, which maintenance cannot reproduce."""
    if isinstance(plan, Aggregate):
        return _aggregate(plan, exact)
    plan = _plain(plan)
    scope = _Scope(plan)
    body = _body(plan.child, scope)
    outputs = [(n, scope.over_vars(scope.joined_column(e))) for n, e in plan.outputs]
    group = tuple(dict.fromkeys(v for _, e in outputs for v in _vars_of(e)))
    return Translation(group=group, maps={"count": Sum(group, body)}, outputs=outputs,
                       types=scope.types, nullable=scope.nullable & set(group))


def _aggregate(agg: Aggregate, exact) -> Translation:
    cache = _plain(agg.cache)
    scope = _Scope(cache)
    body = _body(cache.child, scope)
    cols = dict(cache.outputs)
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
    out = Translation(group=group_t, maps={"count": Sum(group_t, body)}, grouped=True, types=scope.types,
                      nullable=(scope.nullable | lifted) & set(group_t), lifted=lifted)

    def arg_of(a: exp.Expression) -> exp.Expression:
        """An aggregate's argument over the base columns (it is written over the cache's columns)."""
        if not (isinstance(a, exp.Column) and a.table == AGG_MARK):
            raise refuse(f"the aggregate argument {shown(a)}")
        return cols[a.name]

    def count_of(e: exp.Expression) -> str:
        cond = scope.not_null(e)
        if cond is None:
            return "count"
        name = f"count_{len(out.maps)}"
        query = Sum(group_t, mul(body, cond))
        for known, q in out.maps.items():
            if q == query:
                return known
        out.maps[name] = query
        return name

    def slot(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table == AGG_MARK:
            if node.name not in key_var:
                raise refuse(f"the column {node.name} outside an aggregate")
            return placeholder(VAR, key_var[node.name])
        if not isinstance(node, exp.AggFunc):
            return node
        if not isinstance(node, (exp.Count, exp.Sum, exp.Avg)) or node.args.get("distinct") \
                or isinstance(node.this, exp.Distinct):
            raise refuse(f"the aggregate {shown(node)}")
        if isinstance(node, exp.Count) and (node.this is None or isinstance(node.this, exp.Star)):
            s = Slot("count", ("count",))
        else:
            e = arg_of(node.this)
            if isinstance(node, exp.Count):
                s = Slot("count", (count_of(e),))
            else:
                if not _exact(node.this.name, e, scope, exact):
                    raise UnsupportedQuery(
                        f"the higher-order strategy cannot keep {node.key.upper()}({shown(e)}) exactly: its argument "
                        "is not an integer or numeric, and sums of floating-point values depend on the order of "
                        "the additions; use --strategy id")
                summed = Sum(group_t, mul(body, scope.value(e)))
                name = next((k for k, q in out.maps.items() if q == summed), f"sum_{len(out.maps)}")
                out.maps[name] = summed
                s = Slot("sum" if isinstance(node, exp.Sum) else "avg", (name, count_of(e)))
        key = next((k for k, v in out.slots.items() if v == s), f"v{len(out.slots)}")
        out.slots[key] = s
        return placeholder(SLOT, key)

    out.outputs = [(n, e.copy().transform(slot)) for n, e in agg.outputs]
    if agg.having is not None:
        out.having = agg.having.copy().transform(slot)
    return out
