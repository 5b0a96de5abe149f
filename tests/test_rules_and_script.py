"""Rules, minimization and the Δ-script's shape, checked on their printed form."""
from __future__ import annotations

import sqlglot
from sqlglot import exp

from idivm.algebra.tables import TableInfo
from idivm.strategies.id.constraint_rewrites import (
    key_join_to_diff,
    own_key_subquery_to_filter,
    semijoin_to_diff,
    semijoined_delete_is_empty,
)
from idivm.strategies.id.minimize import RULES, dedupe_conditions, dedupe_joins, drop_true, minimize
from idivm.rules.idiff import DiffSchema, IDiff, is_not_true, pre, show

PARTS = TableInfo(schema="public", name="parts", columns=(("pid", "integer"), ("price", "numeric")), key=("pid",))


def cond(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


def diff(**kw) -> IDiff:
    base = dict(kind="+", origin="p", schema=DiffSchema(scan="p", table=PARTS, kind="+"))
    base.update(kw)
    return IDiff(**base)


def test_minimization_rules_are_listed_in_order():
    assert RULES == (dedupe_conditions, dedupe_joins, semijoin_to_diff, semijoined_delete_is_empty,
                     key_join_to_diff, own_key_subquery_to_filter, drop_true)


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
    assert not m.semijoined and m.trail[-1] == "minimize: p^post ⋉_I Δ -> Δ (C1)"
    assert "⋉" not in m.format()


# -- Figure 8, one test per rewrite ------------------------------------------------------------

TABLES = (("p", ("public", "parts")), ("p2", ("public", "parts")), ("d", ("public", "devices")))


def test_semijoin_to_diff_under_c3_for_updates():
    d = diff(kind="u", schema=DiffSchema("p", PARTS, "u", ("price",)), semijoined=True)
    assert semijoin_to_diff(d).trail[-1] == "minimize: p^post ⋉_I Δ -> Δ (C3)"
    assert semijoin_to_diff(diff(kind="-", semijoined=True)).semijoined  # not this rule's case


def test_semijoined_delete_is_empty_under_c2():
    assert semijoined_delete_is_empty(diff(kind="-", semijoined=True)) is None
    assert semijoined_delete_is_empty(diff(kind="-")) is not None


def test_key_join_of_an_insert_reads_the_diff():
    """Δ+ ⋈_I R -> Δ+ (C1): p2 is parts joined on its whole key: its columns come from Δ[p]."""
    d = diff(joined=("p2", "d"), tables=TABLES,
             where=(cond("p.pid = p2.pid"), cond("p2.price > 3"), cond("d.pid = p2.pid")))
    m = key_join_to_diff(d)
    assert m.joined == ("d",) and m.merged == ("p2",)
    assert [w.sql() for w in m.where] == ['"p"."price" > 3', 'd.pid = "p"."pid"']


def test_key_join_needs_the_whole_key_and_the_same_table():
    partial = diff(joined=("p2",), tables=TABLES, where=(cond("p.price = p2.price"),))
    assert key_join_to_diff(partial) is partial
    other = diff(joined=("d",), tables=TABLES, where=(cond("p.pid = d.pid"),))
    assert key_join_to_diff(other) is other


def test_key_join_of_a_delete_is_empty_under_c2():
    d = diff(kind="-", schema=DiffSchema("p", PARTS, "-"), joined=("p2",), tables=TABLES,
             where=(cond("p2.pid = p.pid"),))
    assert key_join_to_diff(d) is None


def test_exists_on_own_key_becomes_a_filter():
    """Δ+ ⋉_I σφ R -> σφ Δ+ and Δ+ ▷_I σφ R -> σ¬φ Δ+ (C1)."""
    semi = diff(where=(cond("EXISTS (SELECT 1 FROM public.parts AS s WHERE s.pid = p.pid AND s.price > 3)"),))
    assert [w.sql() for w in own_key_subquery_to_filter(semi).where] == ['"p"."price" > 3']
    anti = diff(where=(cond("NOT EXISTS (SELECT 1 FROM public.parts AS s WHERE p.pid = s.pid AND s.price > 3)"),))
    assert [w.sql() for w in own_key_subquery_to_filter(anti).where] == ['NOT ("p"."price" > 3) IS TRUE']
    inn = diff(where=(cond("p.pid IN (SELECT s.pid FROM public.parts AS s WHERE s.price > 3)"),))
    assert [w.sql() for w in own_key_subquery_to_filter(inn).where] == ['"p"."price" > 3']


def test_exists_on_own_key_for_deletes_under_c2():
    """Δ- ⋉_I σφ R -> ∅, Δ- ▷_I σφ R -> Δ-."""
    sub = "EXISTS (SELECT 1 FROM public.parts AS s WHERE s.pid = p.pid)"
    dele = dict(kind="-", schema=DiffSchema("p", PARTS, "-"))
    assert own_key_subquery_to_filter(diff(**dele, where=(cond(sub),))) is None
    assert own_key_subquery_to_filter(diff(**dele, where=(cond("NOT " + sub),))).where == ()


def test_exists_on_another_table_or_column_is_left_alone():
    for sub in ("EXISTS (SELECT 1 FROM public.devices AS s WHERE s.pid = p.pid)",
                "EXISTS (SELECT 1 FROM public.parts AS s WHERE s.price = p.price)",
                "EXISTS (SELECT 1 FROM public.parts AS s WHERE s.pid = p.pid AND s.price > d.x)"):
        d = diff(where=(cond(sub),))
        assert own_key_subquery_to_filter(d) is d


# -- footnote 6: many-to-many joins ----------------------------------------------------------

def _plan(conds: list[str], tables: dict[str, TableInfo]):
    from idivm.algebra.plan import Join, Scan

    aliases = list(tables)
    node = Scan(aliases[0], tables[aliases[0]])
    for a in aliases[1:]:
        node = Join(left=node, right=Scan(a, tables[a]))
    node.conjuncts = [cond(c) for c in conds]
    return node


DEVICES = TableInfo(schema="public", name="devices", columns=(("did", "text"), ("category", "text")), key=("did",))
DP = TableInfo(schema="public", name="devices_parts", columns=(("did", "text"), ("pid", "text")), key=("did", "pid"))


def test_key_joins_are_many_to_one_from_a_root():
    from idivm.algebra.functional import many_to_many

    tables = {"dp": DP, "d": DEVICES, "p": PARTS}
    assert many_to_many(_plan(["dp.did = d.did", "dp.pid = p.pid"], tables)) is None


def test_non_key_and_theta_joins_are_many_to_many():
    from idivm.algebra.functional import many_to_many

    tables = {"d": DEVICES, "p": PARTS}
    assert "many-to-many" in many_to_many(_plan(["d.category = p.price"], tables))
    assert "many-to-many" in many_to_many(_plan(["p.price > d.did"], tables))
    assert "many-to-many" in many_to_many(_plan([], tables))  # a cross product
    # part of a composite key is not enough: dp's rows per device are many
    assert "many-to-many" in many_to_many(_plan(["dp.did = d.did"], {"d": DEVICES, "dp": DP, "p": PARTS}))


def test_catalog_head_names_the_newest_migration():
    from idivm.catalog import migrate

    versions = sorted(p.stem.split("_")[0] for p in (migrate.MIGRATIONS / "versions").glob("0*.py"))
    assert migrate.HEAD == versions[-1]
