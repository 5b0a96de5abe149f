"""Binding patterns (VLDBJ'14 Section 3.3): every expression has input variables (parameters it
cannot be evaluated without: a correlated subquery's correlation variables, a delta's update
variables) and output variables (its result's schema), written Q[x⃗_in][x⃗_out].

Multiplication passes bindings left to right, so a factor's inputs that an earlier factor outputs
are not inputs of the product. A sum of queries must have the same outputs in every term.
"""
from __future__ import annotations

from .expr import Add, Assign, Cmp, Const, DeltaRel, Exists, Expr, Extern, Mul, Neg, Rel, Sum, Var


class SchemaError(ValueError):
    """The expression is not range-restricted as AGCA requires."""


def schema(q: Expr) -> tuple[frozenset[str], frozenset[str]]:
    """(input variables, output variables) of q."""
    if isinstance(q, Const):
        return frozenset(), frozenset()
    if isinstance(q, Var):
        return frozenset({q.name}), frozenset()
    if isinstance(q, Cmp):
        return frozenset(t.name for t in (q.left, q.right) if isinstance(t, Var)), frozenset()
    if isinstance(q, Extern):
        return frozenset(q.vars), frozenset()
    if isinstance(q, (Rel, DeltaRel)):
        return frozenset(), frozenset(q.vars)
    if isinstance(q, (Neg, Exists)):
        return schema(q.q)
    if isinstance(q, Assign):
        ins, outs = schema(q.q)
        if outs:
            raise SchemaError(f"{q.var} := ... needs a single value, but the query outputs {sorted(outs)}")
        return ins, frozenset({q.var})
    if isinstance(q, Sum):
        ins, outs = schema(q.q)
        # a group-by variable the summed query does not output comes from the context
        return ins | (frozenset(q.group) - outs), frozenset(q.group)
    if isinstance(q, Mul):
        ins: set[str] = set()
        outs: set[str] = set()
        for f in q.factors:
            fi, fo = schema(f)
            ins |= fi - outs
            outs |= fo
        return frozenset(ins), frozenset(outs)
    if isinstance(q, Add):
        parts = [schema(t) for t in q.terms]
        outs = {p[1] for p in parts}
        if len(outs) > 1:
            raise SchemaError(f"the terms of a sum have different outputs: {sorted(sorted(o) for o in outs)}")
        return frozenset().union(*(p[0] for p in parts)), parts[0][1]
    raise TypeError(f"not an AGCA expression: {q!r}")
