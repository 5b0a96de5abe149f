"""Reading PostgreSQL from Spark inside the maintenance transaction's snapshot, and only there.

The maintenance transaction exports its snapshot (pg_export_snapshot); every JDBC connection
Spark opens imports it before reading (sessionInitStatement: BEGIN ISOLATION LEVEL REPEATABLE
READ; SET TRANSACTION SNAPSHOT ...). Two ways that can silently fail are closed:

- with autocommit on, PostgreSQL ignores SET TRANSACTION outside a transaction block: the init
  statement opens the block itself, and fetchsize > 0 keeps the driver from committing;
- a read that did not import the snapshot (a driver, a pool or a Spark version that skips the init
  statement) would see newer data: every row carries the reading transaction's
  pg_current_snapshot(), and Spark raises (assert_true) on any row read under another snapshot.

Only types that Spark and JDBC carry exactly are read (EXACT_TYPES); anything else is refused by
name: an unconstrained numeric, for one, arrives as decimal(38,18) and would lose digits.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import UnsupportedQuery
from ...names import display_name
from ...sqltext import ident, string_literal
from .settings import SparkSettings

SNAPSHOT_COLUMN = "__idivm_snapshot"
EXACT_TYPES = re.compile(r"^(smallint|integer|bigint|real|double precision|text|boolean|date|numeric\(\d+,\d+\)"
                         r"|character varying(\(\d+\))?|character\(\d+\))$")


def check_types(where: str, columns) -> None:
    """Refuse, naming it, the first column whose type Spark would not carry exactly."""
    for name, sql_type in columns:
        if not EXACT_TYPES.match(sql_type):
            raise UnsupportedQuery(
                f"the Spark engine cannot read {where}.{name} of type {sql_type} exactly (it reads integers, "
                "numeric with a declared precision and scale, floating point, text, boolean and date); "
                "maintain this view with --engine postgres")


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
                      + string_literal(snapshot.exported) + f"; SET LOCAL lock_timeout = {string_literal(LOCK_TIMEOUT)}"))
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
    """The table's columns named in `names` (None: all), in table order, each checked exact."""
    columns = [c for c in info.column_names if names is None or c in names]
    check_types(display_name(info.schema, info.name), [(c, info.type_of(c)) for c in columns])
    return columns


def read_table(spark, settings: SparkSettings, cursor, snapshot: Snapshot, name: str, info, names: set[str] | None,
               where: str = "") -> None:
    """A base table as the temp view `name`: only the columns in `names` (None: all; none at all
    still reads one NULL per row, since a row's presence counts), each checked exact; restricted by
    `where` (an SQL WHERE clause, or ''); read in parallel key ranges when it is read whole and
    large."""
    columns = columns_to_read(info, names)
    ranges = partitioning(cursor, info.qualified, info, settings.cores()) if not where and info.key[0] in columns else None
    read(spark, settings, f"SELECT {', '.join(ident(c) for c in columns) or 'NULL'} FROM {info.qualified}{where}",
         snapshot, name, ranges)
