"""Base-table i-diff instance generation (Section 5): logs -> effective diffs.

For one view and one captured table, the instance holds one row per primary
key changed by the log rows this maintenance consumes: the rows whose
writing transaction is not visible in the snapshot the view was last
maintained at (and, being read in the current snapshot, committed before it).
Several changes to one key fold into one by capture/fold.py (signed images,
exact whatever order nested writes were logged in), so every instance is
effective (C1-C3).

Columns: kind, pre__<col> and post__<col> for every column of the table.

Built here, from Python, for the Spark engine's maintenance (which reads these tables and computes
part of the Δ-script there); on PostgreSQL alone the view's compiled function builds its own
instances with the same fold and window, server-side (server_maintenance.py).
"""
from __future__ import annotations

from .render import delta_table
from ...algebra.tables import TableInfo
from ...capture.fold import fold_select, log_images
from ...catalog import repository as catalog
from ...sqltext import ident, run, run_batch


SESSION_TABLES = "idivm_delta_tables"  # key in the DBAPI connection's info: captured id -> [signature, rows]
TRUNCATE_AFTER_ROWS = 100_000  # rows filled since the table was last truncated: then TRUNCATE, not DELETE


def build_instances(conn, view_id: int, tables: list[tuple[int, str, TableInfo, list[str]]], snapshot: str) -> list[int]:
    """Fill pg_temp.idivm_delta_<captured_id> for each (captured id, log, table, the columns the view
    reads) from the log rows the view has not consumed (`snapshot`: the view's last_snapshot, read in
    this transaction), all in one round trip (each fill and its ANALYZE), and return their row counts
    in the same order. Images are compared on the columns the view reads (capture/fold.py).

    Each table lives as long as the database session, so maintenance does no DDL per run unless the
    base table's columns changed. It keeps its rows at commit (ON COMMIT PRESERVE ROWS) and is
    emptied by the statement that fills it: PostgreSQL truncates every ON COMMIT DELETE ROWS table
    of the session at every commit that touched any temp table, so a pooled connection that had
    maintained a few views paid for all their tables at every commit (docs/benchmarks.md,
    "Measurements behind the code"). DELETE leaves dead rows, which temp tables never vacuum: after
    TRUNCATE_AFTER_ROWS rows the table is truncated instead. The signature of the columns it was
    created for, and the rows filled since, are kept with the pooled connection; forget_instances()
    drops that knowledge when a transaction that may have created one fails (the table is then
    created afresh)."""
    known = conn.connection.info.setdefault(SESSION_TABLES, {})
    texts, states = [], []
    for captured_id, log, info, read in tables:
        target = delta_table(captured_id)
        signature = (info.columns, info.key)
        select = fold_select(info, log_images(log, catalog.unconsumed("l", view_id, snapshot)), read)
        state = known.get(captured_id)
        if state is None or state[0] != signature:
            run(conn, f"DROP TABLE IF EXISTS {target}")
            run(conn, f"CREATE TEMP TABLE {target} ON COMMIT PRESERVE ROWS AS {select}\nWITH NO DATA")
            state = known[captured_id] = [signature, 0]
            texts.append(f"INSERT INTO {target} {select}")
        elif state[1] > TRUNCATE_AFTER_ROWS:
            texts.append(f"TRUNCATE {target}")
            state[1] = 0
            texts.append(f"INSERT INTO {target} {select}")
        else:  # the previous maintenance's rows go in the same statement (it cannot see the rows it adds)
            texts.append(f"WITH {ident('emptied')} AS (DELETE FROM {target}) INSERT INTO {target} {select}")
        texts.append(f"ANALYZE {target}")
        states.append(state)
    if not texts:
        return []
    counts = [n for status, n in run_batch(conn, texts) if status.startswith("INSERT")]
    for state, n in zip(states, counts):
        state[1] += n
    return counts


def forget_instances(conn) -> None:
    conn.connection.info.pop(SESSION_TABLES, None)
