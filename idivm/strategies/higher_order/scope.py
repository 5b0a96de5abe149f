"""Variables of a view's scans, and the translation of SQL expressions over them into AGCA terms,
comparisons and interpreted functions (translate.py and nesting.py build on it)."""
from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from sqlglot import exp

from ...algebra.placeholders import Kind, printable
from ...algebra.plan import Scan, scans
from ...calculus.expr import VAR_TABLE, Cmp, Const, Expr, Extern, Rel, Var, mul
from ...errors import UnsupportedQuery
from ...program.trees import eq

OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
# The type PostgreSQL gives SUM over each exact type (integers, numeric): what a sum read from a
# map (whose values are numeric) is cast back to, so that an expression over it (integer `/` and
# `%` truncate) computes as the view's own query does.
SUM_TYPES = {"smallint": "bigint", "integer": "bigint", "bigint": "numeric", "numeric": "numeric"}


class SumType(NamedTuple):
    """What a map's sum of an exact argument is shown as: the type PostgreSQL gives the SUM, and
    the scale every value of the argument has (0 for integers, s for numeric(p, s)), or None where
    each value has its own (an unconstrained numeric): the query's sum has the greatest scale among
    the group's rows, which the view table reads from one more sum map, of their scale weights
    (translate.py, program/numeric_scale.py)."""

    type: str
    scale: int | None


def declared_sum_type(sql_type: str) -> SumType | None:
    """SumType of a column's type as format_type prints it ("numeric(10,2)", "integer"); None for
    types whose sums are not exact."""
    base, _, mods = sql_type.partition("(")
    if base not in SUM_TYPES:
        return None
    if base != "numeric":
        return SumType(SUM_TYPES[base], 0)
    scale = mods.rstrip(")").split(",")[1] if "," in mods else None
    return SumType("numeric", max(int(scale), 0) if scale is not None else None)


Variable = Kind("var")  # AGCA variable `name` (`alias.column`) in an output, HAVING or correlation
# expression; view_table.py binds it to a column of the rows it reads
SlotValue = Kind("slot")  # the value of aggregate slot `name` (translate.py's slots: a map's sum, a MIN/MAX's value)


def variable(alias: str, column: str) -> str:
    return f"{alias}.{column}"


def relation_name(scan: Scan) -> str:
    return relation_name_of(scan.table)


def relation_name_of(table) -> str:
    return f"{table.schema}.{table.name}"


def refuse(what: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"the higher-order strategy does not translate {what} yet; use --strategy id")


def shown(e: exp.Expression) -> str:
    """An expression as a user would write it (identifiers quoted only where they must be)."""
    def plain(node: exp.Expression) -> exp.Expression:
        return exp.to_identifier(node.name) if isinstance(node, exp.Identifier) else node

    return printable(e).transform(plain).sql("postgres")


def same(a: exp.Expression, b: exp.Expression, nullable: bool) -> exp.Expression:
    """a equals b, NULL equal to NULL where they may be NULL (written so that an index serves both)."""
    if not nullable:
        return eq(a, b)
    both_null = exp.And(this=exp.Is(this=a.copy(), expression=exp.Null()), expression=exp.Is(this=b.copy(), expression=exp.Null()))
    return exp.Paren(this=exp.Or(this=eq(a, b), expression=exp.Paren(this=both_null)))


def extern_variable(name: str) -> exp.Column:
    """A variable inside an interpreted function's SQL text: "@"."name" (calculus/expr.py's
    Extern, whose text is SQL the database evaluates, with the variables bound by name)."""
    return exp.Column(this=exp.to_identifier(name, quoted=True), table=exp.to_identifier(VAR_TABLE, quoted=True))


class Scope:
    """Variables of the scans under one SPJ plan (and of the tables of its EXISTS / IN subqueries).
    `read`: the columns of each base table the whole view reads (algebra/columns_read.py)."""

    def __init__(self, plan, read: dict[tuple[str, str], set[str]]):
        self.read = read
        self.tables = {s.alias: s.table for s in scans(plan)}
        self.tables.update({a: t for sq in getattr(plan, "subqueries", []) for a, t in sq.tables()})
        self.types = {variable(a, c): t for a, tbl in self.tables.items() for c, t in tbl.columns}
        self.nullable = frozenset(variable(a, c) for a, tbl in self.tables.items()
                                  for c in tbl.column_names if not tbl.never_null(c))
        self.equal: set[frozenset[str]] = set()  # variables a join or WHERE conjunct equates

    def add(self, alias: str, table) -> None:
        """Another table's variables (a HAVING subquery's)."""
        self.tables[alias] = table
        self.types.update({variable(alias, c): t for c, t in table.columns})
        self.nullable |= {variable(alias, c) for c in table.column_names if not table.never_null(c)}

    def atom(self, alias: str, table) -> Rel:
        """A scan of `table` as `alias`: a relation over the columns the view reads. AGCA's R(x⃗) is
        the multiplicity of each tuple x⃗, so a relation over some columns is the table's rows
        counted by those columns; the others are summed out where they stand, and a change to
        them alone is no change to the view (nor is dropping one: capture/schema_changes.py)."""
        read = self.read[(table.schema, table.name)]
        return Rel(relation_name_of(table), tuple(variable(alias, c) for c in table.column_names if c in read))

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
                return extern_variable(v)
            return node

        sql = e.transform(put).sql("postgres")
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

    def sum_type(self, term) -> SumType | None:
        """SUM over a term that is a column of an exact type (integers, numeric), whose sums
        increments keep exactly; None for anything else (floating-point sums depend on the order of
        the additions)."""
        return declared_sum_type(self.types[term.name]) if isinstance(term, Var) else None

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
                return Variable(self.var(node))
            return node

        return e.transform(put)


