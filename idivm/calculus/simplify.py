"""Simplification of AGCA expressions (VLDBJ'14 Section 5.3), each rewrite a small pure function
from expression to expression, applied bottom-up in the order of RULES until nothing changes (the
shape of sqlglot's optimizer and of the id strategy's minimization).

RULES are local: partial evaluation and the algebraic identities (constants merged in sums and
products, comparisons of constants decided, negation distributed over sums, Q + 0 = Q, Q * 1 = Q,
Q * 0 = 0, Q − Q = 0, terms that differ only by a constant factor grouped), and nested sums
collapsed. SCOPED_RULES need to know which variables are bound around a subexpression, so they
walk the whole expression from its root: unification (an equality between two variables, one of
which goes out of scope at the enclosing Sum, becomes one variable), then terms equal up to the
renaming of their local variables merged (a self-join's two sides). Range-restriction extraction
is part of the delta rule for nested aggregates (delta.py); factorization, the inverse of
polynomial expansion, applies after the materialization decision (viewlet.py prints trigger
statements factorized).

Every rewrite keeps the expression's meaning on every database and context (checked against the
reference evaluator by tests/test_calculus.py).
"""
from __future__ import annotations

from fractions import Fraction

from .evaluate import _compare
from .expr import (ONE, Add, Assign, Cmp, Const, Exists, Expr, Mul, Neg, Sum, Var, add, children, is_zero, mul, neg, rename, sum_,
                   variables)
from .schema import schema


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
    if isinstance(q, Exists):
        inner = simplify_child(q.q)
        return inner if is_zero(inner) else Exists(inner)
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


def _assigned(q: Expr) -> set[str]:
    """Variables that an assignment inside q binds."""
    own = {q.var} if isinstance(q, Assign) else set()
    return own.union(*(_assigned(c) for c in children(q)))


def _unify_sum(q: Sum, bound: frozenset[str], not_null: frozenset[str]) -> Expr:
    """Sum[G](... * (x = y) * ...) where x is local to the Sum (bound by a factor of its body, not
    around it, not a group variable): x renamed to y everywhere in the body. The comparison stays
    as (y = y) unless x and y can never be NULL: a comparison with NULL is not true, while two
    atoms that share a NULL-valued variable join (the evaluator's natural join, and the guard keeps
    SQL's `=` between them honest)."""
    factors = list(q.q.factors) if isinstance(q.q, Mul) else [q.q]
    outputs = set().union(*(schema(f)[1] for f in factors))
    local = outputs - bound - set(q.group) - _assigned(q.q)
    order = variables(q.q)
    for i, f in enumerate(factors):
        if not (isinstance(f, Cmp) and f.op == "=" and isinstance(f.left, Var) and isinstance(f.right, Var)):
            continue
        x, y = f.left.name, f.right.name
        if x == y:
            continue
        if x not in local or (y in local and order.index(x) < order.index(y)):
            x, y = y, x  # rename the one bound later: the first binder's name stays
        if x not in local:
            continue
        guard = ONE if {x, y} <= not_null else Cmp("=", Var(y), Var(y))
        body = [guard if j == i else rename(g, {x: y}) for j, g in enumerate(factors)]
        return Sum(q.group, mul(*body))
    return q


def _scoped(q: Expr, bound: frozenset[str], visit) -> Expr:
    """q with visit(node, bound) applied to every node, children first; `bound` holds the variables
    bound around the node (by the context and by the factors before it in a product)."""
    if isinstance(q, Mul):
        factors, seen = [], set(bound)
        for f in q.factors:
            g = _scoped(f, frozenset(seen), visit)
            factors.append(g)
            seen |= schema(g)[1]
        q = mul(*factors)
    elif isinstance(q, Add):
        q = add(*(_scoped(t, bound, visit) for t in q.terms))
    elif isinstance(q, Neg):
        q = neg(_scoped(q.q, bound, visit))
    elif isinstance(q, Sum):
        q = sum_(q.group, _scoped(q.q, bound, visit))
    elif isinstance(q, Assign):
        q = Assign(q.var, _scoped(q.q, bound, visit))
    elif isinstance(q, Exists):
        q = Exists(_scoped(q.q, bound, visit))
    return visit(q, bound)


def unify_equalities(q: Expr, not_null: frozenset[str] = frozenset()) -> Expr:
    """Unification (Section 5.3): equalities between variables turned into one variable wherever
    one side goes out of scope at its Sum, so that atoms join on shared variables instead of
    through comparisons, and maps that differ only by that renaming become one (viewlet.py's
    duplicate map elimination compares definitions up to renaming). `not_null`: variables that
    never hold NULL (their equality needs no guard)."""
    def visit(node: Expr, bound: frozenset[str]) -> Expr:
        while isinstance(node, Sum):
            out = _unify_sum(node, bound, not_null)
            if out == node:
                break
            node = out
        return node

    return _scoped(q, frozenset(), visit)


def _alpha_key(q: Expr, bound: frozenset[str]) -> Expr:
    """q with the variables local to it (a Sum's, not its group, not bound around it) renamed $0,
    $1, ... in order of appearance: two terms with the same key are equal up to renaming."""
    if not isinstance(q, Sum):
        return q
    local = [v for v in variables(q.q) if v not in q.group and v not in bound]
    return rename(q, {v: f"${i}" for i, v in enumerate(local)})


def merge_renamed_terms(q: Expr, not_null: frozenset[str] = frozenset()) -> Expr:
    """c1 * Sum[G](Q) + c2 * Sum[G](Q') -> (c1 + c2) * Sum[G](Q) where Q' is Q with its local
    variables renamed: Example 12's R(A) * R(A) delta, whose two first-order terms are one term
    twice (a self-join's two sides read the same map, once)."""
    def visit(node: Expr, bound: frozenset[str]) -> Expr:
        if not isinstance(node, Add):
            return node
        weights: dict[Expr, list] = {}
        for term in node.terms:
            c, rest = _split_constant(term)
            slot = weights.setdefault(_alpha_key(rest, bound), [Fraction(0), rest])
            slot[0] += c
        return add(*(_scaled(c, rest) for c, rest in weights.values()))

    return _scoped(q, frozenset(), visit)


SCOPED_RULES = (unify_equalities, merge_renamed_terms)


def factorize(q: Expr) -> Expr:
    """Factorization (Section 5.1, polynomial expansion in reverse): terms c_i * Sum[G](f * A_i)
    that share their first factor f become Sum[G](f * (c_1 * A_1' + c_2 * A_2' + ...)), A_i' =
    Sum[K](A_i) with K the variables A_i shares with f and G. Only where every A_i reads nothing
    from f (so that it is a relation of its own) and all K are equal; other terms stay. Example 12:
    2 * Sum[](ΔR(A, B) * M(B)) + Sum[](ΔR(A, B) * ΔR(A2, B)) -> Sum[](ΔR(A, B) * (2 * M(B) + Sum[B](ΔR(A2, B))))."""
    if not isinstance(q, Add):
        return q
    shared: dict[object, list[tuple[Fraction, Expr, Expr]]] = {}  # key -> (c, the term, its A_i')
    for term in q.terms:
        c, rest = _split_constant(term)
        key: object = id(term)
        part = rest
        if isinstance(rest, Sum) and isinstance(rest.q, Mul):
            f, others = rest.q.factors[0], mul(*rest.q.factors[1:])
            ins, outs = schema(others)
            if not ins:
                keys = tuple(sorted(outs & (schema(f)[1] | set(rest.group))))
                key = (rest.group, f, keys)
                part = others if set(outs) == set(keys) else Sum(keys, others)
        shared.setdefault(key, []).append((c, rest, part))
    out = []
    for key, terms in shared.items():
        if isinstance(key, tuple) and len(terms) > 1:
            group, f, _ = key
            out.append(Sum(group, mul(f, add(*(_scaled(c, part) for c, _, part in terms)))))
        else:
            out += [_scaled(c, rest) for c, rest, _ in terms]
    return add(*out)


def simplify(q: Expr, not_null: frozenset[str] = frozenset()) -> Expr:
    """Apply RULES bottom-up until the expression no longer changes, then SCOPED_RULES from the
    root, and again until neither changes it."""
    while True:
        start = q
        while True:
            out = _local(q)
            if out == q:
                break
            q = out
        for rule in SCOPED_RULES:
            q = rule(q, not_null)
        if q == start:
            return q


def _local(q: Expr) -> Expr:
    """RULES applied bottom-up once over the whole expression."""
    out = _rebuild(q, _local)
    for rule in RULES:
        out = rule(out)
    return out
