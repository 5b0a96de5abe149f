"""Base-table i-diff instance generation (Section 5): logs -> effective diffs.

For one view and one captured table, the instance holds one row per primary
key changed by the log rows this maintenance consumes: the rows whose
writing transaction is not visible in the snapshot the view was last
maintained at (and, being read in the current snapshot, committed before it).
Several changes to one key fold into one by capture/fold.py (signed images,
exact whatever order nested writes were logged in), so every instance is
effective (C1-C3).

Columns: kind, pre__<col> and post__<col> for every column of the table.
"""
from __future__ import annotations

from .render import delta_table
from ...algebra.tables import TableInfo
from ...capture.fold import fold_select, log_images
from ...catalog import repository as catalog
from ...sqltext import run


SESSION_TABLES = "idivm_delta_tables"  # key in the DBAPI connection's info: captured id -> column signature


def build_instance(conn, view_id: int, captured_id: int, log: str, info: TableInfo) -> int:
    """Fill pg_temp.idivm_delta_<captured_id> (created once per session); return its row count.

    The table lives as long as the database session, emptied at every commit (ON COMMIT DELETE
    ROWS), so maintenance does no DDL per run unless the base table's columns changed. The
    signature of the columns it was created for is kept with the pooled connection;
    forget_instances() drops that knowledge when a transaction that may have created one fails."""
    target = delta_table(captured_id)
    known = conn.connection.info.setdefault(SESSION_TABLES, {})
    signature = (info.columns, info.key)
    select = fold_select(info, log_images(log, catalog.unconsumed("l", view_id)))
    if known.get(captured_id) != signature:
        run(conn, f"DROP TABLE IF EXISTS {target}")
        run(conn, f"CREATE TEMP TABLE {target} ON COMMIT DELETE ROWS AS {select}\nWITH NO DATA")
        known[captured_id] = signature
    n = run(conn, f"INSERT INTO {target} {select}").rowcount
    run(conn, f"ANALYZE {target}")
    return n


def forget_instances(conn) -> None:
    conn.connection.info.pop(SESSION_TABLES, None)
