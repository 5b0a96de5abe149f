"""AGCA expressions, exactly the paper's grammar (VLDBJ'14 Section 3.2):

    q ::= q * q | q + q | -q | c | x | R(x⃗) | Sum[A⃗](q) | x θ 0 | x := q

plus interpreted functions of bound variables (Extern: DBToaster's calculus allows them in its
value terms and comparisons, as external functions), and ΔR(x⃗), the delta GMR of relation R in an update (Section 3.4: a batch of signed tuples, of
which a single-tuple insert or delete is the special case). ``x θ y`` is the paper's sugar for
``(x - y) θ 0``; comparisons here take two terms (variables or constants) so that values that are
not numbers (text) compare too. Expressions are immutable; the smart constructors ``add``,
``mul``, ``neg`` drop the neutral and absorbing elements (0 + q = q, 1 * q = q, 0 * q = 0) so that
deltas stay small, and never change meaning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


class Expr:
    """Base of every AGCA expression."""

    def __add__(self, other: "Expr") -> "Expr":
        return add(self, other)

    def __mul__(self, other: "Expr") -> "Expr":
        return mul(self, other)

    def __neg__(self) -> "Expr":
        return neg(self)

    def __sub__(self, other: "Expr") -> "Expr":
        return add(self, neg(other))

    def __str__(self) -> str:
        from .printer import show

        return show(self)


@dataclass(frozen=True)
class Const(Expr):
    """A constant c ∈ ℚ (the GMR {⟨⟩ ↦ c}); in a comparison it may also be a text value."""

    value: Fraction | str

    def __post_init__(self):
        if not isinstance(self.value, str):
            object.__setattr__(self, "value", Fraction(self.value))


@dataclass(frozen=True)
class Var(Expr):
    """A variable's value as a multiplicity: {⟨⟩ ↦ b(x)}; fails if x is not bound."""

    name: str


@dataclass(frozen=True)
class Atom(Expr):
    """A relation read with its columns renamed to variables, in order."""

    name: str
    vars: tuple[str, ...]


@dataclass(frozen=True)
class Rel(Atom):
    """R(x1, ..., xk): relation R of the database."""


@dataclass(frozen=True)
class DeltaRel(Atom):
    """ΔR(x1, ..., xk): the signed tuples an update adds to R (negative multiplicities delete)."""


@dataclass(frozen=True)
class Add(Expr):
    terms: tuple[Expr, ...]


@dataclass(frozen=True)
class Mul(Expr):
    """The natural join, evaluated left to right: each factor sees the bindings of those before it."""

    factors: tuple[Expr, ...]


@dataclass(frozen=True)
class Neg(Expr):
    """-q, that is (-1) * q."""

    q: Expr


@dataclass(frozen=True)
class Cmp(Expr):
    """left θ right over variables and constants: {⟨⟩ ↦ 1} if it holds, else the empty GMR."""

    op: str
    left: Var | Const
    right: Var | Const

    def __post_init__(self):
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True)
class Extern(Expr):
    """An interpreted function of bound variables, evaluated by the database (DBToaster's external
    functions): `sql` is a PostgreSQL scalar expression whose variables are written as the columns
    "@"."<variable>". As a condition (kind "cond") it is {⟨⟩ ↦ 1} where it is TRUE and empty where
    it is FALSE or NULL, which is what SQL's WHERE keeps; as a value (kind "value") it is {⟨⟩ ↦ v},
    empty where v is NULL, which is what SQL's SUM adds. Like a comparison it binds nothing and
    has no delta."""

    kind: str
    sql: str
    vars: tuple[str, ...]

    def __post_init__(self):
        if self.kind not in ("cond", "value"):
            raise ValueError(f"unknown kind of interpreted function {self.kind!r}")


VAR_TABLE = "@"  # the table qualifier of a variable inside an Extern's SQL


@dataclass(frozen=True)
class Assign(Expr):
    """x := q: {⟨x: v⟩ ↦ 1} where v is q's (nullary) value; a nested aggregate's value in a variable."""

    var: str
    q: Expr


@dataclass(frozen=True)
class Exists(Expr):
    """Exists(q): each tuple where q is nonzero, with multiplicity 1 (DBToaster's later calculus
    has it; here it is the range restriction a batch puts on a nested aggregate's delta, Section
    5.3: the values of the correlation variables for which the batch changes the aggregate)."""

    q: Expr


@dataclass(frozen=True)
class Sum(Expr):
    """Sum[A⃗](q): the multiplicity-preserving projection of q on the group-by variables A⃗."""

    group: tuple[str, ...]
    q: Expr


ZERO, ONE = Const(0), Const(1)


def is_zero(q: Expr) -> bool:
    return isinstance(q, Const) and q.value == 0


def add(*terms: Expr) -> Expr:
    flat: list[Expr] = []
    for t in terms:
        flat.extend(t.terms if isinstance(t, Add) else (t,))
    flat = [t for t in flat if not is_zero(t)]
    if not flat:
        return ZERO
    return flat[0] if len(flat) == 1 else Add(tuple(flat))


def mul(*factors: Expr) -> Expr:
    flat: list[Expr] = []
    for f in factors:
        flat.extend(f.factors if isinstance(f, Mul) else (f,))
    if any(is_zero(f) for f in flat):
        return ZERO
    flat = [f for f in flat if not (isinstance(f, Const) and f.value == 1)]
    if not flat:
        return ONE
    return flat[0] if len(flat) == 1 else Mul(tuple(flat))


def neg(q: Expr) -> Expr:
    if isinstance(q, Const):
        return Const(-q.value)
    if isinstance(q, Neg):
        return q.q
    return ZERO if is_zero(q) else Neg(q)


def sum_(group, q: Expr) -> Expr:
    return ZERO if is_zero(q) else Sum(tuple(group), q)


def relations(q: Expr) -> set[str]:
    """Names of the relations q reads (its atoms R(...), not its deltas)."""
    if isinstance(q, Rel):
        return {q.name}
    return set().union(*(relations(c) for c in children(q))) if children(q) else set()


def children(q: Expr) -> tuple[Expr, ...]:
    if isinstance(q, Add):
        return q.terms
    if isinstance(q, Mul):
        return q.factors
    if isinstance(q, (Neg, Assign, Sum, Exists)):
        return (q.q,)
    return ()


VARIABLE_REF = re.compile(r'"@"\."((?:[^"]|"")+)"')  # a variable inside an Extern's SQL: "@"."<variable>"
QUOTE, DOUBLED = '"', '""'


def _quoted(name: str) -> str:
    return QUOTE + name.replace(QUOTE, DOUBLED) + QUOTE


def rename(q: Expr, mapping: dict[str, str]) -> Expr:
    """q with its variables renamed (every occurrence: atoms, comparisons, values, group lists,
    assignment targets, and the variables an interpreted function's SQL reads, which are always
    written "@"."<variable>")."""
    if not mapping:
        return q

    def r(v: str) -> str:
        return mapping.get(v, v)

    if isinstance(q, Var):
        return Var(r(q.name))
    if isinstance(q, Cmp):
        return Cmp(q.op, *(Var(r(t.name)) if isinstance(t, Var) else t for t in (q.left, q.right)))
    if isinstance(q, Atom):
        return type(q)(q.name, tuple(r(v) for v in q.vars))
    if isinstance(q, Extern):
        def put(m: re.Match) -> str:  # one pass: a swap of two names cannot collide
            return f"{_quoted(VAR_TABLE)}.{_quoted(r(m.group(1).replace(DOUBLED, QUOTE)))}"

        sql = VARIABLE_REF.sub(put, q.sql)
        return Extern(q.kind, sql, tuple(dict.fromkeys(r(v) for v in q.vars)))
    if isinstance(q, Add):
        return Add(tuple(rename(t, mapping) for t in q.terms))
    if isinstance(q, Mul):
        return Mul(tuple(rename(f, mapping) for f in q.factors))
    if isinstance(q, Neg):
        return Neg(rename(q.q, mapping))
    if isinstance(q, Exists):
        return Exists(rename(q.q, mapping))
    if isinstance(q, Assign):
        return Assign(r(q.var), rename(q.q, mapping))
    if isinstance(q, Sum):
        return Sum(tuple(r(v) for v in q.group), rename(q.q, mapping))
    return q


def variables(q: Expr) -> list[str]:
    """Every variable q names, in order of first appearance (left to right, a Sum's body before its
    group list)."""
    out: dict[str, None] = {}

    def walk(e: Expr) -> None:
        if isinstance(e, Var):
            out.setdefault(e.name)
        elif isinstance(e, Cmp):
            for t in (e.left, e.right):
                if isinstance(t, Var):
                    out.setdefault(t.name)
        elif isinstance(e, (Atom, Extern)):
            for v in e.vars:
                out.setdefault(v)
        elif isinstance(e, Assign):
            walk(e.q)
            out.setdefault(e.var)
        elif isinstance(e, Sum):
            walk(e.q)
            for v in e.group:
                out.setdefault(v)
        else:
            for c in children(e):
                walk(c)

    walk(q)
    return list(out)
