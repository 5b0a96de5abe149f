"""Test database fixtures (README.md: the test command and its knobs).

Server: IDIVM_TEST_DSN if set, else a server on localhost:5432 if one
answers, else a throwaway cluster from the system binaries, else
testcontainers when Docker is available. IDIVM_TEST_SERVER=cluster skips
the first two (to exercise the path a machine without a server takes).
Every test run works in fresh databases it creates and drops.
"""
from __future__ import annotations

import compileall
import contextlib
import gc
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# idivm's bytecode, written once before any test process imports it. Where PYTHONDONTWRITEBYTECODE
# is set (this machine sets it), Python writes none, and every process compiled idivm's modules from
# source again: each pytest-xdist worker, and each of the 70-odd `idivm` command-line runs the tests
# start (0.8 s to import the CLI and the API from source against 0.5 s from bytecode; a sampled run
# spent about 25 s compiling; docs/benchmarks.md, "The test suite"). Up-to-date files are skipped.
compileall.compile_dir(importlib.util.find_spec("idivm").submodule_search_locations[0], quiet=1)

import idivm  # noqa: E402
from drop_databases import drop_databases
from helpers import CODEGEN_OFF, JVM_JIT

# The tests' Spark batches are tiny and each test process starts its own JVM: its second compiler
# (C2), 16 tasks per shuffle and Spark's code generation (Java source for each plan, compiled by
# Janino) cost more CPU than they save (docs/benchmarks.md, "The test suite"). None changes what
# Spark computes: two partitions still split every shuffle, and Spark's interpreted evaluation is
# the one its code generation falls back to (Spark's own suite runs both).
# test_spark_engine.py's main test runs with code generation (helpers.CODEGEN_OFF removed). A user's
# IDIVM_SPARK_CONF wins. C1 alone gets a 48 MB code cache where tiered compilation gets 240 MB: a
# worker's JVM that ran many Spark tests filled it ("Out of space in CodeCache for method handle
# intrinsic", the JVM gone for the rest of the run), so it gets the tiered size back.
os.environ.setdefault("IDIVM_SPARK_CONF",
                      f"spark.driver.extraJavaOptions='{JVM_JIT}' "
                      f"spark.sql.shuffle.partitions=2 {CODEGEN_OFF}")


# No JIT in the tests' sessions (PGOPTIONS reaches every libpq connection, the CLI's too): their tables
# are small and never analyzed, so the planner's guesses for a recomputation or a fill over a few of
# them pass jit_above_cost, and compiling such a query took longer than running it (docs/benchmarks.md,
# "The test suite"). The maintenance functions run without JIT anyway (server_maintenance.py).
os.environ["PGOPTIONS"] = f"{os.environ.get('PGOPTIONS', '')} -c jit=off".strip()


# A test process compiles thousands of views, and every sqlglot tree is a reference cycle (each node
# points at its parent), so each registration's trees are freed only by the collector and many
# outlive a young generation: Python's default thresholds then ran a full collection of the
# worker's whole heap every few registrations (the outer-join family: 5.7 s of its 41 s in the
# collector, 4.6 s of it in full collections). Full collections a hundred times rarer (each after
# 7 million allocations) cut that to 1.1 s; the garbage still goes, in younger collections or the
# next full one (docs/benchmarks.md, "The test suite").
gc.set_threshold(700, 10, 1000)


def _answers(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def server_dsn():
    """A DSN for a maintenance database (postgres) on a server the tests may create databases on."""
    forced = os.environ.get("IDIVM_TEST_SERVER") == "cluster"
    if os.environ.get("IDIVM_TEST_DSN") and not forced:
        yield os.environ["IDIVM_TEST_DSN"]
        _REAPER.drop_all(detached=True)
        return
    local = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
    if not forced and _answers(local):
        yield local
        _REAPER.drop_all(detached=True)
        return
    from idivm.embedded import start_cluster, stop_cluster

    tmp = Path(tempfile.mkdtemp(prefix="idivm-test-"))
    try:
        datadir = tmp / "pgdata"
        if os.geteuid() == 0:
            shutil.chown(tmp, "postgres")
        dsn = start_cluster(datadir, quiet=True)
        with psycopg.connect(dsn, autocommit=True) as c:  # thrown away after the run: no crash to survive
            for setting in ("fsync", "full_page_writes"):
                c.execute(f"ALTER SYSTEM SET {setting} = off")
            c.execute("SELECT pg_reload_conf()")
        yield dsn
        _REAPER.pending.clear()  # the cluster and its databases go as a whole
        stop_cluster(datadir)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    except idivm.IdivmError:
        pass
    try:
        from testcontainers.postgres import PostgresContainer
    except ImportError:
        pytest.skip("no PostgreSQL available: set IDIVM_TEST_DSN, run a server on localhost:5432, "
                    "install the PostgreSQL binaries, or install testcontainers with Docker")
    with PostgresContainer("postgres:15") as pg:
        yield make_conninfo(host=pg.get_container_host_ip(), port=pg.get_exposed_port(5432),
                            user=pg.username, password=pg.password, dbname=pg.dbname)


def _with_db(dsn: str, db: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = db
    return make_conninfo(**params)


class _Reaper:
    """Test databases dropped at the end of the run, or a batch at a time where the disk is short.
    PostgreSQL 15 checkpoints for every DROP DATABASE (all of the server's dirty buffers written and
    synced, and the drop waits for it): one drop per test made the run's four workers checkpoint
    hundreds of times while the others wrote, and batches of 16 drops still checkpointed about
    fifty times amid the other workers' writes (the server under a third of its time stalled on
    I/O; docs/benchmarks.md, "The test suite"). At the end, the checkpoints have little left to
    write. A test database holds about 10 MB, so up to KEEP of a worker's are kept where the server's
    disk has KEEP_FREE bytes to spare (a server whose disk this process cannot see drops a batch
    at a time). Drops go out from several connections at once and share the checkpoints in progress;
those of the end of the run go out from a process that outlives it."""

    BATCH = 16  # where the disk is short or unknown
    KEEP = 400  # at most, where it has room
    KEEP_FREE = 20 * 2**30

    def __init__(self):
        self.pending: list[tuple[str, str]] = []  # (server DSN, database)
        self.limit: int | None = None

    def drop_later(self, server_dsn: str, name: str) -> None:
        self.pending.append((server_dsn, name))
        if self.limit is None:
            self.limit = self.KEEP if self._free_bytes(server_dsn) >= self.KEEP_FREE else self.BATCH
        if len(self.pending) >= self.limit:
            self.drop_all()

    @staticmethod
    def _free_bytes(server_dsn: str) -> int:
        """Free bytes where the server keeps its data, or 0 when this process cannot see them
        (a server elsewhere, or a data directory it may not read)."""
        if conninfo_to_dict(server_dsn).get("host") not in ("127.0.0.1", "localhost", "::1", None):
            return 0
        try:
            with psycopg.connect(server_dsn, autocommit=True) as c:
                data = c.execute("SELECT current_setting('data_directory')").fetchone()[0]
            return shutil.disk_usage(data).free
        except (psycopg.Error, OSError):
            return 0

    def drop_all(self, detached: bool = False) -> None:
        """Drop the pending databases; `detached`: from a process of their own that outlives the run
        (its end: nothing waits for those drops' checkpoints; drop_databases.py)."""
        batch, self.pending = self.pending, []
        if batch and detached:
            dropper = subprocess.Popen([sys.executable, str(Path(__file__).with_name("drop_databases.py"))],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True, text=True)
            dropper.stdin.write(json.dumps(batch))
            dropper.stdin.close()
        else:
            drop_databases(batch)


_REAPER = _Reaper()


@contextlib.contextmanager
def _database(server_dsn: str, prefix: str, template: str | None = None):
    """A new database (a copy of `template` if given) for the duration; its DSN. It is dropped
    later, with others (_Reaper), by the end of the session (server_dsn)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        # A test database is dropped after the test: a commit need not wait for its WAL to reach the
        # disk (what a crash could lose, no test keeps), and visibility is the same either way.
        c.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        yield _with_db(server_dsn, name)
    finally:
        _REAPER.drop_later(server_dsn, name)


@pytest.fixture(scope="session")
def catalog_template(server_dsn):
    """A database with idivm's catalog installed, made once per test process (each pytest-xdist
    worker has its own): a test that asks for `engine` gets a copy of it (CREATE DATABASE ...
    TEMPLATE copies its files) instead of running the catalog's migration again."""
    with _database(server_dsn, "idivm_template") as dsn:
        e = idivm.connect(dsn)
        e.init()
        e.close()
        yield conninfo_to_dict(dsn)["dbname"]


@pytest.fixture
def fresh_db(server_dsn, request):
    """Create a fresh database; yield its DSN; drop it. When the test uses `engine` too, the
    database is a copy of the session's catalog template (idivm installed); else it is empty."""
    template = request.getfixturevalue("catalog_template") if "engine" in request.fixturenames else None
    with _database(server_dsn, "idivm_test", template) as dsn:
        yield dsn


@pytest.fixture
def engine(fresh_db):
    """An engine on the fresh database, whose catalog came from the template (fresh_db)."""
    e = idivm.connect(fresh_db)
    yield e
    e.close()


@pytest.fixture
def db(fresh_db):
    """An autocommit psycopg connection to the fresh database."""
    with psycopg.connect(fresh_db, autocommit=True) as c:
        yield c


@pytest.fixture
def scratch_databases(server_dsn, monkeypatch):
    """The benchmarks' scratch databases (bench/common.scratch_database) made as test databases are,
    and dropped with them at the end (_Reaper): a benchmark's own DROP DATABASE checkpoints the
    whole server amid the other workers' writes and waits for it (on a server with fsync on, a
    smoke test of a few seconds waited up to a minute; docs/benchmarks.md, "The test suite")."""
    import importlib
    import pkgutil

    import idivm.bench

    @contextlib.contextmanager
    def scratch_database(dsn, keep=False):
        with _database(server_dsn, "idivm_bench") as db_dsn:
            with psycopg.connect(db_dsn) as c:
                version = c.execute("SHOW server_version").fetchone()[0]
            yield db_dsn, version

    for m in pkgutil.iter_modules(idivm.bench.__path__):
        module = importlib.import_module(f"idivm.bench.{m.name}")
        if hasattr(module, "scratch_database"):
            monkeypatch.setattr(module, "scratch_database", scratch_database)


@pytest.fixture(scope="module")
def module_db(server_dsn):
    """One fresh database shared by a module's (hypothesis) examples."""
    with _database(server_dsn, "idivm_test") as dsn:
        yield dsn


def pytest_xdist_auto_num_workers(config):
    """`-n auto` starts two workers per core, not one: a test spends about half its time waiting
    for PostgreSQL or Spark, whose processes are not the worker's (PYTEST_XDIST_AUTO_NUM_WORKERS
    overrides, as pytest-xdist documents)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return 2 * (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


# fixtures that give a test a database or a cluster of its own (test_scheduler_restart.py's, test_housekeeping.py's)
DATABASE_FIXTURES = {"server_dsn", "fresh_db", "engine", "db", "module_db", "cluster", "data_dir"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the xdist_group marks added here
def pytest_collection_modifyitems(config, items):
    """Tests that use no database fixture, and start no cluster themselves (marked `cluster`), are
    marked `quick`: `pytest -m quick` runs the stages that need no database (parsing, plans,
    rules, calculus, programs, layering) in seconds. The `slow` ones are moved to the front.

    Every test whose id names Spark is marked `spark` and put in a pytest-xdist group (the
    README's `--dist loadgroup` runs a group in one worker): a process that runs Spark starts a
    JVM, whose start and warm-up cost about as much CPU as a minute of the suite's other work, so
    two workers start one each instead of every worker its own. The differential test's Spark
    sample is a group of its own (its mark), the other Spark tests the group `spark`: about four
    minutes of work each, where one group of both was the longest path through the run."""
    for item in items:
        if not DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("cluster") is None:
            item.add_marker(pytest.mark.quick)
        if "spark" in item.nodeid.lower():
            item.add_marker(pytest.mark.spark)
        if item.get_closest_marker("spark") is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("spark"))
    # The tests marked `slow` (a minute or so each) go first: pytest-xdist's `--dist loadgroup` (the
    # README's test command) then hands them out one per idle worker, after the Spark group, which it
    # sends first as the largest unit, while the short ones fill the gaps, instead of one of them
    # starting last and running alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session):
    """A worker of `--dist loadgroup` warns when pytest-xdist did not group the Spark tests (it marks
    a grouped test's id with `@group`): with pytest 9.2 it silently stopped (pytest-xdist#1386), and
    each worker started its own JVM, a minute of the run's CPU each (pyproject.toml pins pytest)."""
    if getattr(session.config.option, "loadgroup", False) and any(
            item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid for item in session.items):
        warnings.warn("pytest-xdist did not group the tests marked xdist_group: each worker will start its own "
                      "Spark JVM (check the pytest / pytest-xdist versions against pyproject.toml's pin)")


DIFFERENTIAL_STATS: dict = {}  # what the differential test's families added up to (test_differential_spj.py)


def _add(total: dict, more: dict) -> None:
    for k, v in more.items():
        if isinstance(v, dict):
            _add(total.setdefault(k, {}), v)
        else:
            total[k] = total.get(k, 0) + v


def pytest_runtest_logreport(report):
    """Add up the differential test's statistics, which each family records as a property of its
    report (reports reach this, the controlling process, under pytest-xdist too)."""
    if report.when == "teardown":
        for name, value in getattr(report, "user_properties", ()):
            if name == "differential_stats":
                _add(DIFFERENTIAL_STATS, value)


SPARK_SHARE = 0.95  # of the offloadable steps of the Spark sample's views, at least this many computed by Spark


def spark_sample_problem(stats: dict) -> str | None:
    """The differential test's Spark sample must have computed diffs on Spark, for each strategy's
    programs: an engine that quietly left every step to PostgreSQL would pass every comparison."""
    spark = stats.get("spark", {})
    if spark.get("rounds", 0) >= 10 and not spark.get("offloaded"):
        return f"the differential test's Spark sample offloaded nothing in {spark['rounds']} rounds"
    for strategy, per in spark.get("by_strategy", {}).items():
        if per.get("rounds", 0) >= 10 and not per.get("offloaded"):
            return f"the differential test's Spark sample offloaded nothing of {strategy} in {per['rounds']} rounds"
    steps = spark.get("steps", {})
    if steps.get("offloadable", 0) >= 50 and steps["on_spark"] < SPARK_SHARE * steps["offloadable"]:
        return (f"Spark computes {steps['on_spark']} of the {steps['offloadable']} offloadable steps of the differential "
                f"test's Spark sample, under {SPARK_SHARE:.0%} (refused: {spark.get('step_refusals')})")
    return None


def recompute_problem(stats: dict) -> str | None:
    """Rounds that drew `--recompute always` must have recomputed views: a maintenance that ran the
    Δ-script instead would pass every comparison without testing the recomputation."""
    rounds = sum(per.get("rounds", 0) for name, per in stats.items()  # the Spark sample never draws a policy
                 if isinstance(per, dict) and "views" in per and name != "spark")
    if rounds >= 30 and not stats.get("recomputed"):
        return f"the differential test recomputed no view in {rounds} rounds"
    return None


def pytest_sessionfinish(session, exitstatus):
    problem = spark_sample_problem(DIFFERENTIAL_STATS) or recompute_problem(DIFFERENTIAL_STATS)
    if problem and not hasattr(session.config, "workerinput"):  # the controlling process, or no xdist
        session.config._idivm_problem = problem
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    stats = DIFFERENTIAL_STATS
    if stats:
        terminalreporter.write_line(
            "differential test (random views per construct family, maintenance rounds): "
            + ", ".join(f"{k}={v}" for k, v in stats.items()))
        steps = stats.get("spark", {}).get("steps")
        if steps:
            terminalreporter.write_line(
                f"Spark sample: {steps['on_spark']} of {steps['offloadable']} offloadable steps computed by Spark "
                f"({steps['on_spark'] / steps['offloadable']:.0%}); refused: {stats['spark'].get('step_refusals', {})}")
    problem = getattr(terminalreporter.config, "_idivm_problem", None)
    if problem:
        terminalreporter.write_line(f"FAILED: {problem}", red=True)
