"""Rows computed on Spark, into tables of the waiting PostgreSQL transaction.

The driver copies them (COPY FROM STDIN on the transaction's own connection) only once Spark hands
over finished partitions: a task that failed and was retried, or a speculative duplicate, never
reaches the copy, so no row is staged twice; a job that fails or is cancelled raises here and the
transaction rolls back with nothing applied.

Results whose columns all have an Arrow type that prints as PostgreSQL reads it (copy_result) come
over as Arrow batches, which the executors serialize, and go to COPY as CSV that Arrow writes, no
Python object per value: 1M rows of five columns in 2.0-2.6 s against 11-12 s row by row (this
machine, local[2]). The executors cannot write the rows to PostgreSQL themselves: their own
transactions' rows are invisible to the maintenance's, which reads in its snapshot of before them.
Every value is quoted but NULL (CSV's NULL is an unquoted empty field, so '' stays ''), and Arrow
prints floats in their shortest exact form, decimals with their scale (1.00E-7 is 0.000000100),
timestamps to the microsecond with `Z` when zoned (the sessions' time zone is UTC).
"""
from __future__ import annotations

import contextlib
import io
import time
from typing import Callable, Iterable, Iterator

from ...errors import IdivmError

COPY_BATCH = 10_000  # rows between progress reports
CSV_CHUNK = 65_536  # rows an Arrow CSV chunk holds on its way to COPY
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
    return IdivmError(f"{line}; nothing was applied (the PostgreSQL engine takes any value: --engine postgres)")


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
                tracker=None) -> list[int]:
    """COPY a Spark result into `tables` (quoted); how many rows went to each. `widths`: the result
    is merged_sql()'s, each row for tables[k] (its first column k); None: one query's rows, for
    tables[0]. As Arrow batches written as CSV where every column's type allows (ARROW_TEXT_ALIKE);
    row by row (result_rows, copy_split) otherwise, and for `small` results (collected in one job)."""
    if small or not all(type(f.dataType).__name__ in ARROW_TEXT_ALIKE for f in df.schema.fields):
        rows = result_rows(df, small)
        return copy_split(cur, tables, split_rows(rows, widths) if widths else ((0, r) for r in rows), tracker)
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
            counts[k] = _copy_csv(cur, target, rows)
            if tracker is not None:
                tracker.rows = base + sum(counts)
    if tracker is not None:
        tracker.copy_seconds += time.perf_counter() - t0
    return counts


def _copy_csv(cur, table: str, rows) -> int:
    """An Arrow table's rows, in the target's column order, COPYed into `table` as CSV."""
    import pyarrow.csv as csv

    options = csv.WriteOptions(include_header=False, quoting_style="all_valid")
    with cur.copy(f"COPY {table} FROM STDIN (FORMAT csv, ENCODING 'UTF8')") as copy:
        for batch in rows.to_batches(max_chunksize=CSV_CHUNK):
            out = io.BytesIO()
            csv.write_csv(batch, out, options)
            copy.write(out.getvalue())
    return rows.num_rows
