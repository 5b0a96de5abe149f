"""Delta queries (VLDBJ'14 Section 3.4): ΔQ(D, ΔD) = Q(D + ΔD) − Q(D), by syntactic rules, for a
batched update of one relation R (ΔR: its signed tuples; a single-tuple insert or delete is the
special case the paper writes ±R(t⃗)):

    Δ(Q1 + Q2)   = ΔQ1 + ΔQ2
    Δ(Q1 * Q2)   = ΔQ1 * Q2 + Q1 * ΔQ2 + ΔQ1 * ΔQ2
    Δ(-Q)        = -ΔQ
    Δc = Δx = Δ(x θ y) = Δf(x⃗) = 0
    Δ(x := Q)    = (x := Q + ΔQ) − (x := Q)
    Δ Sum[A](Q)  = Sum[A](ΔQ)
    Δ R(x⃗)       = ΔR(x⃗),   Δ S(x⃗) = 0 for S ≠ R

Every other relation is unchanged by the update. The smart constructors of expr.py drop the terms
that are 0, so the delta of a query that does not read R is 0.
"""
from __future__ import annotations

from .expr import (Add, Assign, Cmp, Const, DeltaRel, Expr, Extern, Mul, Neg, Rel, Sum, Var, ZERO, add, is_zero, mul, neg,
                   sum_)


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
        return add(Assign(q.var, add(q.q, d)), neg(Assign(q.var, q.q)))
    if isinstance(q, Mul):
        first, rest = q.factors[0], mul(*q.factors[1:])
        d1, d2 = delta(first, relation), delta(rest, relation)
        return add(mul(d1, rest), mul(first, d2), mul(d1, d2))
    raise TypeError(f"not an AGCA expression: {q!r}")
