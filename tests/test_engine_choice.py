"""`--engine auto` (operate/engine_choice.py): the cost model as a pure function, and the engine
policy as users set it. Spark itself is not needed: the cost model decides before anything runs."""
from __future__ import annotations

import pytest

from idivm.errors import IdivmError
from idivm.operate.engine_choice import CostModel, break_even, choose_engine, per_change_cost

M = CostModel()


def test_small_and_default_batches_stay_on_postgres_here():
    """On the 2-core machine this model was measured on, the benchmarks' default batches (200 and
    10,000 changes) stay on PostgreSQL, warm session or not."""
    for n in (1, 200, 10_000):
        for warm in (True, False):
            assert choose_engine(n, M.pg_per_change_s, True, 2, warm, M).engine == "postgres"


def test_spark_wins_where_its_cores_pay_for_its_fixed_cost():
    c = 200e-6  # an expensive view: 200 µs per change in PostgreSQL
    n = break_even(c, 32, True, M)
    assert n is not None and n > 0
    assert choose_engine(n + 1, c, True, 32, True, M).engine == "spark"
    assert choose_engine(n - 1, c, True, 32, True, M).engine == "postgres"
    cold = break_even(c, 32, False, M)
    assert cold > n  # a cold session's start must be earned back too
    assert break_even(M.pg_per_change_s, 1, True, M) is None  # one core: never cheaper


def test_nothing_offloadable_never_goes_to_spark():
    choice = choose_engine(10 ** 9, 1.0, False, 1000, True, M)
    assert choice.engine == "postgres" and choice.spark_s is None and "none of its diff sources" in str(choice)


def test_the_view_s_own_large_batches_set_its_cost_per_change():
    assert per_change_cost(36.0, 200, M)[0] == M.pg_per_change_s  # small batch: fixed costs dominate, default
    c, source = per_change_cost(5030.0, 100_000, M)
    assert c == pytest.approx(5e-5) and "measured" in source


def test_the_cost_model_is_configurable_and_checked(monkeypatch):
    monkeypatch.setenv("IDIVM_COST_MODEL", "spark_fixed_s=0.2 apply_share=0.1")
    m = CostModel.from_env()
    assert m.spark_fixed_s == 0.2 and m.apply_share == 0.1
    monkeypatch.setenv("IDIVM_COST_MODEL", "spark_fixd_s=1")
    with pytest.raises(IdivmError, match="spark_fixd_s=1.*spark_fixed_s"):
        CostModel.from_env()


def test_engine_policy_auto_reports_its_choice(engine, db):
    db.execute("CREATE TABLE t (k int PRIMARY KEY, x int)")
    engine.register_view("v", "SELECT k, x FROM t WHERE x > 0")
    policy = engine.set_policy("v", engine="auto")
    assert policy.engine == "auto" and "engine auto" in str(policy)
    db.execute("INSERT INTO t SELECT g, g FROM generate_series(1, 50) g")
    text = engine.explain("v")
    assert "engine policy: auto" in text and "--engine auto for the waiting batch: postgres" in text
    report = engine.maintain("v")
    assert report.engine == "postgres" and report.chosen.startswith("auto: postgres (estimated postgres")
    assert "auto: postgres" in str(report)
    assert engine.maintain("v", engine="postgres").chosen is None  # a run that names its engine
    with pytest.raises(IdivmError, match="unknown engine 'fast': choose postgres, spark or auto"):
        engine.set_policy("v", engine="fast")
    with pytest.raises(IdivmError, match="unknown engine 'fast'"):
        engine.maintain("v", engine="fast")
    assert engine.status()[0].policy.engine == "auto"
    assert engine.set_policy("v", reset=True).engine is None


def test_auto_without_spark_here_stays_on_postgres_and_says_why(engine, db, monkeypatch):
    monkeypatch.setenv("IDIVM_SPARK_JDBC_JAR", "/nonexistent/postgresql.jar")
    monkeypatch.setenv("IDIVM_COST_MODEL", "pg_fixed_s=100")  # Spark would win, were it here
    db.execute("CREATE TABLE t (k int PRIMARY KEY, x int)")
    engine.register_view("v", "SELECT k, x FROM t")
    db.execute("INSERT INTO t VALUES (1, 1)")
    report = engine.maintain("v", engine="auto")
    assert report.engine == "postgres" and "Spark is not available here" in report.chosen


def test_a_view_s_engine_choice_shows_its_estimates(engine, db, monkeypatch):
    """Engine.engine_choice: what `--engine auto` would do with the batch waiting now, from the
    view's catalog row and its stored program, before anything runs."""
    from idivm.engines.spark.settings import SparkSettings

    monkeypatch.setenv("IDIVM_COST_MODEL", "pg_fixed_s=100")  # PostgreSQL made dear: Spark should win
    db.execute("CREATE TABLE t (k int PRIMARY KEY, x int)")
    db.execute("CREATE TABLE u (k int PRIMARY KEY, y int)")
    engine.register_view("v", "SELECT t.k, t.x, u.y FROM t JOIN u ON u.k = t.x")
    db.execute("INSERT INTO t SELECT g, g FROM generate_series(1, 10) g")
    choice = engine.engine_choice("v")
    assert choice.postgres_s >= 100
    try:
        SparkSettings.from_env(engine.dsn).check()
    except IdivmError:
        assert choice.engine == "postgres" and "Spark is not available here" in choice.why
    else:
        assert choice.engine == "spark" and 0 < choice.spark_s < choice.postgres_s, choice
    monkeypatch.delenv("IDIVM_COST_MODEL")
    assert engine.engine_choice("v").engine == "postgres"  # ten changes: PostgreSQL, as measured here
