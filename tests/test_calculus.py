"""The AGCA core (idivm/calculus): the paper's examples evaluate as printed, binding patterns follow
Section 3.3, and every delta is exact: Q(D + ΔD) − Q(D) = ΔQ(D, ΔD) on random databases, random
batched updates (inserts and deletes, several tuples) and random queries, with exact rational
multiplicities. No database server is needed."""
from __future__ import annotations

from fractions import Fraction as F

from hypothesis import given, settings, strategies as st

from idivm.calculus.delta import delta
from idivm.calculus.evaluate import apply_update, evaluate, plus, tup
from idivm.calculus.expr import Assign, Cmp, Const, Mul, Rel, Sum, Var, ZERO, add, mul, neg
from idivm.calculus.schema import schema

R = Rel("R", ("A", "B"))
S = Rel("S", ("C", "D"))
# Example 5: SELECT * FROM R WHERE B < (SELECT SUM(D) FROM S WHERE A > C)
QN = Sum((), mul(S, Cmp(">", Var("A"), Var("C")), Var("D")))
EX5 = Sum(("A", "B"), mul(R, Assign("z", QN), Cmp("<", Var("B"), Var("z"))))


def test_examples_3_to_5_evaluate_as_in_the_paper():
    q1, q2, q3 = F(2), F(-1, 2), F(3)
    db = {"R": {(1, 2): q1, (3, 5): q2, (4, 2): q3}}
    # Example 3: a bound variable selects
    assert evaluate(Rel("R", ("x", "y")), db, {"x": 3}) == {tup(x=3, y=5): q2}
    assert evaluate(mul(Rel("R", ("x", "y")), Cmp("<", Var("x"), Var("y"))), db)[tup(x=1, y=2)] == q1
    # Example 4: Sum[y](R(x, y) * 2 * x) = SELECT B, SUM(2 * A) ... GROUP BY B
    ex4 = Sum(("y",), mul(Rel("R", ("x", "y")), Const(2), Var("x")))
    assert evaluate(ex4, db) == {tup(y=2): 2 * q1 + 8 * q3, tup(y=5): 6 * q2}
    # Example 5, with S(C, D)
    db["R"] = {(1, 2): F(1), (5, 3): F(1)}
    db["S"] = {(0, 1): F(1), (4, 5): F(1)}
    # for A = 1 the nested sum is 1 (only C = 0 < 1): 2 < 1 fails; for A = 5 it is 6: 3 < 6 holds
    assert evaluate(EX5, db) == {tup(A=5, B=3): F(1)}


def test_binding_patterns_of_section_3_3():
    assert schema(QN) == (frozenset({"A"}), frozenset())  # the correlation variable is an input
    assert schema(EX5) == (frozenset(), frozenset({"A", "B"}))
    assert schema(mul(R, Cmp("<", Var("B"), Var("x")))) == (frozenset({"x"}), frozenset({"A", "B"}))


def test_the_introduction_example_has_a_constant_second_order_delta():
    """Section 1: Q = count(R × S); ΔR Q = count(S), ΔS ΔR Q depends on the updates only, ΔR ΔR Q = 0."""
    q = Sum((), mul(Rel("R", ("A",)), Rel("S", ("B",))))
    assert str(delta(q, "R")) == "Sum[](ΔR(A) * S(B))"
    d2 = delta(delta(q, "R"), "S")
    assert str(d2) == "Sum[](ΔR(A) * ΔS(B))"  # no relation of the database left
    assert delta(delta(q, "R"), "R") == ZERO
    assert delta(d2, "R") == ZERO and delta(d2, "S") == ZERO


VALUES = st.integers(0, 3)
CELLS = st.sampled_from([0, 1, 2, 3, None])  # data holds NULLs too: a comparison with one is not true
MULT = st.sampled_from([F(-1), F(1), F(2), F(1, 2)])


def gmr(arity: int):
    return st.dictionaries(st.tuples(*[CELLS] * arity), MULT, max_size=4)


def db_strategy():
    return st.fixed_dictionaries({"R": gmr(2), "S": gmr(2), "T": gmr(1)})


# Queries over R(A, B), S(C, D), T(E): joins, selections, projections, unions, negation, constants,
# variables as values, and nested aggregates correlated on equality or inequality, or uncorrelated.
ATOMS = [R, S, Rel("T", ("E",)), Rel("S", ("B", "D")), Rel("R", ("A", "A"))]


@st.composite
def queries(draw, depth=2):
    kind = draw(st.sampled_from(["atom", "join", "union", "sum", "nested", "neg"] if depth else ["atom"]))
    if kind == "atom":
        return draw(st.sampled_from(ATOMS))
    if kind == "neg":
        return neg(draw(queries(depth - 1)))
    if kind == "union":  # terms with the same outputs
        base = draw(st.sampled_from(ATOMS))
        return add(base, mul(base, Cmp(draw(st.sampled_from(["<", "=", "!="])), Var(base.vars[0]), Const(1))))
    if kind == "join":
        left, right = draw(st.sampled_from(ATOMS)), draw(queries(depth - 1))
        lv = sorted(schema(left)[1])
        extra = [Cmp(draw(st.sampled_from(["<", "<=", "=", ">"])), Var(lv[0]), Const(draw(VALUES))),
                 Var(lv[-1]), Const(draw(st.sampled_from([2, -1])))]
        rv = sorted(schema(right)[1])
        if rv:  # a join on an equality of variables (what unification rewrites)
            extra.append(Cmp("=", Var(lv[-1]), Var(draw(st.sampled_from(rv)))))
        return mul(left, right, *draw(st.lists(st.sampled_from(extra), max_size=2)))
    inner = draw(queries(depth - 1))
    outs = sorted(schema(inner)[1])
    if kind == "sum":
        group = draw(st.lists(st.sampled_from(outs), unique=True)) if outs else []
        return Sum(tuple(group), mul(inner, Var(outs[0])) if outs else inner)
    # nested: Sum over R of rows whose B compares with an aggregate of S, correlated or not
    corr = draw(st.sampled_from([Cmp(">", Var("A"), Var("C")), Cmp("=", Var("A"), Var("C")), Const(1)]))
    nested = Sum((), mul(S, corr, Var("D")))
    return Sum(("A",), mul(R, Assign("z", nested), Cmp(draw(st.sampled_from(["<", ">=", "="])), Var("B"), Var("z"))))


@settings(max_examples=300, deadline=None)
@given(q=queries(), db=db_strategy(), upd=db_strategy(), which=st.sampled_from(["R", "S", "T"]))
def test_delta_is_exact_for_batched_updates(q, db, upd, which):
    update = {which: upd[which]}
    before = evaluate(q, db)
    after = evaluate(q, apply_update(db, update))
    d = delta(q, which)
    assert plus(after, before, -1) == evaluate(d, db, update=update), (str(q), str(d))


@settings(max_examples=100, deadline=None)
@given(q=queries(), db=db_strategy(), upd=db_strategy())
def test_second_order_deltas_are_exact(q, db, upd):
    """Δ_S Δ_R Q maintains Δ_R Q under an update of S, with the update of R as its input."""
    ur, us = {"R": upd["R"]}, {"S": upd["S"]}
    d_r = delta(q, "R")
    first = evaluate(d_r, db, update=ur)
    moved = evaluate(d_r, apply_update(db, us), update=ur)
    # Δ_S of Δ_R Q: the ΔR atoms stay those of the R update, the ΔS atoms are the S update's
    d_rs = delta(d_r, "S")
    both = {"R": upd["R"], "S": upd["S"]}

    def only(expr, db_, upd_):
        return evaluate(expr, db_, update=upd_)

    # ΔR(x) inside d_rs must read the R batch and ΔS(x) the S batch: the two never share a name
    assert plus(moved, first, -1) == only(d_rs, db, both), (str(q), str(d_rs))


def test_printer_uses_the_papers_notation():
    assert str(EX5) == "Sum[A, B](R(A, B) * (z := Sum[](S(C, D) * (A > C) * D)) * (B < z))"
    assert str(delta(Sum((), mul(R, S)), "R")) == "Sum[](ΔR(A, B) * S(C, D))"
    assert str(neg(add(R, S))) == "-(R(A, B) + S(C, D))"
    assert isinstance(mul(R, Const(1)), Rel) and mul(R, ZERO) == ZERO and isinstance(mul(R, S), Mul)


@settings(max_examples=300, deadline=None)
@given(q=queries(), db=db_strategy(), upd=db_strategy(), which=st.sampled_from(["R", "S", "T"]))
def test_simplification_keeps_the_meaning_of_deltas(q, db, upd, which):
    from idivm.calculus.simplify import simplify

    update = {which: upd[which]}
    for expr in (q, delta(q, which), delta(delta(q, which), "S")):
        simple = simplify(expr)
        assert evaluate(simple, db, update=update) == evaluate(expr, db, update=update), (str(expr), str(simple))
        assert simplify(simple) == simple  # a fixed point


def test_simplification_applies_the_algebraic_identities():
    from idivm.calculus.simplify import simplify

    q = Sum(("A",), mul(R, Var("B")))
    assert simplify(add(q, neg(q))) == ZERO  # Q − Q
    assert str(simplify(add(q, q, mul(Const(3), q)))) == "5 * Sum[A](R(A, B) * B)"
    assert simplify(mul(R, Cmp("<", Const(1), Const(2)))) == R
    assert simplify(mul(R, Cmp("<", Const(2), Const(1)))) == ZERO
    assert simplify(Sum(("A",), Sum(("A", "B"), R))) == Sum(("A",), R)
    # Example 12's shape, batched: the delta of R(A) * R(A) * S(B) for an insert batch into R
    d = delta(mul(Rel("R", ("A",)), Rel("R", ("A",)), Rel("S", ("B",))), "R")
    assert simplify(add(d, neg(d))) == ZERO


def test_unification_joins_on_shared_variables_and_keeps_nulls_apart():
    """Section 5.3's unification: (B = C) with C local to the Sum becomes the shared variable B;
    a NULL never equals anything, so unless both columns are known never NULL, (B = B) stays."""
    from idivm.calculus.simplify import simplify

    q = Sum(("A",), mul(R, S, Cmp("=", Var("B"), Var("C")), Var("D")))
    assert str(simplify(q)) == "Sum[A](R(A, B) * S(B, D) * (B = B) * D)"
    assert str(simplify(q, not_null=frozenset({"B", "C"}))) == "Sum[A](R(A, B) * S(B, D) * D)"
    db = {"R": {(1, None): F(1), (1, 2): F(1)}, "S": {(None, 5): F(1), (2, 3): F(1)}}
    assert evaluate(simplify(q), db) == evaluate(q, db) == {tup(A=1): F(3)}
    # correlated: C goes out of scope inside the nested Sum, A is bound around it and stays
    nested = Sum(("A",), mul(R, Assign("z", Sum((), mul(S, Cmp("=", Var("A"), Var("C")), Var("D")))), Var("z")))
    assert "S(A, D)" in str(simplify(nested))
    # a group variable is never renamed away: Sum[A, C] keeps both
    assert "(A = C)" in str(simplify(Sum(("A", "C"), mul(R, S, Cmp("=", Var("A"), Var("C"))))))


def test_nested_deltas_are_range_restricted_to_the_batch():
    """Section 5.3, Example 13 batched: a nested aggregate correlated on A = C changes only for the
    A values of the batch, so its delta starts with Exists(Sum[A](ΔS(A, D))) and reads R only at
    those values; an inequality correlation has no such restriction (Section 5.1: re-evaluate)."""
    eq = Sum(("A", "B"), mul(R, Assign("z", Sum((), mul(S, Cmp("=", Var("A"), Var("C")), Var("D")))), Cmp("<", Var("B"), Var("z"))))
    d = delta(eq, "S")
    assert str(d).startswith("Sum[A, B](Exists(Sum[A](Exists(ΔS(A, D)))) * R(A, B) * ("), str(d)
    assert "Exists" not in str(delta(EX5, "S"))  # (A > C): every R tuple may change
    db = {"R": {(1, 1): F(1), (2, 0): F(1)}, "S": {(1, 2): F(1)}}
    upd = {"S": {(2, 5): F(1), (None, 1): F(-1), (1, 0): F(-1), (1, 1): F(1)}}  # (1, ·) cancels in a count
    assert evaluate(d, db, update=upd) == plus(evaluate(eq, apply_update(db, upd)), evaluate(eq, db), -1)


@settings(max_examples=400, deadline=None)
@given(corr=st.sampled_from(["=", ">", None]), op=st.sampled_from(["<", ">=", "="]), db=db_strategy(), upd=db_strategy())
def test_nested_aggregate_deltas_are_exact(corr, op, db, upd):
    """Every nesting shape of the differential test's nested family, batched, NULLs included."""
    where = Cmp(corr, Var("A"), Var("C")) if corr else Const(1)
    q = Sum(("A",), mul(R, Assign("z", Sum((), mul(S, where, Var("D")))), Cmp(op, Var("B"), Var("z"))))
    update = {"S": upd["S"]}
    assert evaluate(delta(q, "S"), db, update=update) == plus(evaluate(q, apply_update(db, update)), evaluate(q, db), -1)


def test_terms_equal_up_to_renaming_are_merged_but_not_across_the_context():
    from idivm.calculus.simplify import simplify

    a = Sum((), mul(R, Rel("S", ("B", "D"))))
    b = Sum((), mul(Rel("R", ("A2", "B2")), Rel("S", ("B2", "D2"))))
    assert str(simplify(add(a, b))) == "2 * Sum[](R(A, B) * S(B, D))"
    # inside, A is bound around the nested sums: S(A, D) filters on it, S(A2, D) does not
    inner = add(Sum((), Rel("S", ("A", "D"))), Sum((), Rel("S", ("A2", "D"))))
    q = Sum(("A",), mul(R, Assign("z", inner), Var("z")))
    assert str(simplify(q)).count("Sum[](S(") == 2
    db = {"R": {(1, 0): F(1), (2, 0): F(1)}, "S": {(1, 3): F(1), (4, 3): F(1)}}
    assert evaluate(simplify(q), db) == evaluate(q, db)
