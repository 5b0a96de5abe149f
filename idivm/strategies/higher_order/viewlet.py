"""The viewlet transform (VLDBJ'14 Sections 4-5, Algorithm 2), first cut: a query and, recursively,
the parts of its deltas that read the database are materialized as maps; each base relation gets a
trigger program that adds to every map the delta of its definition, reading ΔR (the batch) and
other maps, never a base relation.

For each map M = Sum[keys](Q) and each relation R that Q reads:
1. ΔR M is taken (calculus/delta.py), simplified (calculus/simplify.py) and expanded into a sum of
   monomials (polynomial expansion, Section 5.1): c * Sum[keys](f1 * ... * fn).
2. In each monomial, the base-relation atoms with the conditions and values that read only their
   variables form new maps, one per group of factors connected by shared variables (query
   decomposition: no cross-product maps), each keyed by the variables the rest of the monomial or
   M's keys need; the monomial reads those maps instead (atoms of the maps' names).
3. The new maps are materialized the same way; maps whose definitions are equal up to the
   renaming of variables are one map (duplicate map elimination), read through an atom that
   names its keys in the reader's variables.

Simplification (calculus/simplify.py) includes unification: join equalities become shared
variables, so the same base relation reached through different deltas (a self-join's two
sides, a relation joined on either of two equal columns) is the same map.

Nested aggregates (assignments), input variables and the re-evaluate-or-increment decision come
next; queries with assignments are refused here. The result is checked on the reference
evaluator: after any batch, every map equals its definition (tests/test_calculus.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ...calculus.delta import delta
from ...calculus.expr import (Add, Assign, Const, DeltaRel, Expr, Extern, Mul, Neg, Rel, Sum, add, mul, relations, rename,
                              variables)
from ...calculus.printer import show
from ...calculus.simplify import factorize, simplify
from ...errors import UnsupportedQuery


@dataclass
class MapDef:
    name: str
    keys: tuple[str, ...]
    query: Expr  # Sum[keys](...) over base relations
    why: str = "a query of the view"  # the materialization decision that made it (explain prints it)
    uses: list[str] = field(default_factory=list)  # other decisions that reuse it (duplicate map elimination)


@dataclass
class Compiled:
    maps: list[MapDef] = field(default_factory=list)
    # relation -> [(map name, increment: an expression over ΔR atoms, map atoms and conditions)]
    triggers: dict[str, list[tuple[str, Expr]]] = field(default_factory=dict)
    top: dict[str, str] = field(default_factory=dict)  # each query asked for -> the map that holds it

    def map(self, name: str) -> MapDef:
        return next(m for m in self.maps if m.name == name)

    def format(self) -> str:
        """Maps and trigger programs, in the style of the paper's listings: each statement factorized
        (simplify.factorize). The SQL runs its expanded monomials, one SELECT each: a join with a
        union of a map and the batch would read the whole map where a monomial looks it up."""
        lines = []
        for m in self.maps:
            lines.append(f"{m.name}[{', '.join(m.keys)}] := {show(m.query)}")
            reused = f"; reused {', '.join(m.uses)} (duplicate map elimination)" if m.uses else ""
            lines.append(f"    why: {m.why}{reused}")
        for rel, stmts in sorted(self.triggers.items()):
            lines.append(f"ON UPDATE {rel} BY Δ{rel}:")
            lines += [f"  {name} += {show(factorize(e))}" for name, e in stmts]
        return "\n".join(lines)


def _vars(q: Expr) -> set[str]:
    return set(variables(q))


def _inputs(q: Expr) -> set[str]:
    """The variables a factor reads (a lift also outputs its own)."""
    return _vars(q.q) if is_lift(q) else _vars(q)


Monomial = tuple[Fraction, tuple[str, ...] | None, tuple[Expr, ...]]  # coefficient, Sum group (None: none), factors


def expand(q: Expr, group: tuple[str, ...] | None = None) -> list[Monomial]:
    """q as a sum of monomials c * Sum[group](f1 * ... * fn) (polynomial expansion)."""
    if isinstance(q, Add):
        return [m for t in q.terms for m in expand(t, group)]
    if isinstance(q, Neg):
        return [(-c, g, fs) for c, g, fs in expand(q.q, group)]
    if isinstance(q, Sum):
        if group is not None and not set(q.group) >= set(group):
            raise UnsupportedQuery(f"the higher-order strategy cannot expand a nested Sum with fewer group variables: {show(q)}")
        return [(c, q.group, fs) for c, _, fs in expand(q.q, q.group)]
    if isinstance(q, Const):
        return [(q.value, group, ())] if q.value else []
    if isinstance(q, Mul):
        out: list[Monomial] = [(Fraction(1), group, ())]
        for f in q.factors:  # outside any Sum, c * Sum[G](...) is a monomial grouped by G
            out = [(c1 * c2, _group(group, g1, g2, q), fs1 + fs2) for c1, g1, fs1 in out for c2, g2, fs2 in expand(f, group)]
        return out
    if isinstance(q, Assign) and not is_lift(q):
        raise UnsupportedQuery("the higher-order strategy materializes nested aggregates through nesting.py, not "
                               "as assignments in the viewlet transform")
    return [(Fraction(1), group, (q,))]


def _group(outer, g1, g2, q: Expr):
    if outer is not None or g2 is None or g1 == g2:
        return outer if outer is not None else g1
    if g1 is not None:
        raise UnsupportedQuery(f"the higher-order strategy cannot expand a product of sums with different group "
                               f"variables: {show(q)}")
    return g2


def is_lift(q: Expr) -> bool:
    """x := f(y⃗): a variable bound to an interpreted value of other variables (a GROUP BY
    expression), which reads no relation and so is a plain factor, like a comparison."""
    return isinstance(q, Assign) and isinstance(q.q, Extern) and q.q.kind == "value"


def canonical(query: Sum) -> tuple[Sum, dict[str, str]]:
    """query with its variables renamed $0, $1, ... in order of first appearance (its group list as
    a set), and that renaming: two definitions are the same map up to renaming iff their
    canonical forms are equal."""
    names = {v: f"${i}" for i, v in enumerate(variables(query))}
    c = rename(query, names)
    return Sum(tuple(sorted(c.group)), c.q), names


# At most this many maps per view. The viewlet transform materializes a map for every delta of a
# map that reads a table, so the count grows with the view's joins and nested aggregates (TPC-H Q8,
# eight tables: 166 maps, 3 s to compile); past the bound the view is refused by name, at once,
# rather than left compiling and registering for minutes, and `auto` takes the next strategy.
MAX_MAPS = 1000


class _Compiler:
    def __init__(self, not_null: frozenset[str]):
        self.out = Compiled()
        self.not_null = not_null
        self.by_definition: dict[Expr, str] = {}
        self.by_canonical: dict[Sum, tuple[str, dict[str, str]]] = {}

    def materialize(self, query: Sum, why: str = "a query of the view") -> str:
        """The name of the map for `query`, whose keys are named exactly as query's group
        (materialized once, with its triggers)."""
        if query in self.by_definition:
            name = self.by_definition[query]
            self.out.map(name).uses.append(why)
            return name
        if len(self.out.maps) >= MAX_MAPS:
            raise UnsupportedQuery(f"the higher-order strategy would keep more than {MAX_MAPS} maps for this view (the "
                                   "viewlet transform of its joins and nested aggregates); use --strategy id")
        name = f"M{len(self.out.maps) + 1}"
        self.by_definition[query] = name
        form, names = canonical(query)
        self.by_canonical.setdefault(form, (name, names))
        self.out.maps.append(MapDef(name, query.group, query, why))
        for rel in sorted(relations(query)):
            d = simplify(delta(query, rel), self.not_null)
            terms = [self._monomial(c, g, fs, query.group, f"Δ{rel} of {name}") for c, g, fs in expand(d)]
            increment = simplify(add(*terms), self.not_null)
            self.out.triggers.setdefault(rel, []).append((name, increment))
        return name

    def read(self, query: Sum, why: str) -> Rel:
        """An atom that reads `query` from a map: an existing map equal to it up to renaming (its
        keys named in query's variables), or a new one."""
        form, names = canonical(query)
        found = self.by_canonical.get(form)
        if found is None:
            return Rel(self.materialize(query, why), query.group)
        name, stored = found
        self.out.map(name).uses.append(why)
        back = {c: v for v, c in names.items()}
        return Rel(name, tuple(back[stored[k]] for k in self.out.map(name).keys))

    def _monomial(self, coef: Fraction, group, factors: tuple[Expr, ...], keys: tuple[str, ...], of: str) -> Expr:
        base = [f for f in factors if isinstance(f, Rel)]
        if not base:
            return mul(Const(coef), Sum(group or (), mul(*factors)))
        base_vars = set().union(*(_vars(f) for f in base))
        inner = [f for f in factors if not isinstance(f, (Rel, DeltaRel)) and _vars(f) and _inputs(f) <= base_vars]
        outer = [f for f in factors if f not in base and not any(f is i for i in inner)]
        outside = set().union(*(_vars(f) for f in outer)) | set(keys)
        deltas = [f for f in outer if isinstance(f, DeltaRel)]
        rest = [f for f in outer if not isinstance(f, DeltaRel)]
        atoms = []
        parts = _components(base + inner)
        for part in parts:  # query decomposition: one map per connected part
            part_vars = set().union(*(_vars(f) for f in part))
            needed = tuple(sorted(part_vars & outside))
            split = f", part {parts.index(part) + 1} of {len(parts)} (query decomposition)" if len(parts) > 1 else ""
            why = f"for {of}{split}"
            atoms.append(self.read(Sum(needed, mul(*part)), why))
        return mul(Const(coef), Sum(group or (), mul(*deltas, *atoms, *rest)))


def _components(factors: list[Expr]) -> list[list[Expr]]:
    """The factors grouped by shared variables (connected components), in order of first appearance.
    Parts that share no variable multiply as separate maps instead of one cross-product map."""
    parts: list[tuple[set[str], list[Expr]]] = []
    for f in factors:
        fv = _vars(f)
        touching = [p for p in parts if p[0] & fv]
        merged_vars, merged = set(fv), []
        for p in touching:
            merged_vars |= p[0]
            merged += p[1]
            parts.remove(p)
        parts.append((merged_vars, merged + [f]))
    order = {id(f): i for i, f in enumerate(factors)}
    return sorted((sorted(p[1], key=lambda f: order[id(f)]) for p in parts), key=lambda p: order[id(p[0])])


def compile_queries(queries: dict[str, Sum], not_null: frozenset[str] = frozenset()) -> Compiled:
    """Maps and trigger programs for top-level Sum queries (a view's maps: its COUNT and each SUM),
    compiled together so that they share the maps of their deltas; `top` names each one's map.
    `not_null`: variables that never hold NULL (simplify.py needs no guard for their equalities)."""
    c = _Compiler(not_null)
    for name, query in queries.items():
        simple = simplify(query, not_null)
        if isinstance(simple, Sum) and simple.group == query.group:  # its keys stay those the view reads
            query = simple
        c.out.top[name] = c.materialize(query, f"the view's {name} map")
    return c.out


def compile_query(query: Sum, not_null: frozenset[str] = frozenset()) -> Compiled:
    """Maps and trigger programs for one top-level Sum query."""
    return compile_queries({"query": query}, not_null)
