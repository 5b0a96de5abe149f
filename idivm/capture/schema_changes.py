"""Schema change detection: event triggers that mark views stale when their base tables change.

A Δ-script is compiled against the base tables' columns as they were at registration. After an
ALTER TABLE that drops, renames or retypes one of those columns, changes the primary key, or
renames the table, or after a DROP of a base table or of the view's own table, the script no
longer means what it did, so maintaining would be wrong or fail. The event triggers record why in
``idivm.views.stale_reason``; maintenance then refuses the view with that reason, the scheduler
skips it, `idivm status` shows it, and `idivm refresh NAME` rebuilds it from its definition.
Adding a column changes nothing and leaves views alone. Partitions created, attached or detached
under a captured partitioned table get (or lose) its capture triggers, with their rows logged
(capture/partitions.py); a dropped partition makes the views over its root stale.

The DDL itself is never refused, and a failure inside the check only raises a WARNING: an
application's migration must not break because idivm watches its tables. Event triggers need a
superuser to create; without one, init skips them (install_event_triggers returns False) and
schema changes go unnoticed until a maintenance fails on them.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..introspect.reflect import type_name
from ..sqltext import run, string_literal

ON_ALTER = r"""
DECLARE
  cmd record;
  inp record;
  reason text;
  now_named text;
BEGIN
  FOR cmd IN SELECT DISTINCT objid FROM pg_event_trigger_ddl_commands()
             WHERE classid = 'pg_class'::regclass LOOP  -- a table, or one of its columns (RENAME COLUMN)
    IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = cmd.objid AND t.tgname = 'idivm_immediate_enter')
       AND to_regprocedure('idivm.immediate_apply()') IS NOT NULL THEN
      -- writers' sessions keep the plans of immediate mode's apply function, made for the table's row
      -- type before this change (PostgreSQL does not invalidate them for it): touching the function's
      -- definition makes every session compile it, and plan it, afresh
      ALTER FUNCTION idivm.immediate_apply() SET client_min_messages = warning;
    END IF;
    FOR inp IN
      SELECT vi.view_id, vi.columns, c.schema_name, c.table_name, c.key_columns
      FROM pg_trigger t
      JOIN pg_proc p ON p.oid = t.tgfoid
      JOIN idivm.captured_tables c ON p.proname = 'capture_' || c.id
      JOIN idivm.view_inputs vi ON vi.captured_table_id = c.id
      WHERE t.tgrelid = cmd.objid AND t.tgname = 'idivm_capture_insert'
        AND NOT EXISTS (SELECT 1 FROM idivm.captured_partitions x WHERE x.relid = cmd.objid)  -- the root is checked
    LOOP
      reason := NULL;
      SELECT n.nspname || '.' || r.relname INTO now_named
      FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace WHERE r.oid = cmd.objid;
      IF now_named IS DISTINCT FROM inp.schema_name || '.' || inp.table_name THEN
        reason := format('base table %s.%s was renamed to %s', inp.schema_name, inp.table_name, now_named);
      END IF;
      IF reason IS NULL THEN
        SELECT string_agg(u.value ->> 0, ', ') INTO reason
        FROM json_array_elements(inp.columns) AS u
        WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
                          JOIN pg_namespace tn ON tn.oid = ty.typnamespace
                          WHERE a.attrelid = cmd.objid AND a.attnum > 0
                          AND NOT a.attisdropped AND a.attname = u.value ->> 0
                          AND @TYPE_NAME@ = u.value ->> 1);
        IF reason IS NOT NULL THEN
          reason := format('column(s) %s of base table %s.%s were dropped, renamed or changed type',
                           reason, inp.schema_name, inp.table_name);
        END IF;
      END IF;
      IF reason IS NULL AND (
          SELECT coalesce(json_agg(a.attname ORDER BY k.ord)::text, '[]') FROM pg_index i
          CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
          WHERE i.indrelid = cmd.objid AND i.indisprimary
        ) IS DISTINCT FROM (SELECT json_agg(x)::text FROM json_array_elements_text(inp.key_columns) AS x) THEN
        reason := format('the primary key of base table %s.%s changed', inp.schema_name, inp.table_name);
      END IF;
      IF reason IS NOT NULL THEN
        UPDATE idivm.views SET stale_reason = reason WHERE id = inp.view_id AND stale_reason IS NULL;
      END IF;
    END LOOP;
  END LOOP;
EXCEPTION WHEN OTHERS THEN
  RAISE WARNING 'idivm: could not check this ALTER TABLE against maintained views: %', SQLERRM;
END
"""

ON_ALTER = ON_ALTER.replace("@TYPE_NAME@", type_name("a", "ty", "tn"))  # as reflection names types

ON_DROP = r"""
DECLARE
  obj record;
BEGIN
  FOR obj IN SELECT schema_name, object_name, object_type FROM pg_event_trigger_dropped_objects()
             WHERE object_type IN ('table', 'view') AND NOT is_temporary LOOP
    UPDATE idivm.views AS v
    SET stale_reason = format('base table %s.%s was dropped', obj.schema_name, obj.object_name)
    WHERE v.stale_reason IS NULL AND v.id IN (
      SELECT vi.view_id FROM idivm.view_inputs vi JOIN idivm.captured_tables c ON c.id = vi.captured_table_id
      WHERE c.schema_name = obj.schema_name AND c.table_name = obj.object_name);
    UPDATE idivm.views AS v
    SET stale_reason = format('its %s %s.%s was dropped', obj.object_type, obj.schema_name, obj.object_name)
    WHERE v.stale_reason IS NULL AND ((v.schema_name = obj.schema_name AND v.view_name = obj.object_name)
                                      OR (obj.schema_name = 'idivm' AND obj.object_name = 'view_' || v.id));
  END LOOP;
  FOR obj IN SELECT d.schema_name, d.object_name, x.captured_id, c.schema_name AS root_schema, c.table_name AS root
             FROM pg_event_trigger_dropped_objects() AS d
             JOIN idivm.captured_partitions AS x ON x.relid = d.objid
             JOIN idivm.captured_tables AS c ON c.id = x.captured_id
             WHERE d.object_type = 'table' LOOP
    UPDATE idivm.views AS v
    SET stale_reason = format('partition %s.%s of base table %s.%s was dropped with its rows', obj.schema_name,
                              obj.object_name, obj.root_schema, obj.root)
    WHERE v.stale_reason IS NULL AND v.id IN (SELECT vi.view_id FROM idivm.view_inputs vi
                                              WHERE vi.captured_table_id = obj.captured_id);
    DELETE FROM idivm.captured_partitions AS x WHERE x.relid IN (
      SELECT d.objid FROM pg_event_trigger_dropped_objects() AS d);
  END LOOP;
EXCEPTION WHEN OTHERS THEN
  RAISE WARNING 'idivm: could not check this DROP against maintained views: %', SQLERRM;
END
"""

ON_PARTITIONS = r"""
DECLARE
  cmd record;
  cap record;
BEGIN
  -- only a partition or a partitioned table can change a tree: every other CREATE and ALTER TABLE
  -- (idivm's own tables at each registration among them) returns here
  FOR cmd IN SELECT DISTINCT d.objid FROM pg_event_trigger_ddl_commands() AS d JOIN pg_class AS r ON r.oid = d.objid
             WHERE d.classid = 'pg_class'::regclass AND (r.relispartition OR r.relkind = 'p') LOOP
    FOR cap IN SELECT c.id FROM idivm.captured_tables AS c
               WHERE to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name)) IN (
                 SELECT a.relid FROM pg_partition_ancestors(cmd.objid) AS a) LOOP
      PERFORM idivm.sync_partitions(cap.id);  -- capture/partitions.py
    END LOOP;
  END LOOP;
END
"""

TRIGGERS = {  # event trigger -> (event, tags, function, body)
    "idivm_on_alter": ("ddl_command_end", ("ALTER TABLE",), "idivm.on_alter_table", ON_ALTER),
    "idivm_on_drop": ("sql_drop", ("DROP TABLE", "DROP VIEW", "DROP SCHEMA", "DROP OWNED"), "idivm.on_drop_table",
                      ON_DROP),
    # partitions created, attached or detached: capture follows them (not a WARNING on failure: a
    # partition left without capture would lose changes, so the DDL fails instead)
    "idivm_on_partitions": ("ddl_command_end", ("CREATE TABLE", "ALTER TABLE"), "idivm.on_partitions", ON_PARTITIONS),
}


def install_event_triggers(conn: Connection) -> bool:
    """Create or replace the event triggers (idempotent). Returns False, doing nothing, when the
    current role is not a superuser (PostgreSQL requires one for event triggers)."""
    if not conn.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar():
        return False
    for name, (event, tags, function, body) in TRIGGERS.items():
        run(conn, f"CREATE OR REPLACE FUNCTION {function}() RETURNS event_trigger LANGUAGE plpgsql "
                  f"SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {string_literal(body)}")
        run(conn, f"DROP EVENT TRIGGER IF EXISTS {name}")
        when = ", ".join(string_literal(t) for t in tags)
        run(conn, f"CREATE EVENT TRIGGER {name} ON {event} WHEN TAG IN ({when}) EXECUTE FUNCTION {function}()")
    return True


def drop_event_triggers(conn: Connection) -> None:
    """Remove the event triggers (idivm uninstall; their functions go with the idivm schema)."""
    for name in TRIGGERS:
        run(conn, f"DROP EVENT TRIGGER IF EXISTS {name}")


def event_triggers_installed(conn: Connection) -> bool:
    return bool(conn.execute(sa.text(
        "SELECT count(*) = :n FROM pg_event_trigger WHERE evtname = ANY(:names) AND evtenabled <> 'D'"
    ), {"n": len(TRIGGERS), "names": list(TRIGGERS)}).scalar())
