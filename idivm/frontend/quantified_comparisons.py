"""Comparisons with ANY / SOME / ALL of a subquery in WHERE, reduced to a semijoin or an antijoin.

    x op ANY (SELECT c FROM ... WHERE w)  ->  EXISTS (SELECT 1 FROM (SELECT c AS q FROM ... WHERE w) AS r
                                                     WHERE x op r.q)
    x op ALL (SELECT c FROM ... WHERE w)  ->  NOT EXISTS (SELECT 1 FROM (SELECT c AS q ...) AS r
                                                         WHERE (x op r.q) IS NOT TRUE)

    x op ANY / ALL (SELECT agg(...) FROM ... [WHERE ...])  ->  x op (SELECT agg(...) FROM ...)

(SOME is ANY.) An aggregate without GROUP BY or HAVING is exactly one row, of which ANY and ALL
are the comparison itself, anywhere: a scalar subquery, which the higher-order strategy keeps
(a nested aggregate). Otherwise SQL gives `x op ANY (S)` three values: true if a comparison holds, false if every
one is false (or S is empty), else NULL; the EXISTS only two, false for that NULL. A WHERE keeps
a row only when its condition is true, so the two agree wherever the comparison stands under
AND and OR alone up to a WHERE; under NOT, in CASE or in an output the NULL would count, and the
comparison is left as it is (and refused by checks.py). ALL is true iff no row makes `x op c`
false or NULL: the NOT EXISTS of a row where it is not true.

The subquery becomes a derived table whose one column gets idivm's own name, as in setops.py,
so x's unqualified columns cannot be captured by the subquery's tables; sqlglot merges it back
into the EXISTS, which then follows the semijoin rules (rules/semijoin.py).
"""
from __future__ import annotations

from sqlglot import exp

from .clauses import has_from

ALIAS = "__idivm_q"
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_NOT_ALLOWED = ("group", "having", "limit", "offset", "fetch", "order", "qualify", "windows")


def reduce_quantified_comparisons(tree: exp.Expression) -> exp.Expression:
    """Every ANY / SOME / ALL comparison with one aggregate, and every other in a positive position of a
    WHERE, rewritten (a copy)."""
    tree = tree.copy()
    for cmp in list(tree.find_all(*_COMPARISONS)):
        quantifier = cmp.expression
        if not isinstance(quantifier, (exp.Any, exp.All)) or not isinstance(quantifier.this, (exp.Query, exp.Subquery)):
            continue
        query = quantifier.this.unnest() if isinstance(quantifier.this, exp.Subquery) else quantifier.this
        if _one_row(query):
            cmp.set("expression", exp.Subquery(this=query.copy()))
            continue
        if not _in_where(cmp) or not _simple(query):
            continue
        inner = query.copy()
        inner.set("distinct", None)
        inner.set("expressions", [exp.alias_(inner.expressions[0].unalias(), ALIAS, quoted=True)])
        compared = cmp.__class__(this=cmp.this.copy(), expression=exp.column(ALIAS, ALIAS, quoted=True))
        sub = exp.select("1").from_(exp.Subquery(this=inner, alias=exp.TableAlias(
            this=exp.to_identifier(ALIAS, quoted=True))))
        if isinstance(quantifier, exp.Any):
            cmp.replace(exp.Exists(this=sub.where(compared)))
        else:
            not_true = exp.Not(this=exp.Is(this=exp.Paren(this=compared), expression=exp.true()))
            cmp.replace(exp.Not(this=exp.Exists(this=sub.where(not_true))))
    return tree


def _one_row(query: exp.Expression) -> bool:
    """An aggregate over a FROM without GROUP BY, HAVING or limits: exactly one row, one column."""
    return _one_column(query) and query.expressions[0].find(exp.AggFunc) is not None


def _in_where(node: exp.Expression) -> bool:
    """Whether node stands under AND, OR and parentheses alone up to a WHERE."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Or, exp.Paren)):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _simple(query: exp.Expression) -> bool:
    """One output that is no aggregate, over a FROM, without grouping or limits: what an EXISTS keeps."""
    return _one_column(query) and not query.expressions[0].find(exp.AggFunc, exp.Star)


def _one_column(query: exp.Expression) -> bool:
    """A SELECT of one output over a FROM, without grouping, HAVING, ordering or limits."""
    return (isinstance(query, exp.Select) and len(query.expressions) == 1 and has_from(query)
            and not any(query.args.get(k) for k in _NOT_ALLOWED))
