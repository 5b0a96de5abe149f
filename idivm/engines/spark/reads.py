"""Reading PostgreSQL from Spark inside the maintenance transaction's snapshot, and only there.

The maintenance transaction exports its snapshot (pg_export_snapshot); every JDBC connection
Spark opens imports it before reading (sessionInitStatement: BEGIN ISOLATION LEVEL REPEATABLE
READ; SET TRANSACTION SNAPSHOT ...). Two ways that can silently fail are closed:

- with autocommit on, PostgreSQL ignores SET TRANSACTION outside a transaction block: the init
  statement opens the block itself, and fetchsize > 0 keeps the driver from committing;
- a read that did not import the snapshot (a driver, a pool or a Spark version that skips the init
  statement) would see newer data: every row carries the reading transaction's
  pg_current_snapshot(), and Spark raises (assert_true) on any row read under another snapshot.

Types that Spark and JDBC carry exactly (EXACT_TYPES) are read as they are; a column of any other
type is *carried*: read as PostgreSQL's text of its value (an unconstrained numeric would arrive as
decimal(38,18) and lose digits and its scale, a timestamp through the JVM's time zone), which goes
back into PostgreSQL as that very value. What Spark may do with a carried value is spark_sql.py's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...sqltext import ident, string_literal
from .settings import SparkSettings

SNAPSHOT_COLUMN = "__idivm_snapshot"
EXACT_TYPES = re.compile(r"^(smallint|integer|bigint|real|double precision|text|boolean|date|numeric\(\d+,\d+\)"
                         r"|character varying(\(\d+\))?|character\(\d+\))$")


def carried(sql_type: str) -> bool:
    """Whether a base table's column of this type is read as its text (see above)."""
    return not EXACT_TYPES.match(sql_type)


def spark_read_type(sql_type: str) -> str:
    """The PostgreSQL type a base table's column arrives in Spark as: its own, or text if carried."""
    return "text" if carried(sql_type) else sql_type


def select_read(columns: list[str], source: str, type_of) -> str:
    """SELECT of a base table's (or i-diff instance's) quoted `columns` from `source` as Spark reads
    them: each carried column (type_of(column) -> its type) as its text, under its own name."""
    return "SELECT " + ", ".join(f"CAST({ident(c)} AS text) AS {ident(c)}" if carried(type_of(c)) else ident(c)
                                 for c in columns) + f" FROM {source}"


@dataclass(frozen=True)
class Snapshot:
    """An exported snapshot: its identifier (for SET TRANSACTION SNAPSHOT) and its pg_snapshot text
    (what pg_current_snapshot() says inside a transaction that imported it)."""

    exported: str
    text: str


def export(cursor) -> Snapshot:
    """Export the snapshot of the (REPEATABLE READ) transaction `cursor` runs in."""
    exported, text = cursor.execute("SELECT pg_export_snapshot(), CAST(pg_current_snapshot() AS text)").fetchone()
    return Snapshot(exported, text)


@dataclass(frozen=True)
class Partitioning:
    """Read in `parts` parallel ranges of an integer column between its lowest and highest value
    (each range a JDBC connection of its own, each importing the snapshot)."""

    column: str
    low: int
    high: int
    parts: int


# A Spark read that waits for a lock waits, through idivm, for the transaction that exported its
# snapshot, or for DDL queued behind it: a cycle PostgreSQL cannot see (one side of it is a client).
# After this long the read fails, and with it the maintenance, which the next run retries.
LOCK_TIMEOUT = "60s"
PARTITION_ROWS = 200_000  # a table estimated larger than this is read in ranges, one per core


def partitioning(cursor, qualified_table: str, info, cores: int) -> Partitioning | None:
    """Ranges of the table's first key column, if it is an integer and the table is large enough for
    parallel reads to pay (PostgreSQL's estimate); its bounds read in the caller's snapshot."""
    column = info.key[0]
    if cores < 2 or info.type_of(column) not in ("smallint", "integer", "bigint"):
        return None
    estimate = cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (qualified_table,)).fetchone()
    if not estimate or estimate[0] < PARTITION_ROWS:
        return None
    low, high = cursor.execute(f"SELECT min({ident(column)}), max({ident(column)}) FROM {qualified_table}").fetchone()
    if low is None or high <= low:
        return None
    return Partitioning(column, int(low), int(high), cores)


def read(spark, settings: SparkSettings, query: str, snapshot: Snapshot, name: str,
         partitions: Partitioning | None = None):
    """A temp view `name` of `query`'s rows as of `snapshot` (checked on every row), read in
    parallel ranges of a column `query` returns when `partitions` says so."""
    checked = f"SELECT q.*, CAST(pg_current_snapshot() AS text) AS {SNAPSHOT_COLUMN} FROM ({query}) AS q"
    reader = (spark.read.format("jdbc").option("url", settings.jdbc_url).option("driver", "org.postgresql.Driver")
              .option("fetchsize", "10000")
              .option("sessionInitStatement", "BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT "
                      + string_literal(snapshot.exported) + f"; SET LOCAL lock_timeout = {string_literal(LOCK_TIMEOUT)}"
                      # a timestamptz's text in UTC, as Spark's sessions are (spark_sql._checked_instant)
                      + "; SET LOCAL TimeZone = 'UTC'"))
    if partitions is None:
        reader = reader.option("query", checked)
    else:  # Spark splits [low, high] into ranges of the column (the first and last open-ended)
        reader = (reader.option("dbtable", f"({checked}) AS idivm_read")
                  .option("partitionColumn", partitions.column).option("lowerBound", str(partitions.low))
                  .option("upperBound", str(partitions.high + 1)).option("numPartitions", str(partitions.parts)))
    raw = reader.load()
    columns = [c for c in raw.columns if c != SNAPSHOT_COLUMN]
    message = "idivm: a Spark read ran outside the maintenance transaction's snapshot"
    from pyspark.sql import functions as F

    df = raw.where(F.assert_true(F.col(SNAPSHOT_COLUMN) == F.lit(snapshot.text), F.lit(message)).isNull())
    df.select(*columns).createOrReplaceTempView(name)
    return df


def columns_to_read(info, names: set[str] | None) -> list[str]:
    """The table's columns named in `names` (None: all), in table order."""
    return [c for c in info.column_names if names is None or c in names]


def read_table(spark, settings: SparkSettings, cursor, snapshot: Snapshot, name: str, info, names: set[str] | None,
               where: str = "") -> None:
    """A base table as the temp view `name`: only the columns in `names` (None: all; none at all
    still reads one NULL per row, since a row's presence counts), carried ones as text; restricted by
    `where` (an SQL WHERE clause, or ''); read in parallel key ranges when it is read whole and
    large."""
    columns = columns_to_read(info, names)
    ranges = partitioning(cursor, info.qualified, info, settings.cores()) if not where and info.key[0] in columns else None
    query = select_read(columns, info.qualified + where, info.type_of) if columns else f"SELECT NULL FROM {info.qualified}{where}"
    read(spark, settings, query, snapshot, name, ranges)
