"""Rows computed on Spark, into tables of the waiting PostgreSQL transaction.

Nothing is written where the transaction reads it before Spark hands over finished partitions: a
task that failed and was retried, or a speculative duplicate, never reaches the transaction's
tables, so no row is staged twice; a job that fails or is cancelled raises here and the transaction
rolls back with nothing applied. Three ways, by the result's size and types:

- small results (every input came from the transaction: the batch's size) are collected in one job
  and copied row by row (result_rows, copy_split);
- large results whose columns all have an Arrow type that prints as PostgreSQL reads it
  (ARROW_TEXT_ALIKE), bound for a maintenance's temporary tables (`conninfo` given), are written by
  the executors themselves, each partition as CSV that Arrow writes into a table of its own with
  COPY FREEZE (partition_writer.py), which the transaction then reads whole into its tables: the
  driver never holds the result, and PostgreSQL parses the rows in as many sessions as Spark has
  tasks. Otherwise (a fill's new table, whose rows INSERT ... SELECT would log one by one where
  COPY logs them a page at a time, docs/benchmarks.md; or executors that cannot connect with
  libpq, settings.executor_conninfo) the driver collects the Arrow batches and copies them itself;
- other large results (binary, intervals, structs and arrays) come to the driver partition by
  partition, row by row through psycopg's own adaptation.

Every CSV value is quoted but NULL (CSV's NULL is an unquoted empty field, so '' stays ''), and
Arrow prints floats in their shortest exact form, decimals with their scale (1.00E-7 is
0.000000100), timestamps to the microsecond with `Z` when zoned (the sessions' time zone is UTC).
"""
from __future__ import annotations

import contextlib
import re
import time
from typing import Callable, Iterable, Iterator

from ...errors import IdivmError
from ...sqltext import ident, qualified
from .partition_writer import PREFIX, SCHEMA, write_csv

COPY_BATCH = 10_000  # rows between progress reports
# Spark types whose Arrow values the CSV writer prints as PostgreSQL reads them (others, binary and
# intervals, structs and arrays, go row by row through psycopg's own adaptation)
ARROW_TEXT_ALIKE = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType",
                    "StringType", "VarcharType", "CharType", "BooleanType", "DateType", "TimestampType",
                    "TimestampNTZType", "NullType")


def _refusal(error: Exception) -> IdivmError | None:
    """A value the Spark job refused (spark_sql.py's checks raise errors whose message starts
    "idivm: ") as one line, the first of that message; None for any other error."""
    at = str(error).find("idivm: ")
    if at < 0:
        return None
    line = str(error)[at + len("idivm: "):].splitlines()[0].split(" SQLSTATE:")[0].rstrip(". ")
    return IdivmError(f"{line}; nothing was applied (--engine postgres maintains it without Spark)")


def _refused_as_one_line(rows: Callable[[], Iterable]) -> Iterator:
    """The rows `rows()` gives, computed as they are taken, an error the Spark job raised while
    computing them made one line (_refusal)."""
    try:
        yield from rows()
    except Exception as e:
        raise _refusal(e) or e


def result_rows(df, small: bool = False) -> Iterable:
    """A query's rows for copy_split (copy_result's way for results Arrow does not carry). By
    default handed over one Spark partition at a time (the driver never holds the whole result),
    the next partition computed while this one is copied:
    each partition is a job of its own. `small` (every input of the query came from the driver,
    engines/spark/local_inputs.py, so the result is of the batch's size): collected in one job.
    Measured on a 200-change batch of V under `tuple`, its three queries merged into one plan
    (Spark's part, seconds): partition by partition 1.3-2.3, collected 1.2-1.6. Before the merge
    and the local inputs (2026-11-24, `id` / `tuple`): partition by partition 1.0-1.4 / 3.3-3.6;
    without prefetch 1.1 / 3.2-4.0; collect() 0.9 / 2.9; cache, count, then collect 2.1-2.2 / 4.0-4.9.
    A value the job refused ends it in one line (_refusal)."""
    if small:
        try:
            return df.collect()
        except Exception as e:
            raise _refusal(e) or e
    return _refused_as_one_line(lambda: df.toLocalIterator(prefetchPartitions=True))


QUERY_COLUMN = "idivm_query"


def merged_sql(texts: list[str], widths: list[int]) -> str:
    """Several queries (Spark SQL, each with `widths[k]` columns) as one, so that Spark parses,
    plans, schedules and runs them together (a maintenance's queries are independent: each reads
    i-diffs and base tables only): a UNION ALL whose rows are (the query's number, the query's
    columns, NULL for every other query's columns). Each column position is non-NULL in one
    branch only, so the UNION's type of it is that query's type (Spark widens NULL to any type).
    split_rows takes the rows apart again."""
    branches = []
    for k, text in enumerate(texts):
        before = [f"NULL AS q{j}_{i}" for j in range(k) for i in range(widths[j])]
        after = [f"NULL AS q{j}_{i}" for j in range(k + 1, len(texts)) for i in range(widths[j])]
        branches.append(f"SELECT {', '.join([f'{k} AS {QUERY_COLUMN}', *before, 'idivm_q.*', *after])} "
                        f"FROM ({text}) AS idivm_q")
    return " UNION ALL ".join(branches)


def split_rows(rows: Iterable, widths: list[int]) -> Iterator[tuple[int, tuple]]:
    """The rows of merged_sql(): (query number, that query's own columns)."""
    starts = [1 + sum(widths[:k]) for k in range(len(widths))]
    for row in rows:
        k = row[0]
        yield k, tuple(row[starts[k]:starts[k] + widths[k]])


def copy_split(cur, tables: list[str], rows: Iterable[tuple[int, tuple]], tracker=None) -> list[int]:
    """COPY each (k, row) of `rows` (Spark Rows or tuples, in the table's column order) into
    tables[k]; how many went to each. Rows come grouped by table (a UNION ALL hands over its
    branches' partitions in order), so each table is usually one COPY; a table met again takes
    another. The tracker (progress.Tracker) counts them over all its copies, and the seconds spent
    copying apart from waiting for Spark's rows (copy_seconds, for the benchmark's breakdown)."""
    base = tracker.rows if tracker is not None else 0
    counts, copying, n = [0] * len(tables), 0.0, 0
    current, copy = None, None
    with contextlib.ExitStack() as stack:
        for k, row in rows:
            t0 = time.perf_counter()
            if k != current:
                stack.close()  # the previous table's COPY ends: PostgreSQL takes its last rows
                copy, current = stack.enter_context(cur.copy(f"COPY {tables[k]} FROM STDIN")), k
            copy.write_row(tuple(row))
            copying += time.perf_counter() - t0
            counts[k] += 1
            n += 1
            if tracker is not None and n % COPY_BATCH == 0:
                tracker.rows = base + n
        t0 = time.perf_counter()
    copying += time.perf_counter() - t0
    if tracker is not None:
        tracker.rows = base + n
        tracker.copy_seconds += copying
    return counts


def copy_result(cur, tables: list[str], df, widths: list[int] | None = None, small: bool = False,
                tracker=None, conninfo: str | None = None) -> list[int]:
    """COPY a Spark result into `tables` (quoted); how many rows went to each. `widths`: the result
    is merged_sql()'s, each row for tables[k] (its first column k); None: one query's rows, for
    tables[0]. `conninfo`: the database as the executors reach it with libpq, or None (the module's
    docstring says which way each result takes)."""
    if small or not all(type(f.dataType).__name__ in ARROW_TEXT_ALIKE for f in df.schema.fields):
        rows = result_rows(df, small)
        return copy_split(cur, tables, split_rows(rows, widths) if widths else ((0, r) for r in rows), tracker)
    if conninfo is not None:
        return _written_by_executors(cur, tables, df, widths, conninfo, tracker)
    try:
        table = df.toArrow()
    except Exception as e:
        raise _refusal(e) or e
    import pyarrow.compute as pc

    base = tracker.rows if tracker is not None else 0
    counts = [0] * len(tables)
    t0 = time.perf_counter()
    for k, target in enumerate(tables):
        if widths is None:
            rows = table
        else:
            start = 1 + sum(widths[:k])
            rows = table.filter(pc.equal(table.column(0), k)).select(list(range(start, start + widths[k])))
        if rows.num_rows:
            with cur.copy(f"COPY {target} FROM STDIN (FORMAT csv, ENCODING 'UTF8')") as copy:
                counts[k] = write_csv(copy, rows.to_batches())
            if tracker is not None:
                tracker.rows = base + sum(counts)
    if tracker is not None:
        tracker.copy_seconds += time.perf_counter() - t0
    return counts


PART_LIKE = PREFIX.replace("_", "\\_") + "%"  # LIKE's pattern of their names


def _part_columns(cur, tables: list[str], widths: list[int] | None) -> list[tuple[str, str, str | None]]:
    """The columns of the executors' part tables, in the result's order: (name, type in the part, the
    target's type to cast to when reading it, or None). A type of pg_catalog by its own name; any
    other (a domain, an enum: names that resolve by the search path of this session, not of the
    executors') as text, read with a cast."""
    typed = []
    for table in tables:
        typed.append(cur.execute(
            "SELECT format_type(a.atttypid, a.atttypmod), t.typnamespace = CAST('pg_catalog' AS regnamespace) "
            "FROM pg_attribute AS a JOIN pg_type AS t ON t.oid = a.atttypid "
            "WHERE a.attrelid = CAST(%s AS regclass) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (table,)).fetchall())
    out = [(QUERY_COLUMN, "integer", None)] if widths is not None else []
    for k, columns in enumerate(typed):
        out += [(f"q{k}_{i}", t if builtin else "text", None if builtin else t) for i, (t, builtin) in enumerate(columns)]
    return out


def sweep_parts(cur, xid: str | None = None) -> None:
    """Drop the executors' part tables of transactions that have ended (a failed or abandoned
    maintenance's, a retried task's that committed late), and with `xid` those of that transaction
    (the caller's own, once read). Best effort, under a savepoint: another session sweeping the same
    tables is no failure of this one."""
    rows = cur.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = CAST(%s AS regnamespace) AND relname LIKE %s "
        "AND (split_part(relname, '_', 3) = %s "
        "OR pg_xact_status(CAST(split_part(relname, '_', 3) AS xid8)) IS DISTINCT FROM 'in progress')",
        (SCHEMA, PART_LIKE, xid or "")).fetchall()
    import psycopg

    for (name,) in rows:
        try:
            with cur.connection.transaction():
                cur.execute(f"DROP TABLE IF EXISTS {qualified(SCHEMA, name)}")
        except psycopg.Error:
            pass


def _written_by_executors(cur, tables: list[str], df, widths: list[int] | None, conninfo: str, tracker) -> list[int]:
    """The executors write the result's partitions into part tables (partition_writer.py), which are
    read into `tables` here, in the transaction, and dropped."""
    (xid,) = cur.execute("SELECT CAST(pg_current_xact_id() AS text)").fetchone()
    sweep_parts(cur)
    columns = _part_columns(cur, tables, widths)
    from pyspark import cloudpickle

    from . import partition_writer

    cloudpickle.register_pickle_by_value(partition_writer)  # executors need not have idivm installed
    try:
        positional = df.toDF(*[f"c{i}" for i in range(len(df.columns))])  # a name like `dp.did` would not resolve
        written = positional.mapInArrow(partition_writer.partition_writer(conninfo, int(xid), [c[:2] for c in columns],
                                                                  widths is not None),
                                partition_writer.RESULT_SCHEMA).collect()
    except Exception as e:
        missing = re.search(r"No module named '([^']+)'", str(e))
        if missing and not _refusal(e):
            raise IdivmError(f"Spark's executors cannot write their rows: their Python has no module {missing.group(1)} "
                             f"(they need pyarrow, pandas and psycopg; PYSPARK_PYTHON names it)") from None
        raise _refusal(e) or e
    base = tracker.rows if tracker is not None else 0
    t0 = time.perf_counter()
    counts = [0] * len(tables)
    for k, target in enumerate(tables):
        parts = [row["part"] for row in written if row["query"] == k]
        counts[k] = sum(row["rows"] for row in written if row["query"] == k)
        if not parts:
            continue
        first = (1 + sum(widths[:k])) if widths is not None else 0
        width = widths[k] if widths is not None else len(columns)
        select = ", ".join(f"CAST({ident(name)} AS {cast})" if cast else ident(name)
                           for name, _, cast in columns[first:first + width])
        where = f" WHERE {ident(QUERY_COLUMN)} = {int(k)}" if widths is not None else ""
        cur.execute(f"INSERT INTO {target} " + " UNION ALL ".join(
            f"SELECT {select} FROM {qualified(SCHEMA, part)}{where}" for part in parts))
    sweep_parts(cur, xid)
    if tracker is not None:
        tracker.rows = base + sum(counts)
        tracker.copy_seconds += time.perf_counter() - t0
    return counts
