"""What the Spark engine takes off a Δ-program step (program/offload.py), as pure tree
functions: no Spark and no database needed. The rewrites' meaning is checked on PostgreSQL in
test_spark_engine.py (test_steps_rewritten_to_read_staged_rows_keep_their_meaning)."""
from __future__ import annotations

from sqlglot import exp

from idivm.engines.postgres.render import render_step, sql
from idivm.program.offload import offload
from idivm.program.kinds_needed import yields_nothing
from idivm.program import relations as R
from idivm.program.steps import DeleteMatching, InsertRows
from idivm.program.trees import alias, all_of, col, eq, select, string, union_all


def _insert_source(kind: str) -> exp.Select:
    return select([alias(col("b", "k"), "k")], [R.captured_delta(1, "public.a", alias="d"), R.base("public", "b", alias="b")],
                  [eq(col("d", "kind"), string(kind)), eq(col("b", "k"), col("d", "post__k"))])


def test_a_query_over_kinds_the_batch_lacks_yields_nothing():
    q = _insert_source("I")
    assert yields_nothing(q, {1: {"U"}}) and yields_nothing(q, {})
    assert not yields_nothing(q, {1: {"I", "U"}})
    both = union_all([_insert_source("I"), _insert_source("U")])
    assert not yields_nothing(both, {1: {"U"}}) and yields_nothing(both, {1: {"D"}})
    counted = select([alias(exp.Count(this=exp.Star()), "n")], [R.captured_delta(1, "public.a", alias="d")], [eq(col("d", "kind"), string("I"))])
    assert not yields_nothing(counted, {1: {"U"}})  # one row (0) even over no rows


def test_a_matching_delete_sends_its_join_to_spark_and_keeps_the_target_side():
    step = DeleteMatching(phase=0, purpose="test", target=R.view("public", "v", alias="v"),
                          using=[R.captured_delta(1, "public.a", alias="d"), R.base("public", "b", alias="b")],
                          condition=all_of([eq(col("b", "k"), col("v", "bk")), eq(col("d", "pre__k"), col("b", "k")),
                                            eq(col("d", "kind"), string("D"))]))
    o = offload(step)
    assert o is not None
    assert sql(o.query) == ('SELECT "b"."k" AS "c0" FROM "pg_temp"."idivm_delta_1" AS "d", "public"."b" AS "b" '
                            'WHERE ("d"."pre__k" = "b"."k") AND ("d"."kind" = \'D\')')
    text = render_step(o.rewrite("idivm_staged_0"))
    assert 'USING "pg_temp"."idivm_staged_0" AS "idivm_staged"' in text
    assert 'WHERE ("idivm_staged"."c0" = "v"."bk")' in text


def test_what_reads_only_the_batch_or_what_the_transaction_wrote_is_not_offloaded():
    by_ids = DeleteMatching(phase=0, purpose="by IDs", target=R.view("public", "v", alias="v"),
                            using=[R.captured_delta(1, "public.a", alias="d")], condition=eq(col("v", "k"), col("d", "pre__k")))
    assert offload(by_ids) is None  # no join to take off PostgreSQL
    from_view = InsertRows(phase=2, purpose="from the view", target=R.view("public", "w"), columns=["k"],
                           source=select([col("v", "k")], [R.captured_delta(1, "public.a", alias="d"), R.view("public", "v", alias="v")]))
    assert offload(from_view) is None  # the view is written by this transaction: Spark cannot see it


def test_a_matching_delete_whose_own_conditions_read_a_scratch_relation_stays_in_postgres():
    """A condition that does not name the target goes into the offloaded query: what it reads must be
    readable there too (a semijoin over a part reads the part's i-diff, a scratch relation the
    maintenance wrote; CI's nested family drew one inside an EXISTS)."""
    part_changed = exp.Exists(this=select([exp.Literal.number(1)], [R.scratch("idivm_delta_part_1", alias="p")],
                                          [eq(col("p", "post__k"), col("b", "k"))]))
    step = DeleteMatching(phase=0, purpose="test", target=R.view("public", "v", alias="v"),
                          using=[R.captured_delta(1, "public.a", alias="d"), R.base("public", "b", alias="b")],
                          condition=all_of([eq(col("b", "k"), col("v", "bk")), eq(col("d", "pre__k"), col("b", "k")),
                                            part_changed]))
    assert offload(step) is None


def _over_r(where: str) -> exp.Select:
    """SELECT r.k, r.x FROM r WHERE <where>, every table a base table (r, r2 and s as in TYPES)."""
    def bound(node):
        return R.base("public", node.name, node.alias or None) if isinstance(node, exp.Table) else node

    return exp.select("r.k", "r.x").from_(R.base("public", "r", "r")).where(exp.condition(where).transform(bound))


TYPES = {"r": {"k": "integer", "x": "numeric", "u": "uuid"}, "s": {"k": "integer", "y": "integer"}}


def _column_type(rel, column):
    return TYPES.get(rel.name, {}).get(column)


def test_values_spark_holds_as_text_are_passed_on_or_compared_never_computed():
    """An unconstrained numeric (read as its text) passes on as an output and through EXISTS, is
    compared as a checked decimal(38,18), and is refused where its value would be computed on or
    compared as a text: an IN subquery's or a scalar subquery's output, an aggregate."""
    from idivm.engines.spark.spark_sql import spark_sql
    from idivm.errors import UnsupportedQuery

    compared = spark_sql(_over_r("r.x > 1.5 AND EXISTS (SELECT r2.x FROM r AS r2 WHERE r2.k = r.k)"), _column_type)
    assert "CAST(idivm_a0.x AS DECIMAL(38, 18))" in compared and "RAISE_ERROR" in compared
    assert spark_sql(_over_r("r.k IN (SELECT s.y FROM s)"), _column_type)  # integers: as they are
    for where in ("r.k IN (SELECT r2.x FROM r AS r2)", "r.k > (SELECT max(r2.x) FROM r AS r2)", "r.x * 2 > 3",
                  "r.u = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"):  # an uppercase uuid literal: not its text
        try:
            spark_sql(_over_r(where), _column_type)
        except UnsupportedQuery as e:
            assert "as its text" in str(e)
        else:
            raise AssertionError(f"{where} was not refused")
    # merged by DISTINCT or UNION, 1.0 and 1.00 are one row in PostgreSQL and two texts on Spark
    branch = exp.select("r.x").from_(R.base("public", "r", "r"))
    assert spark_sql(exp.union(branch.copy(), branch.copy(), distinct=False), _column_type)
    for merged in (branch.copy().distinct(), exp.union(branch.copy(), branch.copy(), distinct=True)):
        try:
            spark_sql(merged, _column_type)
        except UnsupportedQuery as e:
            assert "as its text" in str(e)
        else:
            raise AssertionError(f"{merged.sql()} was not refused")
