"""Subqueries without FROM that stand for one constant row, replaced by what they mean.

    EXISTS (SELECT 3)          ->  TRUE          (NOT EXISTS (SELECT 2)  ->  NOT TRUE)
    EXISTS (SELECT 1 WHERE c)  ->  (c) IS TRUE   (the row exists exactly when c holds)
    a = (SELECT 3)             ->  a = (3)       (any scalar use: arithmetic, comparisons, outputs)
    a IN (SELECT 1)            ->  a = (1)       (NOT IN -> NOT (a = (1)), NULLs as IN has them)

A SELECT without FROM, WHERE, GROUP BY, HAVING, LIMIT or OFFSET returns exactly one row whatever
the tables hold, so such a subquery reads nothing a maintained view must follow (DBToaster's test
queries write them, and generated SQL does). Its expressions may read the outer query's columns.
A bare string literal or NULL is inlined as text, the type PostgreSQL gives it in a subquery's
output (`d = (SELECT '2024-01-01')` compares date with text, an error, where `d = '2024-01-01'`
would compare dates). Left as they are: a row that may not exist (WHERE, LIMIT) other than under
EXISTS, an aggregate or a subquery inside it.

Every SELECT without FROM left then reads idivm's one-row table (one_row.py).
"""
from __future__ import annotations

from sqlglot import exp

_CLAUSES = ("from", "from_", "joins", "where", "group", "having", "qualify", "limit", "offset", "fetch", "order",
            "windows", "with", "with_", "laterals", "into")


def inline_constant_subqueries(tree: exp.Expression) -> exp.Expression:
    """Every EXISTS, IN and scalar use of a constant row in tree, replaced (a copy; tree unchanged)."""
    tree = tree.copy()
    for select in reversed(list(tree.find_all(exp.Select))):  # the innermost first: (SELECT (SELECT 1)) -> ((1))
        if select is tree or not _constant_row(select):
            continue
        holder = select.parent if isinstance(select.parent, exp.Subquery) else select
        user = holder.parent
        if isinstance(user, exp.Exists):
            user.replace(exp.true())
        elif isinstance(user, exp.In) and user.args.get("query") is holder and _one_value(select):
            user.replace(exp.EQ(this=user.this, expression=exp.Paren(this=_one_value(select))))
        elif isinstance(holder, exp.Subquery) and not isinstance(user, (exp.From, exp.Join, exp.In)) \
                and not holder.alias and _one_value(select):
            holder.replace(exp.Paren(this=_one_value(select)))
    for select in reversed(list(tree.find_all(exp.Select))):  # EXISTS (SELECT 1 WHERE c) -> (c) IS TRUE
        holder = select.parent if isinstance(select.parent, exp.Subquery) else select
        condition = _row_if(select) if select is not tree and isinstance(holder.parent, exp.Exists) else None
        if condition is not None:
            holder.parent.replace(exp.Is(this=exp.Paren(this=condition.copy()), expression=exp.true()))
    return tree


def _constant_row(select: exp.Select) -> bool:
    if any(select.args.get(k) for k in _CLAUSES):
        return False
    return not any(isinstance(n, (exp.AggFunc, exp.Select, exp.Star)) for e in select.expressions for n in e.walk())


def _row_if(select: exp.Select) -> exp.Expression | None:
    """c, where the SELECT is one constant row WHERE c (a row that exists exactly when c is true)."""
    where = select.args.get("where")
    if where is None or any(select.args.get(k) for k in _CLAUSES if k != "where"):
        return None
    if any(isinstance(n, (exp.AggFunc, exp.Star)) for e in select.expressions for n in e.walk()):
        return None
    return where.this


def _one_value(select: exp.Select) -> exp.Expression | None:
    """The row's one expression, unaliased; a bare string literal or NULL as text (see above)."""
    if len(select.expressions) != 1:
        return None
    value = select.expressions[0].unalias()
    bare = value.unnest() if isinstance(value, exp.Paren) else value
    if isinstance(bare, exp.Null) or (isinstance(bare, exp.Literal) and bare.is_string):
        return exp.cast(bare.copy(), "text")
    return value.copy()
