"""Base-table i-diff instance generation (Section 5): logs -> effective diffs.

For one view and one captured table, the instance holds one row per primary
key changed by the log rows this maintenance consumes: the rows whose
writing transaction is not visible in the snapshot the view was last
maintained at (and, being read in the current snapshot, committed before it).
Several changes to one key are folded into one: the pre-image of the first
change and the post-image of the last (same-key changes are serialised by
row locks, so log order per key is commit order). The fold yields 'I' (no
pre-image), 'D' (no post-image) or 'U' (both, different); a change undone in
the same window disappears. This makes every instance effective (C1-C3).

Columns: kind, pre__<col> and post__<col> for every column of the table.
"""
from __future__ import annotations

from ..compile.render import delta_table
from ..algebra.tables import TableInfo
from ..sqltext import ident, run


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
    rowtype = f"NULL::{info.qualified}"
    keys = ", ".join(ident(k) for k in info.key)
    key_exprs = ", ".join(
        f"(jsonb_populate_record({rowtype}, coalesce(l.new_row, l.old_row))).{ident(k)} AS {ident(k)}" for k in info.key
    )
    cols = ", ".join(
        [f"{ident('pre')}.{ident(c)} AS {ident('pre__' + c)}" for c in info.column_names]
        + [f"{ident('post')}.{ident(c)} AS {ident('post__' + c)}" for c in info.column_names]
    )
    select = f"""
WITH w AS (
  SELECT l.seq, l.old_row, l.new_row, {key_exprs}
  FROM {log} AS l
  WHERE NOT pg_visible_in_snapshot(l.xid, (SELECT CAST(v.last_snapshot AS pg_snapshot) FROM idivm.views AS v WHERE v.id = {int(view_id)}))
), f AS (
  SELECT {keys}, (array_agg(w.old_row ORDER BY w.seq))[1] AS first_old,
         (array_agg(w.new_row ORDER BY w.seq DESC))[1] AS last_new
  FROM w GROUP BY {keys}
)
SELECT CAST(CASE WHEN f.first_old IS NULL THEN 'I' WHEN f.last_new IS NULL THEN 'D' ELSE 'U' END AS text) AS kind, {cols}
FROM f
CROSS JOIN LATERAL jsonb_populate_record({rowtype}, f.first_old) AS {ident('pre')}
CROSS JOIN LATERAL jsonb_populate_record({rowtype}, f.last_new) AS {ident('post')}
WHERE f.first_old IS DISTINCT FROM f.last_new"""
    if known.get(captured_id) != signature:
        run(conn, f"DROP TABLE IF EXISTS {target}")
        run(conn, f"CREATE TEMP TABLE {target} ON COMMIT DELETE ROWS AS {select}\nWITH NO DATA")
        known[captured_id] = signature
    n = run(conn, f"INSERT INTO {target} {select}").rowcount
    run(conn, f"ANALYZE {target}")
    return n


def forget_instances(conn) -> None:
    conn.connection.info.pop(SESSION_TABLES, None)
