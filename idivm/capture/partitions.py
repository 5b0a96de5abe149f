"""Partitioned base tables: capture on the root and on every partition, attached or created later.

PostgreSQL fires a statement-level trigger only on the table a statement names: a write through
the root fires the root's capture triggers (its transition tables hold the rows of every partition
the statement touched, in the root's row type), a write straight to a partition fires only that
partition's. So every table in the partition tree carries the same capture triggers, all logging
into the root's log, and no write is logged twice.

``idivm.sync_partitions(captured_id, log_rows)`` brings the triggers in line with the tree as it is
now; it runs when capture starts (without logging rows: those are in every view's initial fill)
and, through the event trigger of capture/schema_changes.py, after every CREATE TABLE and ALTER
TABLE. A partition that joined the tree (CREATE TABLE ... PARTITION OF,
ATTACH PARTITION) gets the triggers and its rows are logged as inserted: attaching brings rows
into the root without any INSERT. One that left it (DETACH PARTITION) has its rows logged as
deleted and its triggers dropped. Both happen in the DDL's own transaction, so the log stays
exact. A dropped partition's rows cannot be read any more: its views become stale (refresh
rebuilds them). Which partitions carry the triggers is kept in ``idivm.captured_partitions``.
"""
from __future__ import annotations

from sqlalchemy.engine import Connection

from ..sqltext import run, string_literal

SYNC = "idivm.sync_partitions"
TRIGGER_DDL = {  # name -> (timing and event, REFERENCING clause)
    "idivm_capture_insert": ("AFTER INSERT", "REFERENCING NEW TABLE AS idivm_new"),
    "idivm_capture_update": ("AFTER UPDATE", "REFERENCING OLD TABLE AS idivm_old NEW TABLE AS idivm_new"),
    "idivm_capture_delete": ("AFTER DELETE", "REFERENCING OLD TABLE AS idivm_old"),
    "idivm_capture_truncate": ("BEFORE TRUNCATE", ""),
}


def _sync_body() -> str:
    create = "\n".join(
        f"    EXECUTE format('CREATE OR REPLACE TRIGGER {name} {when} ON %s {ref} FOR EACH STATEMENT EXECUTE FUNCTION %s()', "
        "p.relid::regclass, c.capture_function);" for name, (when, ref) in TRIGGER_DDL.items())
    drop = "\n".join(f"      EXECUTE format('DROP TRIGGER IF EXISTS {name} ON %s', p.relid::regclass);" for name in TRIGGER_DDL)
    always = ", ".join(f"ENABLE ALWAYS TRIGGER {name}" for name in TRIGGER_DDL)
    return f"""
DECLARE
  c record;
  root regclass;
  p record;
BEGIN
  IF current_setting('idivm.syncing_partitions', true) = 'on' THEN
    RETURN;  -- called again by the event trigger for this function's own ALTER TABLE
  END IF;
  PERFORM set_config('idivm.syncing_partitions', 'on', true);
  SELECT * INTO c FROM idivm.captured_tables WHERE id = captured;
  root := to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name));
  IF root IS NULL THEN
    PERFORM set_config('idivm.syncing_partitions', 'off', true);
    RETURN;
  END IF;
  FOR p IN SELECT t.relid FROM pg_partition_tree(root) AS t WHERE t.relid <> root AND NOT EXISTS (
             SELECT 1 FROM idivm.captured_partitions AS x WHERE x.captured_id = captured AND x.relid = t.relid) LOOP
    INSERT INTO idivm.captured_partitions (captured_id, relid) VALUES (captured, p.relid);  -- first: on_alter_table
{create}
    EXECUTE format('ALTER TABLE %s {always}', p.relid::regclass);
    IF log_rows THEN  -- attached later: its rows arrive without an INSERT
      EXECUTE format('INSERT INTO %s (old_row, new_row) SELECT NULL, to_jsonb(r.*) FROM ONLY %s AS r',
                     c.log_table, p.relid::regclass);
    END IF;
  END LOOP;
  FOR p IN SELECT x.relid FROM idivm.captured_partitions AS x WHERE x.captured_id = captured AND NOT EXISTS (
             SELECT 1 FROM pg_partition_tree(root) AS t WHERE t.relid = x.relid) LOOP
    IF EXISTS (SELECT 1 FROM pg_class WHERE oid = p.relid) THEN
      EXECUTE format('INSERT INTO %s (old_row, new_row) SELECT to_jsonb(r.*), NULL FROM ONLY %s AS r',
                     c.log_table, p.relid::regclass);
{drop}
    END IF;
    DELETE FROM idivm.captured_partitions AS x WHERE x.captured_id = captured AND x.relid = p.relid;
  END LOOP;
  PERFORM set_config('idivm.syncing_partitions', 'off', true);
END
"""


def install_sync_function(conn: Connection) -> None:
    """(Re)create idivm.sync_partitions (idempotent; `idivm init` runs it)."""
    run(conn, f"CREATE OR REPLACE FUNCTION {SYNC}(captured int, log_rows boolean DEFAULT true) RETURNS void LANGUAGE plpgsql SECURITY DEFINER "
              f"SET search_path = pg_catalog, pg_temp AS {string_literal(_sync_body())}")


def sync_partitions(conn: Connection, captured_id: int, log_rows: bool = True) -> None:
    """Bring the partitions' triggers in line with the tree; log_rows=False when capture starts (the
    rows already there are in every view's initial fill, not changes)."""
    run(conn, f"SELECT {SYNC}(%s, %s)", (captured_id, log_rows))
