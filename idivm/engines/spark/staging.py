"""Rows computed on Spark, into a table of the waiting PostgreSQL transaction.

The driver copies them (COPY FROM STDIN on the transaction's own connection) only as Spark hands
over each finished partition: a task that failed and was retried, or a speculative duplicate,
never reaches the copy, so no row is staged twice; a job that fails or is cancelled raises here
and the transaction rolls back with nothing applied.
"""
from __future__ import annotations

import time
from typing import Iterable, Iterator

COPY_BATCH = 10_000  # rows between progress reports


def result_rows(df) -> Iterator:
    """A query's rows for copy_rows, handed over one Spark partition at a time (the driver never
    holds the whole result), the next partition computed while this one is copied. Measured
    against the alternatives on a 200-change batch of V (Spark's part, seconds, `id` / `tuple`):
    this 1.0-1.4 / 3.3-3.6; without prefetch 1.1 / 3.2-4.0; collect() in one piece 0.9 / 2.9 but
    unbounded in memory; cache, count, then collect 2.1-2.2 / 4.0-4.9."""
    return df.toLocalIterator(prefetchPartitions=True)


def copy_rows(cur, table: str, rows: Iterable, tracker=None) -> int:
    """COPY `rows` (Spark Rows or tuples, in the table's column order) into `table` (quoted);
    returns how many. The tracker (progress.Tracker) counts them over all its copies, and the
    seconds spent copying apart from waiting for Spark's rows (copy_seconds, for the benchmark's
    breakdown)."""
    base = tracker.rows if tracker is not None else 0
    n, copying = 0, 0.0
    with cur.copy(f"COPY {table} FROM STDIN") as copy:
        for row in rows:
            t0 = time.perf_counter()
            copy.write_row(tuple(row))
            copying += time.perf_counter() - t0
            n += 1
            if tracker is not None and n % COPY_BATCH == 0:
                tracker.rows = base + n
        t0 = time.perf_counter()
    copying += time.perf_counter() - t0  # the COPY's end: PostgreSQL takes the last rows
    if tracker is not None:
        tracker.rows = base + n
        tracker.copy_seconds += copying
    return n
