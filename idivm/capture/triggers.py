"""Trigger-based modification logs, shared by all views over a table.

Each captured table gets ``idivm.log_<id>(xid, seq, old_row, new_row)``.
Statement-level AFTER triggers with transition tables append one row per
changed tuple, tagged with the writing transaction's top-level xid8
(``pg_current_xact_id()``); maintenance later consumes exactly the rows of
transactions that committed between two snapshots (see engines/postgres/server_maintenance.py).

- INSERT logs (NULL, new); DELETE logs (old, NULL).
- UPDATE logs (old, new) pairs, one per updated tuple, leaving out pairs
  whose images are equal on every column a view over the table reads
  (compared as the text of each value, so 1.0 -> 1.00 is a change; an
  update of other columns alone, such as TPC-C's delivery dates that no
  view reads, logs nothing). The columns are named as jsonb keys, not SQL
  columns, so that a column dropped or renamed before the views over it are
  refreshed never fails a write.
  The pairing is by position in the transition tables, not by key: PostgreSQL
  merges the rows that foreign-key cascades change into the transition tables
  of the statement that fired them, so one key can appear several times on
  each side (self-referencing ON UPDATE CASCADE). Any one-to-one pairing is
  exact, because maintenance folds a log as signed images (-old, +new; see
  capture/fold.py) and never relies on a pair sharing a key, nor on the
  order of log rows: nested statements (a trigger's own writes) are logged
  before the statement that fired them.
- TRUNCATE (no transition tables exist for it) logs every row as deleted
  from a BEFORE TRUNCATE trigger.
- The triggers are ENABLE ALWAYS: they also fire under
  ``session_replication_role = replica`` (logical replication's apply
  workers, some restore tools), which would otherwise write unlogged changes.

Rows are stored as jsonb so that later ALTER TABLE on the base table is not
blocked by a column of its row type. ``logged_at`` (the writing transaction's
start) gives the age of the oldest change a view has not consumed yet.

Wake-up hint: when a statement's log rows cross a multiple of the table's
notify threshold (the smallest max-pending policy of the views over it), the
function sends ``NOTIFY idivm_changes`` with the captured table's id, so a
sleeping scheduler maintains early. The threshold is baked into the function
(no catalog read on the write path); install_function() rewrites it when
policies change. Crossing a multiple is judged from the log's identity
sequence, so it costs one currval() per statement and a NOTIFY only rarely. The function is SECURITY DEFINER
and names everything it calls in pg_catalog: application roles need no rights on idivm's schema, and
objects on their search_path cannot redirect it.
"""
from __future__ import annotations

from typing import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog import repository as catalog
from ..introspect.reflect import table_info
from ..algebra.tables import TableInfo
from ..sqltext import ident, qualified, run, string_literal
from .partitions import TRIGGER_DDL, sync_partitions

Threshold = Callable[[Connection, int], int]

TRIGGERS = tuple(TRIGGER_DDL)


def log_table(captured_id: int) -> str:
    return qualified("idivm", f"log_{captured_id}")


PRUNE_PREFIX = "prune_log_"  # idivm.prune_logs names each log's prune function the same way


def prune_function(captured_id: int) -> str:
    """``idivm.prune_log_<id>(idivm_low xid8, idivm_high xid8)``: delete the log rows with xids in
    [low, high) that every deferred view over the table has consumed.
    idivm.prune_logs (engines/postgres/server_maintenance.py) reads the bounds of every log it
    prunes and calls this: its DELETE is static SQL, whose plan a session keeps, where a DELETE
    built and planned in every prune cost more than the prune's own work after a small maintenance."""
    return qualified("idivm", f"{PRUNE_PREFIX}{int(captured_id)}")


NOTIFY_CHANNEL = "idivm_changes"


def _op(symbol: str) -> str:
    """An operator named in pg_catalog (see _function_body). All such operators bind alike, left to
    right: parenthesize."""
    return f"OPERATOR(pg_catalog.{symbol})"


def _function_body(info: TableInfo, captured_id: int, log: str, sequence: str, threshold: int,
                   compared: list[str]) -> str:
    """The capture function's PL/pgSQL. It runs as its owner (SECURITY DEFINER) with the writer's
    search_path, so every function, operator and type it names is qualified by pg_catalog: an
    object of the writer's schemas, even one listed before pg_catalog, cannot stand in for it.
    (Pinning search_path with a SET clause on the function instead made every capturing statement
    save and restore the setting: 4-5% of single-row UPDATE throughput, docs/benchmarks.md.)
    An UPDATE pairs old and new images by position (a FULL JOIN of the two numbered scans, which
    a bulk UPDATE of any size can spill; two arrays paired by ROWS FROM were a little faster, but
    an array holds at most 1 GB), and keeps the pairs that differ on a `compared` column (the columns
    the views over the table read; all, as the images' text, when none is known yet)."""
    o, n = ident("o"), ident("n")
    eq, ne = _op("="), _op("<>")
    text = "pg_catalog.text"

    def value(side: str, c: str) -> str:
        return f"({side}.r {_op('->>')} {string_literal(c)})"

    # a value NULL on one side only, or unequal (IS DISTINCT FROM would look `=` up on the search_path)
    differ = (" OR ".join(f"({value('x', c)} IS NULL) {ne} ({value('y', c)} IS NULL) OR {value('x', c)} {ne} {value('y', c)}"
                          for c in compared) if compared else f"CAST(x.r AS {text}) {ne} CAST(y.r AS {text})")
    return f"""
DECLARE
  logged bigint;
  last bigint;
BEGIN
  IF TG_OP {eq} 'INSERT' THEN
    INSERT INTO {log} (old_row, new_row) SELECT NULL, pg_catalog.to_jsonb({n}.*) FROM idivm_new AS {n};
  ELSIF TG_OP {eq} 'DELETE' THEN
    INSERT INTO {log} (old_row, new_row) SELECT pg_catalog.to_jsonb({o}.*), NULL FROM idivm_old AS {o};
  ELSIF TG_OP {eq} 'UPDATE' THEN
    INSERT INTO {log} (old_row, new_row)
    SELECT x.r, y.r
    FROM (SELECT pg_catalog.to_jsonb({o}.*) AS r, pg_catalog.row_number() OVER () AS i FROM idivm_old AS {o}) AS x
    FULL JOIN (SELECT pg_catalog.to_jsonb({n}.*) AS r, pg_catalog.row_number() OVER () AS i FROM idivm_new AS {n}) AS y
      ON x.i {eq} y.i
    WHERE (x.r IS NULL) {ne} (y.r IS NULL) OR {differ};
  ELSIF TG_OP {eq} 'TRUNCATE' THEN  -- this table's own rows: each truncated partition logs its own
    EXECUTE pg_catalog.format('INSERT INTO {log} (old_row, new_row) SELECT pg_catalog.to_jsonb(o.*), NULL FROM ONLY %s AS o',
                              CAST(TG_RELID AS pg_catalog.regclass));
  END IF;
  GET DIAGNOSTICS logged = ROW_COUNT;
  IF logged {_op(">")} 0 THEN
    last := pg_catalog.currval(CAST({string_literal(sequence)} AS pg_catalog.regclass));
    IF (last {_op("/")} {int(threshold)}) {ne} ((last {_op("-")} logged) {_op("/")} {int(threshold)}) THEN
      PERFORM pg_catalog.pg_notify({string_literal(NOTIFY_CHANNEL)}, {string_literal(str(int(captured_id)))});
    END IF;
  END IF;
  RETURN NULL;
END
"""


def ensure_capture(conn: Connection, info: TableInfo, threshold: Threshold) -> int:
    """Install (once per table) the log and triggers; return the captured table's id. threshold(conn,
    captured id): the pending-change count at which the capture function notifies the scheduler
    (operate/policy.py decides it). A table dropped and created again under a captured name gets the
    triggers again, under the same id, and the log loses the dropped table's rows: the views over it
    went stale with the drop, and a refresh fills them from the new table."""
    existing = catalog.capture_of(conn, info.schema, info.name)
    if existing is not None:
        cid, installed = existing
        catalog.set_captured_key(conn, cid, list(info.key))
        if not installed:
            run(conn, f"TRUNCATE {log_table(cid)}")
            _install_triggers(conn, cid, info, threshold)
        return cid
    cid = catalog.insert_captured(conn, info.schema, info.name, list(info.key))
    log = log_table(cid)
    run(conn, f"CREATE TABLE {log} (xid xid8 NOT NULL DEFAULT pg_current_xact_id(), "
        "seq bigint GENERATED ALWAYS AS IDENTITY, old_row jsonb, new_row jsonb, "
        "logged_at timestamptz NOT NULL DEFAULT now())")
    index_log(conn, cid)
    catalog.set_capture_objects(conn, cid, log, qualified("idivm", f"capture_{cid}"))
    _install_triggers(conn, cid, info, threshold)
    return cid


def _install_triggers(conn: Connection, cid: int, info: TableInfo, threshold: Threshold) -> None:
    install_function(conn, cid, info, threshold)
    t = info.qualified
    fn = qualified("idivm", f"capture_{cid}")
    for name, (when, referencing) in TRIGGER_DDL.items():
        run(conn, f"CREATE TRIGGER {name} {when} ON {t} {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {fn}()")
    # a partitioned table: the same triggers on every partition, before the ALTER TABLE below fires the
    # event trigger (which would log the partitions' rows as newly attached)
    sync_partitions(conn, cid, log_rows=False)
    enable_always(conn, t)


def index_log(conn: Connection, captured_id: int) -> None:
    """The log's index on xid: maintenance reads its window and prune deletes consumed rows through it
    (catalog.unconsumed, catalog.prune_log), so neither pays for the rows kept for other views. Its
    entries are appended at the index's right end (xids grow), the cheapest index insert there is."""
    run(conn, f"CREATE INDEX IF NOT EXISTS {ident(f'log_{int(captured_id)}_xid')} ON {log_table(captured_id)} (xid)")


def enable_always(conn: Connection, table: str, triggers=TRIGGERS) -> None:
    """Make idivm's triggers on `table` (the capture triggers unless named) fire whatever
    session_replication_role says."""
    run(conn, f"ALTER TABLE {table} " + ", ".join(f"ENABLE ALWAYS TRIGGER {ident(trg)}" for trg in triggers))


def sync_logging(conn: Connection) -> None:
    """Capture logs a table's changes only while a deferred view reads it: a table read by immediate
    views alone has its capture triggers disabled (its views are maintained by their writers, and
    nothing would ever consume, hence prune, its log: it grew without bound) and its log emptied;
    they are enabled again, ENABLE ALWAYS, when a deferred view reads it again. Callers hold the
    base tables against writers (registration, set-mode, drop), so no write falls between the
    switch and the snapshot that the deferred view starts from."""
    for t in catalog.capture_logging(conn):
        if t.needed and not t.enabled:
            enable_always(conn, t.qualified)
        elif not t.needed and t.enabled:
            run(conn, f"ALTER TABLE {t.qualified} " + ", ".join(f"DISABLE TRIGGER {ident(trg)}" for trg in TRIGGERS))
            catalog.prune_log(conn, t.id)


def install_function(conn: Connection, captured_id: int, info: TableInfo, threshold: Threshold) -> None:
    """(Re)write the capture function of a captured table: its body follows this idivm's code, its
    notify threshold the current policies and the columns it compares the views over the table
    (CREATE OR REPLACE: the triggers keep pointing at it)."""
    row = catalog.captured_table(conn, captured_id)
    sequence, installed = conn.execute(sa.text(
        "SELECT pg_get_serial_sequence(:l, 'seq'), "
        "(SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(:f || '()'))"),
        {"l": row.log_table, "f": row.capture_function}).one()
    body = _function_body(info, captured_id, row.log_table, sequence, threshold(conn, captured_id),
                          catalog.columns_read_of(conn, captured_id))
    _install_prune(conn, captured_id, row.log_table)
    if body == installed:  # a registration or drop that moved no threshold: replacing the function would
        return  # only make every session compile it again on its next write
    run(conn,
        f"CREATE OR REPLACE FUNCTION {row.capture_function}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER "
        f"AS {string_literal(body)}"
    )


def _install_prune(conn: Connection, captured_id: int, log: str) -> None:
    """prune_function(captured_id), unless it is there as this idivm writes it."""
    body = f"""
BEGIN
  DELETE FROM {log} AS l WHERE l.xid >= idivm_low AND l.xid < idivm_high
    AND NOT EXISTS (SELECT 1 FROM idivm.view_inputs AS vi JOIN idivm.views AS v ON v.id = vi.view_id
                    WHERE vi.captured_table_id = {int(captured_id)} AND v.mode = 'deferred'
                      AND NOT pg_visible_in_snapshot(l.xid, CAST(v.last_snapshot AS pg_snapshot)));
END
"""
    fn = prune_function(captured_id)
    signature = f"{fn}(xid8, xid8)"
    installed = conn.execute(sa.text("SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(:f)"),
                             {"f": signature}).scalar()
    if installed == body:
        return
    run(conn, f"CREATE OR REPLACE FUNCTION {fn}(idivm_low xid8, idivm_high xid8) RETURNS void LANGUAGE plpgsql "
              f"SET client_min_messages = warning AS {string_literal(body)}")
    run(conn, f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")


def reinstall_functions(conn: Connection, threshold: Threshold, captured_ids: list[int] | None = None) -> None:
    """install_function for the given captured tables (all if None) whose base table still exists."""
    for r in catalog.captured_tables_now(conn):
        if (captured_ids is None or r.id in captured_ids) and r.columns:
            install_function(conn, r.id, table_info(r.schema_name, r.table_name, r.columns), threshold)


def drop_capture(conn: Connection, captured_id: int) -> None:
    """Remove triggers, function and log of a table no view reads any more."""
    row = catalog.captured_table(conn, captured_id)
    table = qualified(row.schema_name, row.table_name)
    exists = conn.execute(sa.text("SELECT to_regclass(:t) IS NOT NULL"), {"t": table}).scalar()
    if exists:
        for trg in TRIGGERS:
            run(conn, f"DROP TRIGGER IF EXISTS {ident(trg)} ON {table}")
    # CASCADE: the triggers on the table, should it have been renamed (so not found above)
    run(conn, f"DROP FUNCTION IF EXISTS {row.capture_function}() CASCADE")
    run(conn, f"DROP FUNCTION IF EXISTS {prune_function(captured_id)}(xid8, xid8)")
    run(conn, f"DROP TABLE IF EXISTS {row.log_table}")
    catalog.delete_captured(conn, captured_id)
