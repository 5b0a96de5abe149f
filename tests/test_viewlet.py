"""The viewlet transform's maps and trigger programs (strategies/higher_order/viewlet.py), run on
the reference evaluator: after every batch of signed changes to any relation, each map equals its
definition, and the triggers read only the batch and other maps, never a base relation."""
from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given, settings, strategies as st

from idivm.calculus.evaluate import apply_update, evaluate
from idivm.calculus.simplify import factorize
from idivm.calculus.expr import Cmp, Const, Rel, Sum, Var, add, mul
from idivm.compiler import compile_view
from idivm.errors import UnsupportedQuery
from idivm.strategies.higher_order import viewlet
from idivm.strategies.higher_order.viewlet import compile_query, expand
from stages import FIXTURES, FixedSchema

R, S, T = Rel("R", ("A", "B")), Rel("S", ("B", "C")), Rel("T", ("C", "D"))
VALUES = st.sampled_from([0, 1, 2, None])  # NULLs too: they never join
MULT = st.sampled_from([F(-1), F(1), F(2)])


def gmr(arity):
    return st.dictionaries(st.tuples(*[VALUES] * arity), MULT, max_size=3)


DBS = st.fixed_dictionaries({"R": gmr(2), "S": gmr(2), "T": gmr(2)})

QUERIES = [
    Sum((), mul(R, S)),  # count of a join
    Sum(("A",), mul(R, S, Var("C"))),  # SUM(C) GROUP BY A over a join
    Sum(("A", "D"), mul(R, S, T)),  # a three-way chain
    Sum((), mul(R, S, T, Cmp("<", Var("A"), Var("D")))),  # an inequality across the chain
    Sum(("B",), mul(R, Rel("R", ("A2", "B")), Var("A"))),  # a self-join
    Sum(("A",), mul(R, Cmp("=", Var("B"), Const(1)), Var("B"))),  # one relation, a selection
    Sum((), mul(R, Rel("R", ("A2", "B2")), Cmp("=", Var("B"), Var("B2")))),  # a self-join on an equality
    Sum(("A",), mul(R, Rel("S", ("C2", "D2")), Cmp("=", Var("B"), Var("C2")), Var("D2"))),  # join by comparison
]


def _maps_of(compiled, db):
    """Every map's contents from its definition, in the positional form trigger programs read."""
    out = {}
    for m in compiled.maps:
        g = evaluate(m.query, db)
        out[m.name] = {tuple(dict(t)[k] for k in m.keys): v for t, v in g.items()}
    return out


@settings(max_examples=200, deadline=None)
@given(q=st.sampled_from(QUERIES), db=DBS, batches=st.lists(st.tuples(st.sampled_from("RST"), DBS), max_size=3))
def test_trigger_programs_keep_every_map_equal_to_its_definition(q, db, batches):
    compiled = compile_query(q)
    maps = _maps_of(compiled, db)
    for rel, batch in batches:
        update = {rel: batch[rel]}
        increments = [(name, evaluate(e, maps, update=update)) for name, e in compiled.triggers.get(rel, [])]
        for (_, e), (_, inc) in zip(compiled.triggers.get(rel, []), increments):  # what to_steps runs: the monomials
            monomials = [mul(Const(c), Sum(g, mul(*fs)) if g is not None else mul(*fs)) for c, g, fs in expand(e)]
            assert evaluate(add(*monomials), maps, update=update) == inc, str(e)
            assert evaluate(factorize(e), maps, update=update) == inc, str(e)  # what explain prints
        for name, inc in increments:  # every increment reads the maps from before the batch
            m = next(x for x in compiled.maps if x.name == name)
            positional = {tuple(dict(t)[k] for k in m.keys): v for t, v in inc.items()}
            maps[name] = apply_update({name: maps[name]}, {name: positional})[name]
        db = apply_update(db, update)
        assert maps == _maps_of(compiled, db), compiled.format()


def test_the_introduction_example_needs_two_first_order_maps():
    """Section 1: count(R × S) is maintained from count(R) and count(S); no trigger reads a base table."""
    compiled = compile_query(Sum((), mul(Rel("R", ("A",)), Rel("S", ("B",)))))
    assert [str(m.query) for m in compiled.maps] == ["Sum[](R(A) * S(B))", "Sum[](S(B))", "Sum[](R(A))"]
    text = compiled.format()
    assert "M1 += Sum[](ΔR(A) * M2) + Sum[](ΔR(A) * ΔS(B))" not in text  # one relation per trigger
    for stmts in compiled.triggers.values():
        for _, e in stmts:
            assert " R(" not in f" {e}" and " S(" not in f" {e}"


def test_a_chain_join_decomposes_into_maps_without_cross_products():
    compiled = compile_query(Sum(("A", "D"), mul(R, S, T)))
    defs = {str(m.query) for m in compiled.maps}
    assert "Sum[A, B, C, D](R(A, B) * T(C, D))" not in defs  # R and T share no variable
    assert {"Sum[B, D](S(B, C) * T(C, D))", "Sum[A, C](R(A, B) * S(B, C))", "Sum[A, B](R(A, B))",
            "Sum[C, D](T(C, D))", "Sum[B, C](S(B, C))"} <= defs
    assert "M1 += Sum[A, D](ΔS(B, C) * M5(A, B) * M3(C, D))" in compiled.format()


def test_a_self_join_reads_one_map_through_renaming():
    """Unification makes both sides of R ⋈ R on B the same relation up to renaming: the delta's two
    terms read one map of R's rows per B (duplicate map elimination up to renaming)."""
    q = Sum((), mul(R, Rel("R", ("A2", "B2")), Cmp("=", Var("B"), Var("B2"))))
    compiled = compile_query(q, not_null=frozenset({"A", "B", "A2", "B2"}))
    assert [str(m.query) for m in compiled.maps] == ["Sum[](R(A, B) * R(A2, B))", "Sum[B](R(A2, B))"]
    assert compiled.maps[1].uses, compiled.format()
    # Example 12's shape, batched: the two first-order terms are one term twice
    (_, increment), = [t for t in compiled.triggers["R"] if t[0] == "M1"]
    assert str(increment) == "2 * Sum[](ΔR(A, B) * M2(B)) + Sum[](ΔR(A, B) * ΔR(A2, B))"
    # and factorized, as explain prints it: (2 * R(x) + 1) * S(B)
    assert "M1 += Sum[](ΔR(A, B) * (2 * M2(B) + Sum[B](ΔR(A2, B))))" in compiled.format()


def test_a_view_needing_more_maps_than_the_bound_is_refused_with_the_number(monkeypatch):
    """The viewlet transform stops at viewlet.MAX_MAPS maps and names the bound; auto then takes id."""
    schema = FixedSchema((FIXTURES / "schema.sql").read_text())
    sql = ("SELECT d.category, sum(p.price) AS cost FROM devices AS d JOIN devices_parts AS dp ON dp.did = d.did "
           "JOIN parts AS p ON p.pid = dp.pid GROUP BY d.category")
    assert compile_view(sql, schema, "higher-order").strategy == "higher-order"
    monkeypatch.setattr(viewlet, "MAX_MAPS", 2)
    with pytest.raises(UnsupportedQuery, match="would keep more than 2 maps for this view"):
        compile_view(sql, schema, "higher-order")
    assert compile_view(sql, schema, "auto").strategy == "id"
