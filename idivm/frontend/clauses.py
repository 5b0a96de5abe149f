"""The clauses of a parsed SELECT as the frontend reads them: whether it has a FROM, its first FROM
item, and a condition (ON, WHERE) split into its top-level conjuncts. Shared by the rewrites,
checks.py, build_plan.py and outer_joins.py."""
from __future__ import annotations

from sqlglot import exp


def has_from(tree: exp.Select) -> bool:
    return bool(tree.args.get("from_") or tree.args.get("from"))


def from_item(tree: exp.Select) -> exp.Expression:
    """What the SELECT's FROM names first (a table or a subquery)."""
    return (tree.args.get("from_") or tree.args.get("from")).this


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    """The conjuncts of e, parenthesized ANDs split too: `(a AND b) AND c` is [a, b, c]."""
    if e is None:
        return []
    e = e.unnest()
    return [c for part in e.flatten() for c in conjuncts(part)] if isinstance(e, exp.And) else [e]


def where_conjuncts(tree: exp.Select) -> list[exp.Expression]:
    return conjuncts(tree.args["where"].this) if tree.args.get("where") else []


def has_aggregation(tree: exp.Select) -> bool:
    """Whether a SELECT groups or aggregates (GROUP BY, DISTINCT, HAVING, an aggregate in its outputs)."""
    return bool(tree.args.get("group") or tree.args.get("distinct") or tree.args.get("having")
                or any(e.find(exp.AggFunc) for e in tree.expressions))


def aggregating_subqueries(select: exp.Select) -> list[exp.Subquery]:
    """The subqueries that aggregate in this SELECT's own FROM and JOINs, and in those of the EXISTS /
    IN subqueries of its WHERE: the parts of a view (algebra/plan.PartScan), each a statement of its own."""
    return [sq for sq in select.find_all(exp.Subquery)
            if isinstance(sq.parent, (exp.From, exp.Join))
            and (sq.parent.parent is select or in_semijoin(sq.parent.parent, select))
            and isinstance(sq.this, exp.Select) and has_aggregation(sq.this)]


def in_semijoin(select: exp.Expression, tree: exp.Select) -> bool:
    """Whether a SELECT is the subquery of an EXISTS / IN of tree's own WHERE (not of a subquery's)."""
    holder = select.parent
    node = holder if isinstance(holder, exp.Exists) else holder.parent if isinstance(holder, exp.Subquery) else None
    return (isinstance(node, exp.Exists) or (isinstance(node, exp.In) and node.args.get("query") is holder)) \
        and node.parent_select is tree and tree.args.get("where") is not None \
        and node.find_ancestor(exp.Where) is tree.args["where"]


def inline_columns(e: exp.Expression, alias: str, by_name: dict[str, exp.Expression]) -> exp.Expression:
    """e (a copy) with each column of the subquery `alias` (qualified by it, or not qualified)
    replaced by the subquery's expression of that name (`by_name`), parenthesized where precedence
    could change; a name the subquery has not (an output alias of the query itself) is left."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) and node.table in ("", alias) \
                and node.name in by_name:
            value = by_name[node.name].copy()
            return value if isinstance(value, (exp.Column, exp.Func, exp.Literal, exp.Paren)) else exp.Paren(this=value)
        return node

    return e.transform(fn)


def correlation(inner: exp.Select) -> tuple[list[exp.Expression], list[tuple[exp.Expression, exp.Expression]]] | None:
    """A subquery's WHERE split into its local conjuncts and its correlated equalities (inner side,
    outer side), copies; None where a conjunct reads the outer query otherwise (an inequality, an
    expression over both sides), or a join's ON reads it. An unqualified column is the inner
    query's, as PostgreSQL resolves it when the inner tables have it (else qualifying it fails later)."""
    own = _own_aliases(inner)

    def reads(e: exp.Expression) -> tuple[bool, bool]:
        """(reads an inner column, reads an outer one)."""
        tables = [c.table for c in e.find_all(exp.Column)]
        return any(t in own or not t for t in tables), any(t and t not in own for t in tables)

    def inner_only(e: exp.Expression) -> bool:
        return not e.find(exp.Subquery, exp.Exists) and not reads(e)[1]

    if not all(inner_only(j.args["on"]) for j in inner.args.get("joins") or [] if j.args.get("on") is not None):
        return None
    where = inner.args.get("where")
    local, keys = [], []
    for c in conjuncts(where.this if where is not None else None):
        if inner_only(c):
            local.append(c.copy())
            continue
        if not isinstance(c, exp.EQ) or c.find(exp.Subquery, exp.Exists):
            return None
        sides = [(reads(s), s) for s in (c.this, c.expression)]
        inner_side = [s for (i, o), s in sides if i and not o]
        outer_side = [s for (i, o), s in sides if o and not i]
        if len(inner_side) != 1 or len(outer_side) != 1 or outer_side[0].find(exp.AggFunc):
            return None
        keys.append((inner_side[0].copy(), outer_side[0].copy()))
    return local, keys


def reads_outer(inner: exp.Select, e: exp.Expression) -> bool:
    """Whether e, an expression of the subquery inner, reads a column of an outer query."""
    own = _own_aliases(inner)
    return any(c.table and c.table not in own for c in e.find_all(exp.Column))


def _own_aliases(inner: exp.Select) -> set[str]:
    """The aliases a SELECT's FROM and JOINs define (what its own columns are qualified by)."""
    return {s.alias_or_name for s in [from_item(inner)] + [j.this for j in inner.args.get("joins") or []]}


def semijoin_query(node: exp.Exists | exp.In) -> exp.Expression | None:
    """The query of an EXISTS, or of an IN (subquery); None for an IN over a list."""
    query = node.this if isinstance(node, exp.Exists) else node.args.get("query")
    return query.this if isinstance(query, exp.Subquery) else query


def reads_outside(select: exp.Select) -> bool:
    """Whether a subquery names a column qualified by a table alias it does not define itself (an
    outer query's: a correlated or lateral reference)."""
    own = {t.alias_or_name for t in select.find_all(exp.Table)} | {
        s.alias_or_name for s in select.find_all(exp.Subquery) if s.alias}
    return any(c.table and c.table not in own for c in select.find_all(exp.Column))
