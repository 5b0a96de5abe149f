"""A query over one aggregating subquery in FROM, folded into that subquery.

    SELECT o(q.x, q.total) FROM (SELECT g AS x, sum(v) AS total FROM ... GROUP BY g) AS q WHERE c(q.total)
 -> SELECT o(g, sum(v)) FROM ... GROUP BY g HAVING c(sum(v))

The outer query only filters and projects the groups (one output row per group),
so it is the grouped query with the filter as HAVING and the outer expressions
written over the inner ones; it is then maintained like any grouped view. A
subquery with DISTINCT becomes GROUP BY on its outputs first (idIVM Section 4's remark on pass 1,
ID inference: duplicate elimination δ over the outputs is the grouping γ by them), so that the outer projection
may drop columns. WITH has been inlined
before, so this covers aggregating CTEs too.

What does not reduce this way (an aggregating subquery joined with other tables, aggregated again,
under DISTINCT or filtered by a subquery) is left for build_plan.py, which reads it as a part of
the view (algebra/plan.PartScan), as is one in the FROM of such a part (a part of the part) or of
an EXISTS / IN subquery of the query's WHERE; one inside a scalar subquery is refused.
"""
from __future__ import annotations

from sqlglot import exp

from .clauses import has_aggregation, in_semijoin, inline_columns, reads_outside
from .checks import refuse
from ..errors import UnsupportedQuery


def _in_from(select: exp.Expression) -> bool:
    """Whether a SELECT is itself a subquery in a FROM or JOIN (else a scalar, EXISTS or IN one)."""
    holder = select.parent
    return isinstance(holder, exp.Subquery) and isinstance(holder.parent, (exp.From, exp.Join))


def fold_aggregate_subquery(tree: exp.Expression) -> exp.Expression:
    """The fold, in every subquery in FROM first (innermost first), then in the query itself: a
    subquery that filters and projects an aggregating one is one aggregating subquery, which the
    query reads as any other (a copy; tree unchanged)."""
    if not isinstance(tree, exp.Select):
        return tree
    if _plain_from_subqueries(tree):
        tree = tree.copy()
        for sq in reversed(_plain_from_subqueries(tree)):
            sq.set("this", _fold(sq.this))
    return _fold(tree)


def _plain_from_subqueries(tree: exp.Select) -> list[exp.Subquery]:
    """The subqueries in a FROM or JOIN anywhere in tree that do not aggregate themselves."""
    return [sq for sq in tree.find_all(exp.Subquery) if isinstance(sq.parent, (exp.From, exp.Join))
            and isinstance(sq.this, exp.Select) and not has_aggregation(sq.this)]


def _fold(tree: exp.Select) -> exp.Expression:
    src = tree.args.get("from_") or tree.args.get("from")
    subs = [s for s in tree.find_all(exp.Subquery)
            if isinstance(s.parent, (exp.From, exp.Join)) and isinstance(s.this, exp.Select) and has_aggregation(s.this)]
    if not subs:
        return tree
    nested = [s for s in subs if s.parent.parent is not tree and not _in_from(s.parent.parent)
              and not in_semijoin(s.parent.parent, tree)]
    if nested:  # in the FROM of a scalar subquery, or of an EXISTS / IN one inside a subquery (one in the
        # FROM of a part is a part of it, one in the FROM of the query's own EXISTS / IN a part of the view)
        raise refuse("a subquery that aggregates in the FROM of a scalar subquery, or of an EXISTS / IN "
                     "subquery inside another subquery")
    if any(in_semijoin(s.parent.parent, tree) and reads_outside(s.this) for s in subs):
        raise refuse("a subquery that aggregates in the FROM of an EXISTS / IN subquery and reads the outer "
                     "query's columns (a lateral reference)")
    subs = [s for s in subs if s.parent.parent is tree]
    if not subs:
        return tree
    sub = subs[0]
    where = tree.args.get("where")
    if (sub.parent is not src or tree.args.get("joins") or len(subs) > 1 or tree.args.get("distinct") is not None
            or has_aggregation(tree) or (where is not None and where.find(exp.Exists, exp.Subquery))):
        return tree  # read as a part of the view, like a table (build_plan.py, algebra/plan.PartScan)
    for clause in ("order", "limit", "offset"):
        if tree.args.get(clause):
            raise refuse(clause.upper() if clause != "order" else "ORDER BY")

    inner = sub.this.copy()
    if inner.args.get("distinct") is not None and not inner.args.get("group") and not inner.args["distinct"].args.get("on"):
        inner.set("distinct", None)
        inner.set("group", exp.Group(expressions=[e.unalias().copy() for e in inner.expressions]))
    by_name: dict[str, exp.Expression] = {}
    for e in inner.expressions:
        if not isinstance(e, (exp.Alias, exp.Column)):
            raise UnsupportedQuery(f"output expression {e.sql('postgres')} of the subquery in FROM needs a name")
        by_name[e.alias_or_name] = e.unalias()
    alias = sub.alias_or_name

    def substitute(e: exp.Expression) -> exp.Expression:
        return inline_columns(e, alias, by_name)

    outputs: list[exp.Expression] = []
    for e in tree.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            outputs += [exp.alias_(v.copy(), n, quoted=True) for n, v in by_name.items()]
        elif isinstance(e, exp.Alias):
            outputs.append(exp.alias_(substitute(e.this), e.alias, quoted=True))
        elif isinstance(e, exp.Column):
            outputs.append(exp.alias_(substitute(e), e.name, quoted=True))
        else:
            outputs.append(substitute(e))  # unnamed: refused with "needs a name" later
    inner.set("expressions", outputs)
    if where is not None:
        cond = substitute(where.this)
        having = inner.args.get("having")
        inner.set("having", exp.Having(this=exp.and_(having.this, cond) if having is not None else cond))
    return inner
