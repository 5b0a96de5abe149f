"""Rules, minimization and the Δ-script's shape, checked on their printed form."""
from __future__ import annotations

import sqlglot
from sqlglot import exp

from idivm.algebra.tables import TableInfo
from idivm.compile.minimize import RULES, dedupe_conditions, dedupe_joins, drop_true, minimize, semijoin_to_diff
from idivm.rules.idiff import DiffSchema, IDiff, is_not_true, pre, show

PARTS = TableInfo(schema="public", name="parts", columns=(("pid", "integer"), ("price", "numeric")), key=("pid",))


def cond(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


def diff(**kw) -> IDiff:
    base = dict(kind="+", origin="p", schema=DiffSchema(scan="p", table=PARTS, kind="+"))
    base.update(kw)
    return IDiff(**base)


def test_minimization_rules_are_listed_in_order():
    assert RULES == (drop_true, dedupe_conditions, dedupe_joins, semijoin_to_diff)


def test_drop_true_removes_only_true():
    d = diff(where=(exp.true(), cond("p.price > 1")))
    assert [w.sql() for w in drop_true(d).where] == ["p.price > 1"]
    assert drop_true(diff(where=(cond("p.price > 1"),))).where == (cond("p.price > 1"),)


def test_dedupe_conditions_keeps_first_occurrence():
    d = diff(where=(cond("p.price > 1"), cond("d.x = p.pid"), cond("p.price > 1")))
    assert [w.sql() for w in dedupe_conditions(d).where] == ["p.price > 1", "d.x = p.pid"]


def test_dedupe_joins_drops_repeats_and_the_origin():
    d = diff(joined=("a", "b", "a", "p"))
    assert dedupe_joins(d).joined == ("a", "b")


def test_minimize_is_idempotent():
    d = diff(where=(exp.true(), cond("p.price > 1"), cond("p.price > 1")), joined=("a", "a"))
    once = minimize(d)
    assert minimize(once) == once


def test_pre_marks_only_the_origin_scan_and_prints_readably():
    e = pre(cond("p.price > q.price"), "p")
    assert show(e) == '"pre:p".price > q.price'
    assert show(is_not_true(cond("p.price > 1"))) == "NOT (p.price > 1) IS TRUE"


def test_diff_schema_labels_follow_the_paper():
    assert DiffSchema("p", PARTS, "+").label() == "Δ+_parts(pid; price_post)"
    assert DiffSchema("p", PARTS, "u", ("price",)).label() == (
        "Δu_parts(pid; price_pre; price_post)  [non-conditional, scan p]")


def test_conj_keeps_or_inside_and():
    """Regression: unnested conjuncts were re-joined as `a OR b AND c` (found by the differential test)."""
    from idivm.rules.idiff import conj

    e = conj([cond("p.a = 3 OR p.k = 0"), cond("p.a BETWEEN 0 AND 2")])
    assert e.sql() == "((p.a = 3 OR p.k = 0) AND p.a BETWEEN 0 AND 2)"


def test_semijoin_rewrite_removes_the_base_table_access():
    d = diff(semijoined=True)
    assert "p^post ⋉_I Δ[p]" in d.format()
    m = minimize(d)
    assert not m.semijoined and m.trail[-1] == "minimize: p^post ⋉_I Δ -> Δ (C3)"
    assert "⋉" not in m.format()
