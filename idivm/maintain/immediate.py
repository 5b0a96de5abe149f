"""Immediate maintenance: a view kept fresh inside every writing statement's own transaction.

For an immediate view, each of its base tables gets statement-level AFTER triggers (named
``idivm_immediate_<view>_<op>``) whose function, generated per (view, table):

1. returns at once if the view is stale (a schema change; `idivm refresh` rebuilds it);
2. takes an EXCLUSIVE lock on the view table: writers of the view's tables are serialised at
   the view (readers are not blocked), so two transactions never derive changes from states
   that miss each other's committed rows;
3. turns the statement's transition tables into the table's i-diff instance (same table and
   shape as deferred maintenance builds from the log: kind, pre__c, post__c; an UPDATE pairs old
   and new rows by key, a key update becomes a delete and an insert, unchanged rows vanish);
4. runs the view's stored Δ-script statements that this i-diff drives (and those driven by none),
   exactly as deferred maintenance would with this one statement's changes: after the statement
   the base tables are in the post-state the script assumes.

Limits, each refused with a message naming it: writers must run at READ COMMITTED (under
REPEATABLE READ a writer's snapshot could miss rows another committed before it got the lock);
TRUNCATE of a base table is refused (no transition tables exist for it). The function is
SECURITY DEFINER with a fixed search_path, like the capture functions.

Switching modes (api.Engine.set_mode) happens with the base tables locked against writers:
deferred -> immediate first applies every pending change in the same transaction;
immediate -> deferred records the current snapshot as consumed.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.tables import TableInfo
from ..compile.render import delta_table
from ..frontend.reflect import table_info
from ..sqltext import ident, qualified, run, string_literal

OPS = {"insert": "AFTER INSERT", "update": "AFTER UPDATE", "delete": "AFTER DELETE", "truncate": "BEFORE TRUNCATE"}
REFERENCING = {"insert": "REFERENCING NEW TABLE AS idivm_new", "delete": "REFERENCING OLD TABLE AS idivm_old",
               "update": "REFERENCING OLD TABLE AS idivm_old NEW TABLE AS idivm_new", "truncate": ""}


def function_name(view_id: int, captured_id: int) -> str:
    return qualified("idivm", f"immediate_{view_id}_{captured_id}")


def trigger_name(view_id: int, op: str) -> str:
    return ident(f"idivm_immediate_{view_id}_{op}")


def instance_columns(info: TableInfo) -> str:
    """The i-diff instance table's columns (as maintain/instances.py builds them from the log)."""
    cols = [f"{ident('kind')} text"]
    cols += [f"{ident('pre__' + c)} {t}" for c, t in info.columns]
    cols += [f"{ident('post__' + c)} {t}" for c, t in info.columns]
    return ", ".join(cols)


def _fold(info: TableInfo) -> str:
    """This statement's changes as i-diff rows (transition tables -> kind, pre__*, post__*)."""
    o, n = ident("o"), ident("n")
    pre = ", ".join(f"{o}.{ident(c)}" for c in info.column_names)
    post = ", ".join(f"{n}.{ident(c)}" for c in info.column_names)
    nulls = ", ".join("NULL" for _ in info.column_names)
    first = ident(info.key[0])
    on = " AND ".join(f"{o}.{ident(k)} = {n}.{ident(k)}" for k in info.key)
    return {
        "INSERT": f"SELECT 'I', {nulls}, {post} FROM idivm_new AS {n}",
        "DELETE": f"SELECT 'D', {pre}, {nulls} FROM idivm_old AS {o}",
        "UPDATE": (f"SELECT CASE WHEN {o}.{first} IS NULL THEN 'I' WHEN {n}.{first} IS NULL THEN 'D' ELSE 'U' END, "
                   f"{pre}, {post} FROM idivm_old AS {o} FULL JOIN idivm_new AS {n} ON {on} "
                   f"WHERE {o} IS DISTINCT FROM {n}"),
    }


def _body(view_id: int, view_table: str, shown: str, captured_id: int, info: TableInfo,
          all_inputs: dict[int, TableInfo], statements: list[sa.Row]) -> str:
    target = delta_table(captured_id)
    ensure = "\n".join(f"  CREATE TEMP TABLE IF NOT EXISTS {delta_table(c)} ({instance_columns(i)}) ON COMMIT DELETE ROWS;"
                       for c, i in sorted(all_inputs.items()))
    scratch = ", ".join(f"pg_temp.{ident(f'idivm_{what}_{view_id}')}" for what in ("affected", "group_deltas"))
    script = "\n".join(f"    EXECUTE {string_literal(st.sql)};" for st in statements
                       if st.driven_by is None or st.driven_by == captured_id)
    fold = _fold(info)
    msg_truncate = string_literal(
        f"TRUNCATE of {info.qualified} is not supported while view {shown} is maintained immediately; "
        f"use DELETE, or switch the view to deferred (idivm set-mode {shown} deferred)")
    msg_isolation = string_literal(
        f"view {shown} is maintained immediately, which needs writers at READ COMMITTED; this transaction "
        f"runs at %s (or switch the view to deferred: idivm set-mode {shown} deferred)")
    return f"""
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    RAISE EXCEPTION {msg_truncate} USING ERRCODE = 'feature_not_supported';
  END IF;
  IF EXISTS (SELECT 1 FROM idivm.views WHERE id = {int(view_id)} AND stale_reason IS NOT NULL) THEN
    RETURN NULL;  -- stale after a schema change: `idivm refresh` rebuilds it
  END IF;
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION {msg_isolation}, current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
  END IF;
  LOCK TABLE {view_table} IN EXCLUSIVE MODE;
{ensure}
  DELETE FROM {target};
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {target} {fold["INSERT"]};
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO {target} {fold["DELETE"]};
  ELSE
    INSERT INTO {target} {fold["UPDATE"]};
  END IF;
  IF FOUND THEN
    DROP TABLE IF EXISTS {scratch};
{script}
    DELETE FROM {target};
  END IF;
  RETURN NULL;
END
"""


def install(conn: Connection, view_id: int) -> None:
    """Create the immediate triggers of a view on each of its base tables (see the module docstring)."""
    from .executor import view_inputs

    view = conn.execute(sa.text("SELECT schema_name, view_name FROM idivm.views WHERE id = :v"), {"v": view_id}).one()
    shown = f"{view.schema_name}.{view.view_name}"
    inputs = {t.id: table_info(t.schema_name, t.table_name, t.columns) for t in view_inputs(conn, view_id, reflect=True)}
    statements = conn.execute(sa.text(
        "SELECT sql, driven_by FROM idivm.script_statements WHERE view_id = :v ORDER BY phase, position"
    ), {"v": view_id}).all()
    for cid, info in sorted(inputs.items()):
        fn = function_name(view_id, cid)
        body = _body(view_id, qualified(view.schema_name, view.view_name), shown, cid, info, inputs, statements)
        run(conn, f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER "
                  f"SET search_path = pg_catalog, pg_temp AS {string_literal(body)}")
        for op, when in OPS.items():
            run(conn, f"CREATE TRIGGER {trigger_name(view_id, op)} {when} ON {info.qualified} {REFERENCING[op]} "
                      f"FOR EACH STATEMENT EXECUTE FUNCTION {fn}()")


def uninstall(conn: Connection, view_id: int) -> None:
    """Drop the view's immediate triggers (with their functions), wherever its tables now are."""
    for (name,) in conn.execute(sa.text(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'idivm' AND p.proname LIKE :pattern"
    ), {"pattern": f"immediate\\_{int(view_id)}\\_%"}).all():
        run(conn, f"DROP FUNCTION IF EXISTS {qualified('idivm', name)}() CASCADE")
