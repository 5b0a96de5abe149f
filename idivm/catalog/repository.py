"""Every query on idivm's catalog tables, as named functions (the catalog's schema: migrations/).

The API, maintenance, the scheduler, status and capture read and write the catalog only through
these, so a change of the catalog's shape is one migration plus this module. Server-side code
(capture functions, event triggers, immediate mode's PL/pgSQL) reads the catalog in its own SQL;
those functions are written by capture/ and engines/postgres/immediate.py.

Rows are SQLAlchemy Rows with the catalog's column names.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..introspect.reflect import columns_json
from ..sqltext import qualified, run_batch, string_literal

# -- views ------------------------------------------------------------------------------------


# What maintenance needs of every view: a view's row also holds its Δ-program (JSON, often tens of
# kilobytes), which `SELECT *` reads and sends for every view at every maintenance, a visible part
# of a small maintenance's time (docs/benchmarks.md, "Measurements behind the code").
NAMES = "id, schema_name, view_name"
NAMES_AND_ENGINE = "id, schema_name, view_name, policy_engine"
# what a view's status reads (operate/status.py, every scheduler pass): not its definition, plan and
# stored program, the large columns
STATUS = ("id, schema_name, view_name, strategy, mode, last_snapshot, last_maintained_at, last_attempt_at, "
          "consecutive_failures, stale_reason, last_duration_ms, last_changes, last_error, policy_every, "
          "policy_max_pending, policy_max_staleness, policy_engine, policy_recompute")


def all_views(conn: Connection, order: str = "id", columns: str = "*") -> list[sa.Row]:
    """Every registered view, by id or ("name") by schema and name; `columns` (a constant of this
    module, or "*") narrows the rows."""
    by = "schema_name, view_name" if order == "name" else "id"
    return conn.execute(sa.text(f"SELECT {columns} FROM idivm.views ORDER BY {by}")).all()


def view_ids(conn: Connection) -> list[int]:
    return conn.execute(sa.text("SELECT id FROM idivm.views ORDER BY id")).scalars().all()


def view_by_id(conn: Connection, view_id: int) -> sa.Row:
    return conn.execute(sa.text("SELECT * FROM idivm.views WHERE id = :v"), {"v": view_id}).one()


def view_by_name(conn: Connection, schema: str | None, name: str, columns: str = "*") -> sa.Row | None:
    """The view `schema.name` (schema None: the session's current schema)."""
    return conn.execute(sa.text(f"SELECT {columns} FROM idivm.views "
                                "WHERE schema_name = coalesce(CAST(:s AS text), current_schema()) AND view_name = :n"),
                        {"s": schema, "n": name}).first()


def insert_view(conn: Connection, schema: str, name: str, definition: str, strategy: str, outputs: list[str],
                ids: list, plan_text: str) -> int:
    """A new view, consumed up to the registering transaction's snapshot; returns its id."""
    return conn.execute(sa.text(
        "INSERT INTO idivm.views (schema_name, view_name, definition, strategy, output_columns, id_columns, "
        "plan_text, last_snapshot) VALUES (:s, :n, :d, :st, CAST(:o AS json), CAST(:i AS json), :p, "
        "CAST(pg_current_snapshot() AS text)) RETURNING id"
    ), {"s": schema, "n": name, "d": definition, "st": strategy, "o": json.dumps(outputs), "i": json.dumps(ids),
        "p": plan_text}).scalar_one()


def set_ids(conn: Connection, view_id: int, ids: list) -> None:
    conn.execute(sa.text("UPDATE idivm.views SET id_columns = CAST(:i AS json) WHERE id = :v"),
                 {"i": json.dumps(ids), "v": view_id})


def set_program(conn: Connection, view_id: int, program_json: str) -> None:
    conn.execute(sa.text("UPDATE idivm.views SET program = :p WHERE id = :v"), {"p": program_json, "v": view_id})


def set_recompute_ms(conn: Connection, view_id: int, ms: float) -> None:
    """The view's cost of recomputing, with its cache and without, as its registration's fill measured
    it (maintenances that recompute measure each again)."""
    conn.execute(sa.text("UPDATE idivm.views SET recompute_ms = :ms, rebuild_ms = :ms WHERE id = :v"),
                 {"ms": ms, "v": view_id})


def program_of(conn: Connection, view_id: int) -> str | None:
    return conn.execute(sa.text("SELECT program FROM idivm.views WHERE id = :v"), {"v": view_id}).scalar()


def delete_view(conn: Connection, view_id: int) -> None:
    """The view's catalog rows (inputs, statements, schemas, derivations cascade)."""
    conn.execute(sa.text("DELETE FROM idivm.views WHERE id = :v"), {"v": view_id})


def set_immediate(conn: Connection, view_id: int) -> None:
    conn.execute(sa.text("UPDATE idivm.views SET mode = 'immediate' WHERE id = :v"), {"v": view_id})


def set_deferred_from_now(conn: Connection, view_id: int) -> None:
    """Deferred again: everything committed so far counts as consumed."""
    conn.execute(sa.text("UPDATE idivm.views SET mode = 'deferred', "
                         "last_snapshot = CAST(pg_current_snapshot() AS text) WHERE id = :v"), {"v": view_id})


def caches_stale(conn: Connection, view_id: int) -> bool:
    """Whether the view's last recomputation left its cache stale (engines/postgres/recompute.py)."""
    return bool(conn.execute(sa.text("SELECT caches_stale FROM idivm.views WHERE id = :v"), {"v": view_id}).scalar())


def set_caches_fresh(conn: Connection, view_id: int) -> None:
    conn.execute(sa.text("UPDATE idivm.views SET caches_stale = false, stale_regret_ms = 0 WHERE id = :v"),
                 {"v": view_id})


def set_last_snapshot(conn: Connection, view_id: int, snapshot: str) -> None:
    """Set the snapshot up to which the view has consumed its inputs' changes (pg_snapshot text)."""
    conn.execute(sa.text("UPDATE idivm.views SET last_snapshot = :s WHERE id = :v"), {"s": snapshot, "v": view_id})


def rewritten_since_snapshot(conn: Connection, tables: set[tuple[str, str]]) -> str | None:
    """The first of these tables (schema, name) truncated or rewritten after the transaction's
    snapshot was taken, as idivm.rewritten_since_snapshot names it; None if none was."""
    names = [qualified(s, t) for s, t in sorted(tables)]
    return conn.execute(sa.text("SELECT idivm.rewritten_since_snapshot(CAST(:t AS regclass[]))"), {"t": names}).scalar()


def logged_in_this_transaction(conn: Connection, captured_id: int) -> bool:
    """Whether the captured table's log holds a change of this transaction (a table read by
    immediate views alone keeps no log)."""
    log = conn.execute(sa.text("SELECT log_table FROM idivm.captured_tables "
                               "WHERE id = :c AND to_regclass(log_table) IS NOT NULL"), {"c": captured_id}).scalar()
    return log is not None and conn.exec_driver_sql(
        f"SELECT 1 FROM {log} WHERE xid = pg_current_xact_id_if_assigned() LIMIT 1").first() is not None


def storage_bytes(conn: Connection) -> dict[int, tuple[int, int]]:
    """view id -> (bytes of its storage table, bytes of its caches and maps), in one statement."""
    rows = conn.execute(sa.text(
        "SELECT v.id, coalesce(pg_total_relation_size(to_regclass('idivm.view_' || v.id)), 0), "  # names.storage_table
        "(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        " JOIN pg_namespace n ON n.oid = c.relnamespace "
        " WHERE n.nspname = 'idivm' AND c.relkind IN ('r', 'p') "
        "   AND (c.relname = 'cache_' || v.id OR c.relname LIKE 'map\\_' || v.id || '\\_%')) "
        "FROM idivm.views v")).all()
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


def auxiliary_tables(conn: Connection, view_id: int) -> list[str]:
    """The names (in schema idivm) of a view's cache and maps."""
    return [r[0] for r in conn.execute(sa.text(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'idivm' AND c.relkind IN ('r', 'p') "
        "AND (c.relname = :cache OR c.relname LIKE :maps) ORDER BY 1"),
        {"cache": f"cache_{view_id}", "maps": f"map\\_{view_id}\\_%"}).all()]


POLICY_COLUMNS = ("policy_every", "policy_max_pending", "policy_max_staleness", "policy_engine", "policy_recompute")


def set_policy(conn: Connection, view_id: int, values: dict[str, float | int | None], reset: bool = False) -> None:
    """Store the given policy settings (column -> value; None leaves a setting as it is); reset first
    clears all of them."""
    if reset:
        conn.execute(sa.text("UPDATE idivm.views SET " + ", ".join(f"{c} = NULL" for c in POLICY_COLUMNS)
                             + " WHERE id = :v"), {"v": view_id})
    for column, value in values.items():
        assert column in POLICY_COLUMNS, column
        if value is not None:
            conn.execute(sa.text(f"UPDATE idivm.views SET {column} = :x WHERE id = :v"), {"x": value, "v": view_id})


def copy_policy(conn: Connection, source: sa.Row, schema: str, name: str) -> None:
    """Give the view schema.name the policy settings of a view row (a rebuilt view keeps its policy)."""
    conn.execute(sa.text(
        "UPDATE idivm.views SET " + ", ".join(f"{c} = :{c}" for c in POLICY_COLUMNS)
        + " WHERE schema_name = :sc AND view_name = :n"),
        {**{c: getattr(source, c) for c in POLICY_COLUMNS}, "sc": schema, "n": name})


def notify_threshold(conn: Connection, captured_id: int, default_max_pending: int) -> int:
    """The smallest max-pending of the views over a captured table (the capture function's NOTIFY
    threshold); the default when no view reads it yet."""
    value = conn.execute(sa.text(
        "SELECT min(coalesce(v.policy_max_pending, :d)) FROM idivm.view_inputs vi "
        "JOIN idivm.views v ON v.id = vi.view_id WHERE vi.captured_table_id = :c"
    ), {"d": default_max_pending, "c": captured_id}).scalar()
    return max(int(value if value is not None else default_max_pending), 1)


# -- maintenance state ------------------------------------------------------------------------


def record_failure(conn: Connection, view_id: int, error: str) -> None:
    conn.execute(sa.text(
        "UPDATE idivm.views SET consecutive_failures = consecutive_failures + 1, last_error = :e, "
        "last_attempt_at = now() WHERE id = :v"), {"e": error, "v": view_id})


# -- inputs: the captured base tables each view reads ------------------------------------------


def captured_columns() -> str:
    """SQL: the columns of the base table of `idivm.captured_tables AS c` as they are now (NULL if
    it is gone), as columns_json (introspect/reflect.py) writes them."""
    return columns_json("to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name))")


def view_inputs(conn: Connection, view_id: int, reflect: bool = False) -> list[sa.Row]:
    """The captured tables a view reads (id, schema_name, table_name, key_columns, log_table,
    read_columns: the names of the columns the view reads, as registered; with reflect, their current
    columns too)."""
    return conn.execute(sa.text(
        "SELECT c.id, c.schema_name, c.table_name, c.key_columns, c.log_table, "
        "ARRAY(SELECT u ->> 0 FROM json_array_elements(vi.columns) AS u) AS read_columns"
        + (f", {captured_columns()} AS columns" if reflect else "")
        + " FROM idivm.view_inputs vi JOIN idivm.captured_tables c ON c.id = vi.captured_table_id "
        "WHERE vi.view_id = :v ORDER BY c.id"), {"v": view_id}).all()


def input_ids(conn: Connection, view_id: int) -> list[int]:
    return conn.execute(sa.text(
        "SELECT captured_table_id FROM idivm.view_inputs WHERE view_id = :v"), {"v": view_id}).scalars().all()


def all_inputs(conn: Connection) -> list[sa.Row]:
    """(view_id, schema_name, table_name, log_table) of every view's inputs."""
    return conn.execute(sa.text(
        "SELECT vi.view_id, c.schema_name, c.table_name, c.log_table FROM idivm.view_inputs vi "
        "JOIN idivm.captured_tables c ON c.id = vi.captured_table_id ORDER BY c.schema_name, c.table_name"
    )).all()


def insert_input(conn: Connection, view_id: int, captured_id: int, columns) -> None:
    conn.execute(sa.text("INSERT INTO idivm.view_inputs (view_id, captured_table_id, columns) "
                         "VALUES (:v, :c, CAST(:cols AS json))"),
                 {"v": view_id, "c": captured_id, "cols": json.dumps([list(c) for c in columns])})


def is_read(conn: Connection, captured_id: int) -> bool:
    """Whether any view still reads a captured table."""
    return conn.execute(sa.text("SELECT 1 FROM idivm.view_inputs WHERE captured_table_id = :c"),
                        {"c": captured_id}).first() is not None


def partitioned_inputs(conn: Connection, view_id: int) -> str | None:
    """The view's partitioned base tables, as one printable list (None if there are none)."""
    return conn.execute(sa.text(
        "SELECT string_agg(format('%I.%I', c.schema_name, c.table_name), ', ') FROM idivm.view_inputs vi "
        "JOIN idivm.captured_tables c ON c.id = vi.captured_table_id "
        "JOIN pg_class r ON r.oid = to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name)) "
        "WHERE vi.view_id = :v AND r.relkind = 'p'"), {"v": view_id}).scalar()


def captured_ids_by_table(conn: Connection, view_id: int) -> dict[tuple[str, str], int]:
    return {(r.schema_name, r.table_name): r.id for r in view_inputs(conn, view_id)}


def prune_log(conn: Connection, captured_id: int) -> None:
    """prune_logs() of one log."""
    prune_logs(conn, [captured_id])


def prune_logs(conn: Connection, captured_ids: list[int], asynchronous: bool = False, then: str | None = None) -> None:
    """Delete the log rows that every deferred view over each captured table has consumed:
    ``idivm.prune_logs(ids)``, the server-side function that `CALL idivm.maintain_all()` prunes with
    too (engines/postgres/server_maintenance.py, installed by init), in one round trip. It deletes
    through the log's xid index, between two bounds read first and given to the log's own prune
    function (capture/triggers.prune_function) as parameters of its DELETE (its plans estimate them
    as the range they are; behind a subquery the planner guessed a third of the log and scanned all
    of it):

    - below: the table's `pruned_below`, the smallest xmin of those views' snapshots when the log was
      last pruned. Every row below it was visible to them all, so that prune deleted it: what is left
      there are dead index entries until VACUUM, which a prune must not walk again (after a view
      consumed a large window, every later prune walked them all: docs/benchmarks.md, "Measurements behind the code");
    - above: the smallest xmax of the views' snapshots, as no row at or above it is consumed by all.

    So the rows kept for a view that is maintained rarely are not read again by every prune of the
    views maintained often. `asynchronous` (for a caller in autocommit mode): that round trip
    commits without waiting for its WAL flush (a prune lost in a crash is simply done again by the
    next one). With no deferred view over a table, every row visible now is consumed. `then`: a
    statement of the caller's sent in the same round trip, after the prune."""
    ids = ", ".join(str(int(cid)) for cid in captured_ids)
    statements = ["SET LOCAL synchronous_commit = off"] if asynchronous else []  # the batch is one transaction
    if ids:
        statements.append(f"SELECT idivm.prune_logs(ARRAY[{ids}]::bigint[])")
    if then:
        statements.append(then)
    if statements:
        run_batch(conn, statements)


# -- views over views -------------------------------------------------------------------------


def mark_stale(conn: Connection, view_id: int, reason: str) -> None:
    conn.execute(sa.text("UPDATE idivm.views SET stale_reason = :r WHERE id = :v AND stale_reason IS NULL"),
                 {"r": reason, "v": view_id})


def reads_edges(conn: Connection) -> list[sa.Row]:
    """(view_id, reads): a view and a maintained view whose table it reads."""
    return conn.execute(sa.text(
        "SELECT vi.view_id, lower.id AS reads FROM idivm.view_inputs vi "
        "JOIN idivm.captured_tables c ON c.id = vi.captured_table_id "
        "JOIN idivm.views lower ON c.schema_name = 'idivm' AND c.table_name = 'view_' || lower.id"  # names.storage_table
    )).all()


def readers_of(conn: Connection, view_id: int) -> list[str]:
    """schema.name of the views that read this one."""
    return sorted(conn.execute(sa.text(
        "SELECT upper.schema_name || '.' || upper.view_name FROM idivm.views lower "
        "JOIN idivm.captured_tables c ON c.schema_name = 'idivm' AND c.table_name = 'view_' || lower.id "
        "JOIN idivm.view_inputs vi ON vi.captured_table_id = c.id "
        "JOIN idivm.views upper ON upper.id = vi.view_id WHERE lower.id = :v"
    ), {"v": view_id}).scalars().all())


# -- compiled artefacts: i-diff schemas, derivations, rendered statements ---------------------


def insert_diff_schemas(conn: Connection, view_id: int, schemas: list[tuple]) -> None:
    """The view's i-diff schemas, each (scan, captured id, kind, attributes, conditional, label), in order."""
    if schemas:
        conn.execute(sa.text("INSERT INTO idivm.diff_schemas VALUES (:v, :p, :a, :c, :k, CAST(:at AS json), :cond, :l)"),
                     [{"v": view_id, "p": pos, "a": scan, "c": cid, "k": kind, "at": json.dumps(list(attrs)),
                       "cond": conditional, "l": label}
                      for pos, (scan, cid, kind, attrs, conditional, label) in enumerate(schemas)])


def diff_schema_labels(conn: Connection, view_id: int) -> list[str]:
    return conn.execute(sa.text("SELECT label FROM idivm.diff_schemas WHERE view_id = :v ORDER BY position"),
                        {"v": view_id}).scalars().all()


def insert_derivations(conn: Connection, view_id: int, texts: list[str]) -> None:
    if texts:
        conn.execute(sa.text("INSERT INTO idivm.derivations VALUES (:v, :p, :t)"),
                     [{"v": view_id, "p": pos, "t": text} for pos, text in enumerate(texts)])


def derivations(conn: Connection, view_id: int) -> list[str]:
    return conn.execute(sa.text("SELECT text FROM idivm.derivations WHERE view_id = :v ORDER BY position"),
                        {"v": view_id}).scalars().all()


# -- captured tables ---------------------------------------------------------------------------


def captured_id(conn: Connection, schema: str, table: str) -> int | None:
    return conn.execute(sa.text("SELECT id FROM idivm.captured_tables WHERE schema_name = :s AND table_name = :t"),
                        {"s": schema, "t": table}).scalar()


def capture_of(conn: Connection, schema: str, table: str) -> tuple[int, bool] | None:
    """The captured id of the table of that name, and whether that table carries its capture
    triggers: a table dropped and created again under the same name does not (its views went stale
    with the drop; capture/schema_changes.py)."""
    row = conn.execute(sa.text(
        "SELECT c.id, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgname = 'idivm_capture_insert' "
        "AND t.tgrelid = to_regclass(format('%I.%I', c.schema_name, c.table_name))) "
        "FROM idivm.captured_tables c WHERE c.schema_name = :s AND c.table_name = :t"), {"s": schema, "t": table}).first()
    return None if row is None else (row[0], row[1])


def insert_captured(conn: Connection, schema: str, table: str, key: list[str]) -> int:
    """A newly captured table (its log and function names are set once they exist); returns its id."""
    return conn.execute(sa.text(
        "INSERT INTO idivm.captured_tables (schema_name, table_name, key_columns, log_table, capture_function) "
        "VALUES (:s, :t, CAST(:k AS json), '', '') RETURNING id"), {"s": schema, "t": table, "k": json.dumps(key)}
    ).scalar_one()


def set_captured_key(conn: Connection, captured_id: int, key: list[str]) -> None:
    """The table's primary key as it is now (a view rebuilt after its key changed keeps the capture)."""
    conn.execute(sa.text("UPDATE idivm.captured_tables SET key_columns = CAST(:k AS json) WHERE id = :c "
                         "AND CAST(key_columns AS text) IS DISTINCT FROM CAST(CAST(:k AS json) AS text)"),
                 {"k": json.dumps(key), "c": captured_id})


def set_capture_objects(conn: Connection, captured_id: int, log_table: str, function: str) -> None:
    conn.execute(sa.text("UPDATE idivm.captured_tables SET log_table = :l, capture_function = :f WHERE id = :id"),
                 {"l": log_table, "f": function, "id": captured_id})


def captured_table(conn: Connection, captured_id: int) -> sa.Row:
    """schema_name, table_name, log_table, capture_function of a captured table."""
    return conn.execute(sa.text("SELECT schema_name, table_name, log_table, capture_function "
                                "FROM idivm.captured_tables WHERE id = :id"), {"id": captured_id}).one()


def columns_read_of(conn: Connection, captured_id: int) -> list[str]:
    """The columns of a captured table that some registered view reads (its view_inputs), by name."""
    return list(conn.execute(sa.text(
        "SELECT DISTINCT c ->> 0 FROM idivm.view_inputs AS vi CROSS JOIN LATERAL json_array_elements(vi.columns) AS c "
        "WHERE vi.captured_table_id = :id ORDER BY 1"), {"id": captured_id}).scalars())


def captured_ids(conn: Connection) -> set[int]:
    return set(conn.execute(sa.text("SELECT id FROM idivm.captured_tables")).scalars().all())


def captured_tables_now(conn: Connection) -> list[sa.Row]:
    """Every captured table with its current columns (NULL when the table is gone)."""
    return conn.execute(sa.text(
        f"SELECT c.id, c.schema_name, c.table_name, {captured_columns()} AS columns FROM idivm.captured_tables c "
        "ORDER BY c.id")).all()


def delete_captured(conn: Connection, captured_id: int) -> None:
    conn.execute(sa.text("DELETE FROM idivm.captured_tables WHERE id = :id"), {"id": captured_id})


def capture_logging(conn: Connection) -> list[sa.Row]:
    """Every captured table whose base table exists, is not partitioned and carries its capture
    triggers (a table dropped and created again does not, until a registration or refresh over it
    captures it again: capture/triggers.ensure_capture): id, the table as a quoted name, log_table,
    whether a deferred view reads it (`needed`) and whether its capture triggers are enabled now
    (`enabled`)."""
    return conn.execute(sa.text(
        "SELECT c.id, format('%I.%I', c.schema_name, c.table_name) AS qualified, c.log_table, "
        "EXISTS (SELECT 1 FROM idivm.view_inputs vi JOIN idivm.views v ON v.id = vi.view_id "
        "        WHERE vi.captured_table_id = c.id AND v.mode = 'deferred') AS needed, "
        "t.tgenabled <> 'D' AS enabled "
        "FROM idivm.captured_tables c "
        "JOIN pg_class r ON r.oid = to_regclass(format('%I.%I', c.schema_name, c.table_name)) "
        "JOIN pg_trigger t ON t.tgrelid = r.oid AND t.tgname = 'idivm_capture_insert' "
        "WHERE r.relkind = 'r' ORDER BY c.id")).all()


def immediate_views(conn: Connection) -> list[sa.Row]:
    return conn.execute(sa.text(
        "SELECT id, schema_name, view_name FROM idivm.views WHERE mode = 'immediate' ORDER BY id")).all()


def pending_by_log(conn: Connection, views: list[tuple[int, str, list[str]]]
                   ) -> dict[int, dict[str, tuple[int, datetime | None]]]:
    """For each (view id, its last_snapshot, its logs): per log, the committed rows the view has not
    consumed yet, and the oldest one's time; all in one statement, so that a scheduler pass over
    many views costs one round trip, not one a view."""
    out: dict[int, dict[str, tuple[int, datetime | None]]] = {view_id: {} for view_id, _, _ in views}
    wanted = [(view_id, snapshot, log) for view_id, snapshot, logs in views for log in logs]
    if not wanted:
        return out
    sql = " UNION ALL ".join(f"SELECT {k} AS k, count(*) AS n, min(l.logged_at) AS oldest FROM {log} AS l "
                             f"WHERE {unconsumed('l', view_id, snapshot)}"
                             for k, (view_id, snapshot, log) in enumerate(wanted))
    for k, n, oldest in conn.exec_driver_sql(sql).all():
        view_id, _, log = wanted[k]
        out[view_id][log] = (int(n), oldest.astimezone(timezone.utc) if oldest else None)
    return out


def unconsumed_count(conn: Connection, log_table: str, view_id: int, snapshot: str) -> int:
    """How many rows of a log the view has not consumed yet (`snapshot`: its last_snapshot)."""
    return int(conn.exec_driver_sql(
        f"SELECT count(*) FROM {log_table} AS l WHERE {unconsumed('l', view_id, snapshot)}").scalar())


def unconsumed(log_alias: str, view_id: int, snapshot: str | None = None, snapshot_sql: str | None = None) -> str:
    """SQL condition: the row of a log (aliased log_alias) was written by a transaction the view has
    not consumed yet (not visible in the snapshot it was last maintained at: `snapshot`, the view's
    last_snapshot as read in this transaction, or `snapshot_sql`, an expression that gives it (a
    parameter of server-side maintenance), or else read by a subquery).

    Every such transaction's xid is at least that snapshot's xmin: the first conjunct says so, which
    changes nothing in the result but lets the log's xid index skip the rows before the window, so a
    maintenance reads its window and not the rows kept for other views over the same table. Given as
    a literal (both functions are immutable, so the planner folds them), the bound is a constant the
    planner can estimate from the index; behind a subquery it guessed a third of the log and chose a
    parallel bitmap scan of much of it for a window of a few rows (docs/benchmarks.md, "Measurements
    behind the code")."""
    if snapshot_sql is not None:
        snap = snapshot_sql
    elif snapshot is None:
        snap = f"(SELECT CAST(v.last_snapshot AS pg_snapshot) FROM idivm.views AS v WHERE v.id = {int(view_id)})"
    else:
        snap = f"CAST({string_literal(snapshot)} AS pg_snapshot)"
    return (f"{log_alias}.xid >= pg_snapshot_xmin({snap}) "
            f"AND NOT pg_visible_in_snapshot({log_alias}.xid, {snap})")
