"""Delta queries (VLDBJ'14 Section 3.4): ΔQ(D, ΔD) = Q(D + ΔD) − Q(D), by syntactic rules, for a
batched update of one relation R (ΔR: its signed tuples; a single-tuple insert or delete is the
special case the paper writes ±R(t⃗)):

    Δ(Q1 + Q2)   = ΔQ1 + ΔQ2
    Δ(Q1 * Q2)   = ΔQ1 * Q2 + Q1 * ΔQ2 + ΔQ1 * ΔQ2
    Δ(-Q)        = -ΔQ
    Δc = Δx = Δ(x θ y) = Δf(x⃗) = 0
    Δ(x := Q)    = (ΔQ)_rr * ((x := Q + ΔQ) − (x := Q))
    Δ Sum[A](Q)  = Sum[A](ΔQ)
    Δ R(x⃗)       = ΔR(x⃗),   Δ S(x⃗) = 0 for S ≠ R

Every other relation is unchanged by the update. The smart constructors of expr.py drop the terms
that are 0, so the delta of a query that does not read R is 0.

(ΔQ)_rr is Section 5.3's extracted range restriction, batched: where Q is correlated to the
context by equalities (A = C) with C a column of ΔR, the nested value can only change for the A
values the batch holds, Exists(Sum[A](Exists(ΔR(..A..)))); it is prepended to the delta of the enclosing
product, so the product is evaluated for those values only (for a single-tuple update, A := x).
Uncorrelated and inequality-correlated nested aggregates have none, and their delta ranges over
every outer tuple: the paper's reason to re-evaluate those instead (Section 5.1).
"""
from __future__ import annotations

from .expr import (Add, Assign, Cmp, Const, DeltaRel, Exists, Expr, Extern, Mul, Neg, Rel, Sum, Var, ZERO, add, is_zero, mul,
                   neg, rename, sum_)
from .schema import schema


def delta(q: Expr, relation: str) -> Expr:
    """Δ_R q for an update of `relation`."""
    if isinstance(q, Rel):
        return DeltaRel(q.name, q.vars) if q.name == relation else ZERO
    if isinstance(q, (Const, Var, Cmp, Extern, DeltaRel)):
        return ZERO
    if isinstance(q, Add):
        return add(*(delta(t, relation) for t in q.terms))
    if isinstance(q, Neg):
        return neg(delta(q.q, relation))
    if isinstance(q, Sum):
        return sum_(q.group, delta(q.q, relation))
    if isinstance(q, Assign):
        d = delta(q.q, relation)
        if is_zero(d):
            return ZERO
        return mul(range_restriction(d), add(Assign(q.var, add(q.q, d)), neg(Assign(q.var, q.q))))
    if isinstance(q, Exists):
        d = delta(q.q, relation)
        return ZERO if is_zero(d) else add(Exists(add(q.q, d)), neg(q))
    if isinstance(q, Mul):
        first, rest = q.factors[0], mul(*q.factors[1:])
        d1, d2 = delta(first, relation), delta(rest, relation)
        return add(mul(d1, rest), _prepend_restriction(mul(first, d2)), _prepend_restriction(mul(d1, d2)))
    raise TypeError(f"not an AGCA expression: {q!r}")


def _body(d: Expr) -> list[Expr]:
    """The factors of a nested delta Sum[](f1 * ... * fn) (or of its negation)."""
    if isinstance(d, Neg):
        return _body(d.q)
    if isinstance(d, Sum) and not d.group:
        return list(d.q.factors) if isinstance(d.q, Mul) else [d.q]
    return []


def range_restriction(d: Expr) -> Expr:
    """(ΔQ)_rr for a nested aggregate's delta d: Exists(Sum[A⃗](Exists(ΔR(...)))) over the context variables
    A⃗ that equalities (A = C) tie to columns C of d's batch atoms, or 1 if there are none. It is 1
    wherever d is nonzero, so multiplying by it changes nothing but the range."""
    factors = _body(d)
    atoms = [f for f in factors if isinstance(f, DeltaRel)]
    local = set().union(*(schema(f)[1] for f in factors)) if factors else set()
    ties: dict[str, str] = {}
    for f in factors:
        if isinstance(f, Cmp) and f.op == "=" and isinstance(f.left, Var) and isinstance(f.right, Var):
            for a, c in ((f.left.name, f.right.name), (f.right.name, f.left.name)):
                if a not in local and any(c in x.vars for x in atoms) and c not in ties:
                    ties[c] = a
    if len(atoms) != 1 or not ties:
        return Const(1)
    # the batch's distinct values: inner Exists, so that signed tuples cannot cancel in the Sum
    return Exists(Sum(tuple(dict.fromkeys(ties.values())), Exists(rename(atoms[0], ties))))


def _prepend_restriction(q: Expr) -> Expr:
    """A product with a range restriction among its factors, that restriction first: it binds the
    correlation variables from the batch before the outer relations are read (it reads nothing
    from its context, so it may move)."""
    if not isinstance(q, Mul):
        return q
    found = [f for f in q.factors if isinstance(f, Exists) and not schema(f)[0]]
    if not found:
        return q
    return mul(*found, *(f for f in q.factors if not any(f is g for g in found)))
