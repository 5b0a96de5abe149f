"""AGCA in the paper's notation: ``Sum[A, B](R(A, B) * (z := Sum[](S(C, D) * (A > C) * D)) * (B < z))``."""
from __future__ import annotations

from .expr import VARIABLE_REF, Add, Assign, Cmp, Const, DeltaRel, Exists, Expr, Extern, Mul, Neg, Rel, Sum, Var


def _const(c: Const) -> str:
    v = c.value
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v.numerator) if v.denominator == 1 else f"({v.numerator}/{v.denominator})"


def _term(t) -> str:
    return t.name if isinstance(t, Var) else _const(t)


def show(q: Expr) -> str:
    if isinstance(q, Const):
        return _const(q)
    if isinstance(q, Var):
        return q.name
    if isinstance(q, Rel):
        return f"{q.name}({', '.join(q.vars)})"
    if isinstance(q, DeltaRel):
        return f"Δ{q.name}({', '.join(q.vars)})"
    if isinstance(q, Cmp):
        return f"({_term(q.left)} {q.op} {_term(q.right)})"
    if isinstance(q, Extern):
        return "[" + VARIABLE_REF.sub(lambda m: m.group(1).replace('""', '"'), q.sql) + "]"
    if isinstance(q, Assign):
        return f"({q.var} := {show(q.q)})"
    if isinstance(q, Exists):
        return f"Exists({show(q.q)})"
    if isinstance(q, Sum):
        return f"Sum[{', '.join(q.group)}]({show(q.q)})"
    if isinstance(q, Neg):
        inner = show(q.q)
        return f"-({inner})" if isinstance(q.q, (Add, Mul)) else f"-{inner}"
    if isinstance(q, Mul):
        return " * ".join(f"({show(f)})" if isinstance(f, Add) else show(f) for f in q.factors)
    if isinstance(q, Add):
        return " + ".join(show(t) for t in q.terms)
    raise TypeError(f"not an AGCA expression: {q!r}")
