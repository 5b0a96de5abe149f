"""Minimal failing cases the differential test once found, kept as fixed examples."""
from __future__ import annotations

import pytest

from helpers import assert_equal_multiset


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_or_conjunct_next_to_another_conjunct_on_the_same_attribute(engine, db, strategy):
    db.execute("CREATE TABLE r0 (k1 int, k2 int, a int, PRIMARY KEY (k1, k2))")
    db.execute("INSERT INTO r0 VALUES (0, 0, NULL), (0, 3, 2)")
    sql = "SELECT s0.k1 AS o0 FROM r0 AS s0 WHERE (s0.a = 3 OR s0.k1 = 0) AND s0.a BETWEEN 0 AND 2"
    engine.register_view("v", sql, strategy=strategy)
    db.execute("UPDATE r0 SET a = 3 WHERE a = 2")  # leaves the view: a no longer BETWEEN 0 AND 2
    engine.maintain("v")
    assert_equal_multiset(db, "v", sql, ["o0"])


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_uncorrelated_subquery_in_one_union_branch_keeps_other_branches(engine, db, strategy):
    """Regression: its re-derivation deleted every row of the table, other branches' too."""
    db.execute("CREATE TABLE r0 (k1 int, k2 int, PRIMARY KEY (k1, k2))")
    db.execute("INSERT INTO r0 VALUES (0, 0)")
    sql = ("SELECT s0.k1 AS o0 FROM r0 AS s0 JOIN r0 AS s1 ON s1.k1 = s0.k1 "
           "UNION ALL SELECT s0.k1 FROM r0 AS s0 WHERE EXISTS (SELECT 1 FROM r0 AS q)")
    engine.register_view("v", sql, strategy=strategy)
    db.execute("INSERT INTO r0 VALUES (1, 0)")
    engine.maintain("v")
    assert_equal_multiset(db, "v", sql, ["o0"])
