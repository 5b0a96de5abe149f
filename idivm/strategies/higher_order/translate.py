"""From a view's logical plan to AGCA (VLDBJ'14 Section 3.2): the query each map of the
higher-order strategy will materialize.

- A scan ``R AS r`` is the atom R(r.c1, ..., r.ck): one variable per column, named ``alias.column``.
- Join and WHERE conjuncts are comparisons multiplied in (a selection is a product with a condition).
- An SPJ view is Sum[output variables](scans * conditions): each output row's multiplicity is its
  number of duplicates.
- A grouped view is one map per aggregate, each a Sum over the group variables: COUNT(*) is
  Sum[G](Q), SUM(a) is Sum[G](Q * a); AVG(a) is the two maps SUM(a) and COUNT(*) (never an inverse
  count). A group exists while its COUNT(*) map is nonzero.

What is translated so far: inner joins and WHERE conjuncts that compare columns and constants
(=, <>, <, <=, >, >=), outputs that are columns, and COUNT(*) / COUNT(a) / SUM(a) / AVG(a) with GROUP
BY columns, over columns that cannot be NULL. Everything else is refused with UnsupportedQuery
naming it (NULLs: the calculus has no NULL; SQL's NULL rules come with the translation of nullable
columns).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from sqlglot import exp

from ...algebra.plan import AGG_MARK, Aggregate, Join, Project, Scan, Select, scans
from ...calculus.expr import Cmp, Const, Expr, Rel, Sum, Var, mul
from ...errors import UnsupportedQuery

OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def variable(alias: str, column: str) -> str:
    return f"{alias}.{column}"


def relation_name(scan: Scan) -> str:
    return f"{scan.table.schema}.{scan.table.name}"


@dataclass
class Translation:
    """The view in AGCA. ``maps``: name -> query; ``group``: the output variables; ``outputs``: each
    output column with how it is computed: ("var", variable), ("map", name) or ("avg", (sum, count))."""

    group: tuple[str, ...]
    maps: dict[str, Expr] = field(default_factory=dict)
    outputs: list[tuple[str, tuple[str, object]]] = field(default_factory=list)
    count_map: str = "count"
    grouped: bool = False  # a GROUP BY (or aggregate) view: one row per group; else a multiset of rows
    types: dict[str, str] = field(default_factory=dict)  # SQL type of each variable and each output

    def output_type(self, name: str) -> str:
        return self.types[name]


def refuse(what: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"the higher-order strategy does not translate {what} yet; use --strategy id")


def _term(e: exp.Expression, nullable) -> Var | Const:
    if isinstance(e, exp.Paren):
        return _term(e.this, nullable)
    if isinstance(e, exp.Column):
        if nullable(e.table, e.name):
            raise refuse(f"column {e.table}.{e.name}, which can be NULL")
        return Var(variable(e.table, e.name))
    if isinstance(e, exp.Literal):
        return Const(e.this if e.is_string else Fraction(e.this))
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return Const(-Fraction(e.this.this))
    raise refuse(f"the expression {e.sql('postgres')}")


def condition(e: exp.Expression, nullable) -> Expr:
    if isinstance(e, exp.Paren):
        return condition(e.this, nullable)
    if isinstance(e, exp.And):
        return mul(condition(e.this, nullable), condition(e.expression, nullable))
    op = OPS.get(type(e))
    if op is None:
        raise refuse(f"the condition {e.sql('postgres')}")
    return Cmp(op, _term(e.this, nullable), _term(e.expression, nullable))


def _body(node, nullable) -> Expr:
    """scans * conditions of an SPJ subtree."""
    if isinstance(node, Scan):
        cols = node.table.column_names
        return Rel(relation_name(node), tuple(variable(node.alias, c) for c in cols))
    if isinstance(node, Join):
        return mul(_body(node.left, nullable), _body(node.right, nullable),
                   *(condition(c, nullable) for c in node.conjuncts))
    if isinstance(node, Select):
        return mul(_body(node.child, nullable), *(condition(c, nullable) for c in node.conjuncts))
    raise refuse(type(node).__name__)


def _variable_types(plan) -> dict[str, str]:
    return {variable(s.alias, c): t for s in scans(plan) for c, t in s.table.columns}


# PostgreSQL's result types of SUM and AVG over the exact numeric types (its pg_aggregate entries);
# over floating-point types the result depends on the order of the additions, which incremental
# maintenance cannot reproduce, so they are refused.
SUM_TYPES = {"smallint": "bigint", "integer": "bigint", "bigint": "numeric", "numeric": "numeric"}
AVG_TYPES = {"smallint": "numeric", "integer": "numeric", "bigint": "numeric", "numeric": "numeric"}


def _base_type(sql_type: str) -> str:
    return sql_type.split("(", 1)[0].strip()


def _output_var(e: exp.Expression, nullable) -> str:
    if isinstance(e, exp.Coalesce):  # NATURAL / USING joins: the columns are equal (inner join)
        e = e.this
    term = _term(e, nullable)
    if not isinstance(term, Var):
        raise refuse(f"the output {e.sql('postgres')}")
    return term.name


def translate(plan) -> Translation:
    """The plan of a view (frontend/build_plan.py) in AGCA."""
    if isinstance(plan, Aggregate):
        return _aggregate(plan)
    if not isinstance(plan, Project):
        raise refuse("UNION")
    nullable = _nullable(plan)
    _plain(plan)
    body = _body(plan.child, nullable)
    outs = [(n, _output_var(e, nullable)) for n, e in plan.outputs]
    group = tuple(dict.fromkeys(v for _, v in outs))
    types = _variable_types(plan)
    types.update({n: types[v] for n, v in outs})
    return Translation(group=group, maps={"count": Sum(group, body)}, outputs=[(n, ("var", v)) for n, v in outs],
                       types=types)


def _plain(plan: Project) -> None:
    if plan.subqueries:
        raise refuse("EXISTS / IN subqueries")


def _nullable(plan: Project):
    tables = {s.alias: s.table for s in scans(plan)}
    return lambda alias, column: alias in tables and not tables[alias].never_null(column)


def _aggregate(agg: Aggregate) -> Translation:
    if not isinstance(agg.cache, Project):
        raise refuse("UNION below an aggregate")
    if agg.having is not None:
        raise refuse("HAVING")
    cache = agg.cache
    nullable = _nullable(cache)
    _plain(cache)
    body = _body(cache.child, nullable)
    cols = {n: _output_var(e, nullable) for n, e in cache.outputs}
    group = tuple(dict.fromkeys(cols[k] for k in agg.keys))
    out = Translation(group=group, maps={"count": Sum(group, body)}, grouped=True, types=_variable_types(cache))
    for name, e in agg.outputs:
        if isinstance(e, exp.Column) and e.table == AGG_MARK and e.name in agg.keys:
            out.outputs.append((name, ("var", cols[e.name])))
            out.types[name] = out.types[cols[e.name]]
            continue
        if not isinstance(e, (exp.Count, exp.Sum, exp.Avg)) or e.args.get("distinct"):
            raise refuse(f"the output {e.sql('postgres')}")
        arg = e.this
        if isinstance(e, exp.Count):  # no NULLs: COUNT(a) = COUNT(*)
            out.outputs.append((name, ("map", "count")))
            out.types[name] = "bigint"
            continue
        if not (isinstance(arg, exp.Column) and arg.table == AGG_MARK):
            raise refuse(f"the aggregate argument {arg.sql('postgres')}")
        var = cols[arg.name]
        result_types = SUM_TYPES if isinstance(e, exp.Sum) else AVG_TYPES
        arg_type = _base_type(out.types[var])
        if arg_type not in result_types:
            raise refuse(f"{e.key.upper()} over {var} of type {out.types[var]} (only integer and numeric "
                         "arguments add up exactly in any order)")
        out.types[name] = result_types[arg_type]
        summed = f"sum_{arg.name}"
        out.maps[summed] = Sum(group, mul(body, Var(var)))
        out.outputs.append((name, ("map", summed) if isinstance(e, exp.Sum) else ("avg", (summed, "count"))))
    return out
