"""One Spark session per process, started on first use and kept warm: starting one costs seconds,
many times a job on a warm one (docs/benchmarks.md, "Measurements behind the code"), so `idivm
schedule` and repeated API calls pay the start once.

Each maintenance and each fill runs in a session of its own (`run_session`), made from the warm one:
it shares the SparkContext, the JVM and the cache, but has its own temp views and SQL settings.
idivm hands Spark its inputs as temp views named after the relations they hold
(`idivm_delta_<table>`, `idivm_base_<table>`): two maintenances of one process (an application's
threads) over views that share a table would otherwise replace each other's views between handing
them over and planning, and one view would be maintained from the other's window (a wrong view,
reproduced by tests/test_spark_engine.py::test_concurrent_maintenances_in_one_process_read_their_own_inputs).
A new session costs milliseconds; Spark (3.1 and later, SPARK-34087) releases its listeners when
it is garbage-collected."""
from __future__ import annotations

import os
import sys
import threading

from .settings import SparkSettings

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
THREAD_STACK = "16m"
_lock = threading.Lock()
_session = None
_settings: SparkSettings | None = None


def spark_session(settings: SparkSettings):
    """The process's Spark session for these settings (a new one if they changed)."""
    global _session, _settings
    settings.check()
    with _lock:
        if _session is not None and _settings == settings:
            return _session
        from pyspark.sql import SparkSession

        if _session is not None:
            _session.stop()
        builder = (SparkSession.builder.master(settings.master).appName("idivm")
                   .config("spark.jars", settings.jar)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   # large batches: more, smaller result partitions (each comes back to the driver
                   # whole: with 4, a 5M-change batch lost results from the block manager), and
                   # memory for them; IDIVM_SPARK_CONF overrides any of these
                   .config("spark.sql.shuffle.partitions", "16")
                   .config("spark.driver.memory", "4g")
                   # a maintenance runs its queries side by side in one plan, with a broadcast hash
                   # join per base table each query joins: every broadcast relation takes at least
                   # one page, 64 MB by Spark's default for a 4 GB driver on 2 cores, and a few
                   # dozen of them (the differential test's outer-join views, of a few rows each)
                   # failed with "not enough memory to build and broadcast the table"
                   .config("spark.buffer.pageSize", "4m")
                   .config("spark.driver.maxResultSize", "2g")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.caseSensitive", "true")  # PostgreSQL names are case-sensitive when quoted
                   .config("spark.sql.ansi.enabled", "true")  # overflow raises, as in PostgreSQL, instead of wrapping
                   # a product of decimals wider than 38 digits keeps its scale (and raises if its
                   # value does not fit) instead of being rounded to fewer decimals
                   .config("spark.sql.decimalOperations.allowPrecisionLoss", "false"))
        if settings.master.startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
            # the Python that runs idivm's functions on the executors (partition_writer.py,
            # numeric_division.py): on this machine this one, with its pyarrow and psycopg, not the
            # `python3` PATH finds (PySpark reads PYSPARK_PYTHON when the context starts); a
            # cluster's is the user's to set (docs/spark.md, "Running on a cluster")
            os.environ["PYSPARK_PYTHON"] = sys.executable
        # a maintenance's queries planned as one tree (staging.merged_sql) are deep: Spark prepares
        # a plan recursively, and a set-operation view's merged plan overflowed the JVM's default
        # thread stack of 1 MB (a StackOverflowError in SparkPlan.prepare, while the JIT had not yet
        # compiled those frames); the user's options come after this one, so their -Xss wins
        java = " ".join(filter(None, [f"-Xss{THREAD_STACK}", settings.conf.get(JAVA_OPTIONS, "")]))
        builder = builder.config(JAVA_OPTIONS, java)
        for key, value in settings.conf.items():
            if key != JAVA_OPTIONS:
                builder = builder.config(key, value)
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        _settings = settings
        return _session


def run_session(settings: SparkSettings):
    """A session of its own for one maintenance or fill, made from the process's warm session (see
    the module's docstring): its temp views and settings are seen by no other run."""
    return spark_session(settings).newSession()


def is_warm(settings: SparkSettings) -> bool:
    """Whether this process already runs a session for these settings (the next job skips the start)."""
    return _session is not None and _settings == settings


def stop() -> None:
    global _session, _settings
    with _lock:
        if _session is not None:
            _session.stop()
        _session, _settings = None, None
