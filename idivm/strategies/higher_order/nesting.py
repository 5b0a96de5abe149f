"""EXISTS / IN subqueries under the higher-order strategy: nested aggregates, materialized by the
rule for nested aggregates and decorrelation (VLDBJ'14 Section 5.1, Figure 1 rule 4):

    M(Sum[A](Q_O * (x := Q_N) * f(x, B)))  =>  Sum[A](M(Sum[A,B](Q_O)) * (x := M(Q_N)) * f(x, B))

A subquery is a count (VLDBJ Section 9, "Queries with EXISTS or IN clauses"): EXISTS (SELECT ...
FROM S WHERE W) is x > 0 with x := Sum[](S * W). `a IN (SELECT c ...)` needs three counts to
keep SQL's three-valued IN exactly: x_match (W and c = a), x_all (W) and x_null (W and c IS NULL):
TRUE if x_match > 0, else FALSE if x_all = 0, else NULL if a or some c is NULL, else FALSE.
NOT, OR and the rest of the conjunct are SQL's own, evaluated over those values.

Decorrelation: W's conjuncts over S's columns alone stay inside Q_N; the correlated ones (that
also read the outer query's columns, B) are applied when x is looked up, so Q_N is materialized
as M_N = Sum[K](S * inner conjuncts), keyed by the S columns K the correlated conjuncts read
(equality correlation: x is one lookup of M_N; an inequality: a sum over a range of M_N; none:
M_N has one value). The outer maps are keyed by the view's group variables and B.

The delta of x := Q_N is not simpler than Q (Section 5.1). Each outer row's contribution
C(G', B) = O(G', B) * [f(x(B), B)] is stored, and V(G') = Sum[B](C), the map the view table reads
(Contribution); after the maps are updated, C's differences are added to C and V. Where they are
computed is the re-evaluate-or-increment decision, made per nested aggregate (`restricted`):

- increment, when the subquery is correlated on an equality: a change of M_N's key k can only
  change the outer rows that correlate with k (Section 5.3's range restriction, delta.py), so C is
  recomputed at those keys and at the keys of O's increments, by index lookups;
- re-evaluate, when it is uncorrelated or correlated only by inequalities: a change can move every
  outer row, so C is recomputed whole from O and the nested maps (not from base tables) and
  compared with the stored C; only groups whose contributions changed are touched.

A batch that changes no re-evaluated subquery's map takes the increment path (the choice is made
when the program runs, by whether those maps' increments are empty).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ...algebra.placeholders import Kind
from ...algebra.plan import SubqueryPredicate
from ...calculus.expr import Expr, Sum, mul
from ...program import relations as Rl
from ...program.trees import alias, aliased, col, conjuncts, exists, select, subquery, union_all
from .scope import Scope, Variable, refuse, same, shown, variable
from .to_steps import VALUE



NestedValue = Kind("nested")  # the value of nested count `name` (a `#`-variable of this module's Nested)
InnerKey = Kind("inner")  # key `name` of a nested count's map: a column of the subquery that a
# correlated conjunct compares with the outer row


@dataclass
class Nested:
    """A nested count x: `query` its map's definition (keyed by `keys`, S's variables) and the
    `correlation` conjuncts (over Variable placeholders for outer variables and InnerKey for the keys)
    that select the map rows x adds up."""

    var: str
    query: Sum
    keys: tuple[str, ...]
    correlation: list[exp.Expression]


@dataclass
class Nesting:
    nested: list[Nested] = field(default_factory=list)
    conditions: list[exp.Expression] = field(default_factory=list)  # over Variable and NestedValue placeholders
    outer: list[str] = field(default_factory=list)  # B: outer variables the conditions and lookups read

    def __bool__(self) -> bool:
        return bool(self.conditions)


def _sq_alias(node: exp.Expression) -> str | None:
    inner = node.this if isinstance(node, (exp.Exists, exp.Subquery)) else node.args["query"].this
    src = (inner.args.get("from_") or inner.args.get("from")).this
    return src.alias_or_name


def subquery_nodes(e: exp.Expression) -> list[exp.Expression]:
    """EXISTS, IN (subquery) and scalar subqueries in e."""
    ins = [n for n in e.find_all(exp.In) if n.args.get("query")]
    in_queries = {id(n.args["query"]) for n in ins}
    scalars = [n for n in e.find_all(exp.Subquery) if id(n) not in in_queries]
    return [n for n in e.find_all(exp.Exists)] + ins + scalars


class NestingBuilder:
    """Collects the conjuncts with subqueries of one SPJ plan (Scope.condition hands them over)."""

    def __init__(self, scope: Scope, subqueries: list[SubqueryPredicate], outer_var=None, prefix: str = "x"):
        """outer_var(column) -> the variable an outer column is (default: the scan's variable; a
        HAVING subquery's outer columns are group keys)."""
        self.scope, self.by_alias = scope, {sq.alias: sq for sq in subqueries}
        self.outer_var, self.prefix = outer_var or scope.var, prefix
        self.out = Nesting()

    def _outer(self, e: exp.Expression, inner_alias: str | None, inner_as: Kind = Variable) -> exp.Expression:
        """e with outer columns as Variable placeholders (recorded in B) and the subquery's as inner_as."""
        def put(node: exp.Expression) -> exp.Expression:
            if any(kind.marks(node) for kind in (Variable, NestedValue, InnerKey)):
                return node
            if isinstance(node, exp.Column) and node.table == inner_alias:
                return inner_as(variable(inner_alias, node.name))
            if isinstance(node, exp.Column):
                v = self.outer_var(node)
                if v not in self.out.outer:
                    self.out.outer.append(v)
                return Variable(v)
            return node

        return e.transform(put)

    def _count(self, sq: SubqueryPredicate, inner: list[Expr], correlated: list[exp.Expression]) -> exp.Column:
        """A nested count (or, with a value among the inner factors, sum) over S with inner factors
        and correlated conjuncts; its placeholder."""
        atom = self.scope.atom(sq.alias, sq.table)
        keys = tuple(dict.fromkeys(c.name for e in correlated for c in InnerKey.find_all(e)))
        var = f"#{self.prefix}{len(self.out.nested)}"
        self.out.nested.append(Nested(var, Sum(keys, mul(atom, *inner)), keys, correlated))
        return NestedValue(var)

    def condition(self, conjunct: exp.Expression) -> None:
        """A WHERE conjunct with EXISTS / IN subqueries."""
        replaced = exp.Paren(this=conjunct.copy())  # a parent, so that even the whole conjunct can be replaced
        for node in subquery_nodes(replaced):
            alias = _sq_alias(node)
            sq = self.by_alias.get(alias)
            if sq is None:
                raise refuse(f"the subquery in {shown(conjunct)}")
            if sq.joined:
                raise refuse("an EXISTS / IN subquery over a join")
            inner, correlated = self._split(sq)
            if isinstance(node, exp.Exists):
                x = self._count(sq, inner, correlated)
                node.replace(exp.GT(this=x, expression=exp.Literal.number(0)))
                continue
            if isinstance(node, exp.Subquery):
                node.replace(exp.Paren(this=self._scalar(sq, inner, correlated)))
                continue
            lhs = self._outer(node.this, None)
            col = sq.in_col
            match = exp.EQ(this=self._outer(col, sq.alias, InnerKey), expression=lhs)
            x_match = self._count(sq, inner, correlated + [match])
            x_all = self._count(sq, inner, correlated)
            is_null = self.scope.condition(exp.Is(this=col.copy(), expression=exp.Null()))
            x_null = self._count(sq, inner + [is_null], correlated)
            zero = exp.Literal.number(0)
            node.replace(exp.Paren(this=exp.Case(ifs=[
                exp.If(this=exp.GT(this=x_match, expression=zero), true=exp.true()),
                exp.If(this=exp.EQ(this=x_all, expression=zero.copy()), true=exp.false()),
                exp.If(this=exp.or_(exp.Is(this=lhs.copy(), expression=exp.Null()),
                                    exp.GT(this=x_null, expression=zero.copy())), true=exp.Null()),
            ], default=exp.false())))
        self.out.conditions.append(self._outer(replaced, "\0"))

    def _split(self, sq: SubqueryPredicate) -> tuple[list[Expr], list[exp.Expression]]:
        """The subquery's conjuncts over its own table (AGCA factors) and those that also read outer
        columns (kept as SQL over InnerKey and Variable placeholders)."""
        inner: list[Expr] = []
        correlated: list[exp.Expression] = []
        for c in conjuncts(sq.where):
            if all(col.table == sq.alias for col in c.find_all(exp.Column)):
                inner.append(self.scope.condition(c))
            else:
                correlated.append(self._outer(c, sq.alias, InnerKey))
        return inner, correlated

    def scalar_value(self, sq: SubqueryPredicate) -> exp.Expression:
        """A scalar subquery's value over NestedValue placeholders (a HAVING subquery's, for the view table)."""
        return self._scalar(sq, *self._split(sq))

    def _scalar(self, sq: SubqueryPredicate, inner: list[Expr], correlated: list[exp.Expression]) -> exp.Expression:
        """A scalar subquery's aggregate over nested counts and sums, with SQL's values for no rows:
        COUNT 0, SUM and AVG NULL (from the count of the argument's non-NULL values)."""
        def agg(node: exp.Expression) -> exp.Expression:
            if not isinstance(node, exp.AggFunc):
                return node
            if not isinstance(node, (exp.Count, exp.Sum, exp.Avg)) or isinstance(node.this, exp.Distinct):
                raise refuse(f"the aggregate {shown(node)} in a scalar subquery")
            if isinstance(node, exp.Count) and (node.this is None or isinstance(node.this, exp.Star)):
                return exp.cast(self._count(sq, inner, correlated), "bigint")  # as COUNT's own type divides
            arg = node.this
            not_null = self.scope.not_null(arg)
            counted = self._count(sq, inner + ([not_null] if not_null is not None else []), correlated)
            if isinstance(node, exp.Count):
                return exp.cast(counted, "bigint")
            term = self.scope.term(arg)
            typed = self.scope.sum_type(term)
            if typed is None:
                raise refuse(f"{node.key.upper()}({shown(arg)}) in a scalar subquery over anything but an "
                             "integer or numeric column")
            summed = self._count(sq, inner + [term], correlated)
            zero = exp.Literal.number(0)
            if isinstance(node, exp.Sum):
                return exp.Case(ifs=[exp.If(this=exp.GT(this=counted, expression=zero), true=exp.cast(summed, typed.type))])
            return exp.Div(this=exp.cast(summed, "numeric"), expression=exp.Nullif(this=counted.copy(), expression=zero))

        e = sq.scalar.copy()
        if isinstance(e, exp.AggFunc):
            return agg(e)
        return e.transform(agg)



def _over(e: exp.Expression, outer: str, values: dict[str, exp.Expression], inner: str | None = None) -> exp.Expression:
    """e with Variable placeholders read from the row `outer`, NestedValue from `values`, InnerKey from `inner`."""
    def put(node: exp.Expression) -> exp.Expression:
        if Variable.marks(node):
            return col(outer, node.name)
        if NestedValue.marks(node):
            return values[node.name].copy()
        if InnerKey.marks(node):
            return col(inner, node.name)
        return node

    return e.transform(put)


def nested_value(n: Nested, table: exp.Table, outer: str) -> exp.Expression:
    """x for the outer row `outer`: the sum of the nested map's rows its correlation selects."""
    where = [_over(c, outer, {}, "n") for c in n.correlation]
    total = exp.Coalesce(this=exp.Sum(this=col("n", VALUE)), expressions=[exp.Literal.number(0)])
    return exp.Subquery(this=select([total], [aliased(table, "n")], where or None))


@dataclass
class Contribution:
    """How one view-level map L is kept under nesting (rule 4, maintained rather than re-read):
    `outer` is L's outer map O, keyed by `keys` (the group G', then the outer variables B);
    C(keys) = O(keys) * [conditions] is stored (`contributions`), and so is V(G') = Sum[B](C)
    (`view`), which the view table reads like any map. After the maps are updated, C is
    re-evaluated only at the keys a batch can have changed (those of O's increments, and those of
    O's rows that correlate with a changed key of a nested map) and the differences are added to
    C and to V: the work is proportional to the changes, not to the groups' sizes."""

    name: str
    keys: tuple[str, ...]
    group: tuple[str, ...]  # G'
    outer: exp.Table
    contributions: exp.Table
    view: exp.Table
    nullable: frozenset[str]  # keys that may be NULL


def contribution_value(nesting: Nesting, c: Contribution, nested_tables: list[exp.Table], row: str) -> exp.Expression:
    """C at the keys of `row`: O's value there where the conditions hold, else 0."""
    values = {n.var: nested_value(n, t, "o") for n, t in zip(nesting.nested, nested_tables)}
    where = [same(col("o", k), col(row, k), k in c.nullable) for k in c.keys] + [_over(e, "o", values) for e in nesting.conditions]
    found = exp.Subquery(this=select([col("o", VALUE)], [aliased(c.outer, "o")], where))
    return exp.Coalesce(this=found, expressions=[exp.Literal.number(0)])


def contribution_fill(nesting: Nesting, c: Contribution, nested_tables: list[exp.Table]) -> exp.Query:
    """C's initial rows: O's rows where the conditions hold."""
    values = {n.var: nested_value(n, t, "o") for n, t in zip(nesting.nested, nested_tables)}
    return select([alias(col("o", k), k) for k in c.keys] + [alias(col("o", VALUE), VALUE)],
                  [aliased(c.outer, "o")], [_over(e, "o", values) for e in nesting.conditions] or None)


def view_fill(c: Contribution) -> exp.Query:
    """V's initial rows: C summed over the outer variables."""
    total = exp.Sum(this=col("c", VALUE))
    q = select([alias(col("c", g), g) for g in c.group] + [alias(total, VALUE)], [aliased(c.contributions, "c")])
    if c.group:
        q = q.group_by(*[col("c", g) for g in c.group], copy=False)
    return q.having(exp.NEQ(this=total.copy(), expression=exp.Literal.number(0)), copy=False)


def correlated_groups(n: Nested, group: tuple[str, ...], counts: exp.Table, scratch: str) -> exp.Query:
    """The groups (rows of the COUNT map `counts`) that correlate with a changed key of a HAVING
    subquery's map (its increment, in `scratch`): their HAVING may have changed."""
    hit = select([exp.Literal.number(1)], [Rl.scratch(scratch, "d")], [_over(e, "c", {}, "d") for e in n.correlation] or None)
    return select([alias(col("c", v), v) for v in group], [aliased(counts, "c")], [exists(hit)])


def restricted(n: Nested) -> bool:
    """Whether a change of n's map can only change the outer rows that an equality correlates with
    it (then its delta is incremented at those rows; else the contributions are re-evaluated)."""
    def reads(e: exp.Expression, kind: Kind) -> bool:
        return next(kind.find_all(e), None) is not None

    return any(isinstance(c, exp.EQ) and reads(c, InnerKey) and reads(c, Variable) for c in n.correlation)


def decision(n: Nested, map_name: str) -> str:
    """The re-evaluate-or-increment decision for n, as explain prints it."""
    if restricted(n):
        return (f"{n.var}: increment: correlated on an equality, so a change of {map_name} changes only the outer rows "
                "with its keys (range restriction)")
    return (f"{n.var}: re-evaluate: {'correlated only by inequalities' if n.correlation else 'uncorrelated'}, so a "
            f"change of {map_name} can change every outer row; the contributions are recomputed from the maps and "
            "compared with the stored ones (VLDBJ'14 Section 5.1)")


def reevaluated(nesting: Nesting, c: Contribution, nested_tables: list[exp.Table]) -> exp.Select:
    """C's nonzero differences everywhere: its rows recomputed from O and the nested maps, minus the
    stored rows (grouping pairs them null-safely)."""
    new = select([col("n", k) for k in c.keys] + [col("n", VALUE)], [subquery(contribution_fill(nesting, c, nested_tables), "n")])
    old = select([col("w", k) for k in c.keys] + [exp.Neg(this=col("w", VALUE))], [aliased(c.contributions, "w")])
    total = exp.Sum(this=col("d", VALUE))
    q = select([col("d", k) for k in c.keys] + [alias(total, VALUE)], [subquery(union_all([new, old]), "d")])
    if c.keys:
        q = q.group_by(*[col("d", k) for k in c.keys], copy=False)
    return q.having(exp.NEQ(this=total.copy(), expression=exp.Literal.number(0)), copy=False)


def changed_keys(nesting: Nesting, c: Contribution, increments: list[str], nested_changes: list[tuple[int, str]]) -> exp.Query:
    """The keys of C a batch can have changed: those in O's increments (scratch relations), and
    those of O's rows that correlate with a changed key of nested map i (its increment's scratch)."""
    # A keyless C (a global aggregate) has one key, the empty one: its parts select a constant, as a
    # SELECT DISTINCT needs a column and the empty key must come out once however many parts hold it.
    def keys(qualifier: str | None) -> list[exp.Expression]:
        return [alias(col(qualifier, k), k) for k in c.keys] or [alias(exp.Literal.number(1), "__changed")]
    parts: list[exp.Query] = [select(keys(None), [Rl.scratch(s)]) for s in increments]
    for i, scratch in nested_changes:
        n = nesting.nested[i]
        hit = select([exp.Literal.number(1)], [Rl.scratch(scratch, "d")], [_over(e, "o", {}, "d") for e in n.correlation] or None)
        parts.append(select(keys("o"), [aliased(c.outer, "o")], [exists(hit)]))
    return union_all(parts, distinct=True)
