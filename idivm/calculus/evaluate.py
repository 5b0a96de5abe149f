"""The reference evaluator: AGCA's formal semantics (VLDBJ'14 Section 3.2) over generalized
multiset relations (GMRs: functions from tuples to ℚ, nonzero for finitely many), with exact
rational multiplicities. It is slow and literal on purpose: the tests hold deltas, simplifications
and compiled trigger programs to it.

A tuple is a partial function from variables to values, kept as a sorted tuple of (variable, value)
pairs; a GMR is a dict from such tuples to nonzero Fractions. A database maps relation names to
GMRs over positional tuples (the values of R's columns in order); an update maps relation names to
the signed tuples it adds (ΔR).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from .expr import Add, Assign, Cmp, Const, DeltaRel, Exists, Expr, Extern, Mul, Neg, Rel, Sum, Var

Tup = tuple[tuple[str, Any], ...]
GMR = dict[Tup, Fraction]
Database = Mapping[str, Mapping[tuple, Fraction]]

EMPTY: Tup = ()


class Unbound(ValueError):
    """A variable was read before anything bound it: the query is not in AGCA (Section 3.2)."""


def tup(**values) -> Tup:
    return tuple(sorted(values.items()))


def _as_dict(t: Tup) -> dict[str, Any]:
    return dict(t)


def _consistent(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(b[k] == v for k, v in a.items() if k in b)


def _freeze(d: Mapping[str, Any]) -> Tup:
    return tuple(sorted(d.items(), key=lambda kv: kv[0]))


def _put(out: GMR, t: Tup, m: Fraction) -> None:
    v = out.get(t, Fraction(0)) + m
    if v:
        out[t] = v
    else:
        out.pop(t, None)


def _compare(op: str, a, b) -> bool:
    if a is None or b is None:
        return False
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _value(t: Var | Const, b: Mapping[str, Any]):
    if isinstance(t, Const):
        return t.value
    if t.name not in b:
        raise Unbound(f"variable {t.name} is not bound")
    return b[t.name]


def evaluate(q: Expr, db: Database, bound: Mapping[str, Any] | None = None,
             update: Database | None = None) -> GMR:
    """[[q]](D, b⃗): the GMR q denotes on database db in context `bound`; ΔR atoms read `update`."""
    b = dict(bound or {})
    if isinstance(q, Const):
        if isinstance(q.value, str):
            raise TypeError(f"text constant {q.value!r} used as a multiplicity")
        return {EMPTY: q.value} if q.value else {}
    if isinstance(q, Var):
        v = _value(q, b)
        return {EMPTY: Fraction(v)} if v else {}
    if isinstance(q, Extern):
        raise NotImplementedError(f"the reference evaluator does not interpret SQL functions ({q.sql})")
    if isinstance(q, Cmp):
        return {EMPTY: Fraction(1)} if _compare(q.op, _value(q.left, b), _value(q.right, b)) else {}
    if isinstance(q, (Rel, DeltaRel)):
        source = (update or {}) if isinstance(q, DeltaRel) else db
        out: GMR = {}
        for values, m in source.get(q.name, {}).items():
            if len(values) != len(q.vars):
                raise ValueError(f"{q.name} has {len(values)} columns, the atom names {len(q.vars)}")
            t: dict[str, Any] = {}
            if all(t.setdefault(x, v) == v for x, v in zip(q.vars, values)) and _consistent(t, b):
                _put(out, _freeze(t), Fraction(m))
        return out
    if isinstance(q, Add):
        out = {}
        for term in q.terms:
            for t, m in evaluate(term, db, b, update).items():
                _put(out, t, m)
        return out
    if isinstance(q, Neg):
        return {t: -m for t, m in evaluate(q.q, db, b, update).items()}
    if isinstance(q, Exists):
        return {t: Fraction(1) for t in evaluate(q.q, db, b, update)}
    if isinstance(q, Mul):
        acc: GMR = {EMPTY: Fraction(1)}
        for factor in q.factors:
            nxt: GMR = {}
            for r, m in acc.items():
                rd = _as_dict(r)
                for s, n in evaluate(factor, db, {**b, **rd}, update).items():
                    sd = _as_dict(s)
                    if _consistent(rd, sd):
                        _put(nxt, _freeze({**rd, **sd}), m * n)
            acc = nxt
        return {t: m for t, m in acc.items() if _consistent(_as_dict(t), b)}
    if isinstance(q, Assign):
        v = evaluate(q.q, db, b, update)
        if any(t != EMPTY for t in v):
            raise ValueError(f"the value assigned to {q.var} is not a single number: {show_gmr(v)}")
        value = v.get(EMPTY, Fraction(0))
        if q.var in b and b[q.var] != value:
            return {}
        return {((q.var, value),): Fraction(1)}
    if isinstance(q, Sum):
        out = {}
        for s, m in evaluate(q.q, db, b, update).items():
            sd = {**b, **_as_dict(s)}
            missing = [a for a in q.group if a not in sd]
            if missing:
                raise Unbound(f"group-by variable {missing[0]} is neither an output of the summed query nor bound")
            _put(out, _freeze({a: sd[a] for a in q.group}), m)
        return out
    raise TypeError(f"not an AGCA expression: {q!r}")


def plus(a: GMR, b: GMR, sign: int = 1) -> GMR:
    """a + sign * b."""
    out = dict(a)
    for t, m in b.items():
        _put(out, t, sign * m)
    return out


def apply_update(db: Database, update: Database) -> dict[str, dict[tuple, Fraction]]:
    """D + ΔD."""
    out = {name: dict(rows) for name, rows in db.items()}
    for name, rows in update.items():
        target = out.setdefault(name, {})
        for values, m in rows.items():
            v = target.get(values, Fraction(0)) + m
            if v:
                target[values] = v
            else:
                target.pop(values, None)
    return out


def show_gmr(g: GMR) -> str:
    return "{" + ", ".join(f"⟨{', '.join(f'{k}: {v}' for k, v in t)}⟩ ↦ {m}" for t, m in sorted(g.items(), key=repr)) + "}"
