"""EXCEPT and INTERSECT, reduced to an antijoin and a semijoin.

    L EXCEPT R     ->  SELECT DISTINCT <L's outputs> FROM ... WHERE <L's WHERE>
                       AND NOT EXISTS (SELECT 1 FROM (R) AS r WHERE r.c1 IS NOT DISTINCT FROM o1 AND ...)
    L INTERSECT R  ->  the same with EXISTS

Set difference and intersection compare rows with NULLs equal, hence IS NOT
DISTINCT FROM. R is wrapped as a derived table whose columns get idivm's own
names, so nothing in L can be captured by R's scope; sqlglot merges it back
into the EXISTS, which then follows the semijoin rules (rules/semijoin.py).
EXCEPT ALL and INTERSECT ALL count duplicates and do not reduce to
(anti)semijoins: they are refused.
"""
from __future__ import annotations

from sqlglot import exp

from .checks import refuse

RIGHT_ALIAS = "__idivm_r"


def reduce_set_difference(tree: exp.Expression) -> exp.Expression:
    """Rewrite every EXCEPT / INTERSECT in tree (top level or a UNION branch) into a SELECT."""
    if isinstance(tree, (exp.Except, exp.Intersect)):
        return _reduce(tree)
    if isinstance(tree, exp.Union):
        tree = tree.copy()
        for side in ("this", "expression"):
            part = tree.args[side]
            inner = part.unnest() if isinstance(part, exp.Subquery) else part
            if isinstance(inner, (exp.Union, exp.Except, exp.Intersect)):
                tree.set(side, reduce_set_difference(inner))
    return tree


def _reduce(node: exp.Except | exp.Intersect) -> exp.Select:
    name = node.key.upper()
    if not node.args.get("distinct", True):
        raise refuse(f"{name} ALL (it counts duplicates and does not reduce to a semijoin; {name} does)")
    for clause in ("order", "limit", "offset"):
        if node.args.get(clause):
            raise refuse(f"{clause.upper()} on a set operation")
    left, right = (s.unnest() if isinstance(s, exp.Subquery) else s for s in (node.left, node.right))
    if isinstance(left, (exp.Except, exp.Intersect)):
        left = _reduce(left)
    if not isinstance(left, exp.Select):
        raise refuse(f"{name} whose left side is a {left.key.upper()}")
    if not isinstance(right, exp.Select):
        raise refuse(f"{name} whose right side is a {right.key.upper()} (set operations)")
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in left.expressions):
        raise refuse(f"* in the left side of {name} (list the columns)")
    src = right.args.get("from_") or right.args.get("from")
    if right.args.get("joins") or src is None or not isinstance(src.this, exp.Table):
        raise refuse(f"{name} whose right side is not a SELECT over one table (it becomes a "
                     f"{'NOT ' if isinstance(node, exp.Except) else ''}EXISTS subquery over that table)")
    if len(left.expressions) != len(right.expressions):
        raise refuse(f"{name} of sides with different numbers of columns "
                     f"({len(left.expressions)} and {len(right.expressions)})")
    for clause, what in (("group", "GROUP BY"), ("having", "HAVING")):
        if left.args.get(clause) or right.args.get(clause):
            raise refuse(f"{what} in a side of {name}")
    if any(e.find(exp.AggFunc) for e in left.expressions + right.expressions):
        raise refuse(f"aggregates in a side of {name}")
    inner = right.copy()
    inner.set("distinct", None)
    inner.set("expressions", [exp.alias_(e.unalias() if isinstance(e, exp.Alias) else e, f"__idivm_c{i}", quoted=True)
                              for i, e in enumerate(inner.expressions)])
    match = [exp.NullSafeEQ(this=exp.column(f"__idivm_c{i}", RIGHT_ALIAS, quoted=True),
                            expression=(e.this if isinstance(e, exp.Alias) else e).copy())
             for i, e in enumerate(left.expressions)]
    sub = exp.select("1").from_(exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier(RIGHT_ALIAS, quoted=True)))).where(exp.and_(*match))
    cond = exp.Exists(this=sub)
    if isinstance(node, exp.Except):
        cond = exp.Not(this=cond)
    out = left.copy()
    out.set("distinct", exp.Distinct())
    return out.where(cond, copy=False)
