"""Simplification of AGCA expressions (VLDBJ'14 Section 5.3), each rewrite a small pure function
from expression to expression, applied bottom-up in the order of RULES until nothing changes (the
shape of sqlglot's optimizer and of the id strategy's minimization).

Built so far: partial evaluation and the algebraic identities (constants merged in sums and
products, comparisons of constants decided, negation distributed over sums, Q + 0 = Q, Q * 1 = Q, Q * 0 = 0, Q − Q = 0, terms
that differ only by a constant factor grouped), and nested sums collapsed. Unification, range
restriction extraction and factorization come with the compiler that needs them.

Every rewrite keeps the expression's meaning on every database and context (checked against the
reference evaluator by tests/test_calculus.py).
"""
from __future__ import annotations

from fractions import Fraction

from .evaluate import _compare
from .expr import Add, Assign, Cmp, Const, Expr, Mul, Neg, Sum, add, mul, neg, sum_


def _rebuild(q: Expr, simplify_child) -> Expr:
    """q with its children simplified (through the smart constructors)."""
    if isinstance(q, Add):
        return add(*(simplify_child(t) for t in q.terms))
    if isinstance(q, Mul):
        return mul(*(simplify_child(f) for f in q.factors))
    if isinstance(q, Neg):
        return neg(simplify_child(q.q))
    if isinstance(q, Sum):
        return sum_(q.group, simplify_child(q.q))
    if isinstance(q, Assign):
        return Assign(q.var, simplify_child(q.q))
    return q


def decide_constant_comparisons(q: Expr) -> Expr:
    """(c1 θ c2) -> 1 or 0."""
    if isinstance(q, Cmp) and isinstance(q.left, Const) and isinstance(q.right, Const):
        return Const(1 if _compare(q.op, q.left.value, q.right.value) else 0)
    return q


def _split_constant(q: Expr) -> tuple[Fraction, Expr]:
    """q as c * rest: constants and negations pulled out of a product (a constant binds nothing, so
    it may move anywhere in a product)."""
    if isinstance(q, Const):
        return q.value, Const(1)
    if isinstance(q, Neg):
        c, rest = _split_constant(q.q)
        return -c, rest
    if isinstance(q, Mul):
        c, rest = Fraction(1), []
        for f in q.factors:
            fc, fr = _split_constant(f)
            c *= fc
            if not (isinstance(fr, Const) and fr.value == 1):
                rest.append(fr)
        return c, mul(*rest)
    return Fraction(1), q


def _scaled(c: Fraction, rest: Expr) -> Expr:
    if c == 0:
        return Const(0)
    if c == 1:
        return rest
    if c == -1:
        return neg(rest)
    return mul(Const(c), rest)


def distribute_negation(q: Expr) -> Expr:
    """-(Q1 + Q2) -> -Q1 + -Q2, so that the terms meet their opposites in the enclosing sum."""
    if isinstance(q, Neg) and isinstance(q.q, Add):
        return add(*(neg(t) for t in q.q.terms))
    return q


def merge_constants(q: Expr) -> Expr:
    """A product's constants (and negations) merged into one leading constant."""
    if isinstance(q, (Mul, Neg)):
        c, rest = _split_constant(q)
        return _scaled(c, rest)
    return q


def group_like_terms(q: Expr) -> Expr:
    """c1 * Q + c2 * Q -> (c1 + c2) * Q, in order of first appearance; Q − Q = 0."""
    if not isinstance(q, Add):
        return q
    weights: dict[Expr, Fraction] = {}
    for term in q.terms:
        c, rest = _split_constant(term)
        weights[rest] = weights.get(rest, Fraction(0)) + c
    return add(*(_scaled(c, rest) for rest, c in weights.items()))


def collapse_nested_sums(q: Expr) -> Expr:
    """Sum[A](Sum[B](Q)) -> Sum[A](Q) when A ⊆ B; Sum[](c) -> c."""
    if isinstance(q, Sum) and isinstance(q.q, Sum) and set(q.group) <= set(q.q.group):
        return Sum(q.group, q.q.q)
    if isinstance(q, Sum) and not q.group and isinstance(q.q, Const):
        return q.q
    return q


RULES = (decide_constant_comparisons, distribute_negation, merge_constants, group_like_terms, collapse_nested_sums)


def simplify(q: Expr) -> Expr:
    """Apply RULES bottom-up until the expression no longer changes."""
    while True:
        out = _rebuild(q, simplify)
        for rule in RULES:
            out = rule(out)
        if out == q:
            return out
        q = out
