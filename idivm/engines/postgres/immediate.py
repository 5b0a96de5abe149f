"""Immediate maintenance: views kept fresh inside every writing statement's own transaction.

Every table that an immediate view reads gets, besides its capture triggers:

- ``idivm_immediate_enter``, BEFORE INSERT OR UPDATE OR DELETE FOR EACH STATEMENT: counts the
  statement as open (a transaction-local setting, ``idivm.open_statements``; a rolled-back
  subtransaction restores it, as it removes the rows the statement wrote);
- ``idivm_immediate_leave_<op>``, AFTER <op> FOR EACH STATEMENT with transition tables: stashes the
  statement's changes as signed images (-old, +new) in ``pg_temp.idivm_pending_<table>``, closes
  the statement, and when it was the last open one calls ``idivm.immediate_apply()``;
- ``idivm_immediate_truncate``, BEFORE TRUNCATE: refused (no transition tables exist for it).

Why not apply at the end of each statement: writes nest. A user's AFTER ROW trigger that updates
another row, a function called by a trigger, an ON DELETE CASCADE that reaches another table: the
nested statement ends, and its statement triggers fire, *before* the statement that caused it has
fired its own. Applying the nested statement's changes then would derive them against base tables
that already hold the outer statement's rows while the view does not. So changes wait until no
captured statement is open; by then every change since the last application has been stashed, and
the base tables are exactly the view's state plus the stash.

``idivm.immediate_apply()`` (one function for the whole database, rebuilt by sync() whenever the
set of immediate views changes) folds each table's stash into its i-diff instance, emptying the
stash in the same statement, with the same fold as deferred maintenance (capture/fold.py: signed
images, exact under FK cascades, which PostgreSQL merges into the outer statement's transition
tables), then for each immediate view that
a non-empty instance drives: returns early if the view is stale (a schema change; `idivm refresh`
rebuilds it), refuses writers that do not run at READ COMMITTED (under REPEATABLE READ a writer's
snapshot could miss rows another committed before it got the lock), takes an EXCLUSIVE lock on the
view table (writers of its tables serialise at the view; readers are not blocked), and runs the
view's Δ-script statements driven by the changed tables (and those driven by none), as deferred
maintenance would: rendered from the view's stored program when the function is made, and each
guarded by the change kinds under which it can change anything (kind_guards.py). Views are applied
readers first: a view over another view sees the lower view's table before this round changed it,
and the lower view's own changes are stashed (its table is captured like any other) and applied to
the readers in the next round, until nothing is left.

The functions are SECURITY DEFINER with a fixed search_path, like the capture functions, and run
with client_min_messages = warning: writers' sessions see nothing from idivm but real errors.

Switching modes (api.Engine.set_mode) happens with the base tables locked against writers:
deferred -> immediate first applies every pending change in the same transaction;
immediate -> deferred records the current snapshot as consumed.
"""
from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ...algebra.tables import TableInfo
from ...capture.fold import fold_select
from ...capture.triggers import enable_always
from .kind_guards import counted_fill, guard
from .render import PLANNER_DECLARATIONS, Rendered, by_index_lookups, delta_table, render_program
from ...program import relations as R
from ...program.kinds_needed import driving_masks
from ...program.serialize import from_json
from ...program.steps import Step
from ...introspect.reflect import table_info
from ...names import display_name, storage_table
from ...sqltext import ident, qualified, run, string_literal
from ...catalog import repository as catalog

TAKEN = "taken"  # the fold's CTE of the stash's rows, deleted by the same statement
OPEN = "idivm.open_statements"  # transaction-local count of captured statements not yet left
APPLY = qualified("idivm", "immediate_apply")
ENTER = qualified("idivm", "immediate_enter")
FUNCTION_SETTINGS = "SET search_path = pg_catalog, pg_temp SET client_min_messages = warning"
LEAVE_OPS = {"insert": "REFERENCING NEW TABLE AS idivm_new", "delete": "REFERENCING OLD TABLE AS idivm_old",
             "update": "REFERENCING OLD TABLE AS idivm_old NEW TABLE AS idivm_new"}
TRIGGERS = ["idivm_immediate_enter", "idivm_immediate_truncate"] + [f"idivm_immediate_leave_{op}" for op in LEAVE_OPS]


def pending_table(captured_id: int) -> str:
    return f"pg_temp.{ident(f'idivm_pending_{captured_id}')}"


def instance_columns(info: TableInfo) -> str:
    """The i-diff instance table's columns: the change kind, then each column's pre- and post-image."""
    cols = [f"{ident(R.KIND_COLUMN)} text"]
    cols += [f"{ident(R.pre(c))} {info.declared(c)}" for c, _ in info.columns]
    cols += [f"{ident(R.post(c))} {info.declared(c)}" for c, _ in info.columns]
    return ", ".join(cols)


def _create_temp(name: str, columns: str) -> str:
    """PL/pgSQL: create a session temp table once (no NOTICE when it exists). Its rows stay at
    commit: every application empties what it fills (ON COMMIT DELETE ROWS tables cost each commit
    of the writer's session a truncation apiece, docs/benchmarks.md). It is analyzed
    while empty, so that the plans the apply function keeps are made for small tables (see
    render._create_scratch)."""
    return (f"IF to_regclass({string_literal(name)}) IS NULL THEN "
            f"CREATE TEMP TABLE {name} ({columns}) ON COMMIT PRESERVE ROWS; ANALYZE {name}; END IF;")


def _reshape(name: str, info: TableInfo) -> str:
    """PL/pgSQL: drop a session's i-diff table whose columns are not those this function fills (it was
    created by an apply function of an earlier set of immediate views, which read other columns);
    the next statement creates it afresh. One catalog lookup per round."""
    names = [R.KIND_COLUMN] + [R.pre(c) for c in info.column_names] + [R.post(c) for c in info.column_names]
    wanted = "ARRAY[" + ", ".join(string_literal(n) for n in names) + "]::text[]"
    reg = f"to_regclass({string_literal(name)})"
    return (f"IF {reg} IS NOT NULL AND ARRAY(SELECT CAST(a.attname AS text) FROM pg_catalog.pg_attribute AS a "
            f"WHERE a.attrelid = {reg} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) "
            f"IS DISTINCT FROM {wanted} THEN DROP TABLE {name}; END IF;")


def _counter(delta: int) -> str:
    return (f"set_config({string_literal(OPEN)}, (coalesce(nullif(current_setting({string_literal(OPEN)}, true), ''), "
            f"'0')::int + ({int(delta)}))::text, true)")


def _enter_body() -> str:
    return f"BEGIN\n  PERFORM {_counter(1)};\n  RETURN NULL;\nEND"


def _leave_body(captured_id: int) -> str:
    pending = pending_table(captured_id)
    o, n = ident("o"), ident("n")
    return f"""
DECLARE
  still_open int;
BEGIN
  {_create_temp(pending, "img jsonb, n int")}
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    INSERT INTO {pending} SELECT to_jsonb({o}.*), -1 FROM idivm_old AS {o};
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO {pending} SELECT to_jsonb({n}.*), 1 FROM idivm_new AS {n};
  END IF;
  still_open := {_counter(-1)}::int;
  IF still_open <= 0 THEN
    PERFORM {APPLY}();
  END IF;
  RETURN NULL;
END
"""


def _truncate_body(info: TableInfo, views: list[str]) -> str:
    shown = ", ".join(views)
    msg = string_literal(
        f"TRUNCATE of {info.qualified} is not supported while view {shown} is maintained immediately; "
        f"use DELETE, or switch the view to deferred (idivm set-mode {views[0]} deferred)")
    return f"BEGIN\n  RAISE EXCEPTION {msg} USING ERRCODE = 'feature_not_supported';\nEND"


SMALL_CHANGES = 1_000  # up to this many folded changes per round, statements run with the plans kept for the session


def _statement(r: Rendered) -> str:
    """PL/pgSQL running one statement: static SQL (planned once per session, the plan kept)
    while a round's changes are few, EXECUTE (planned afresh) when they are many. Immediate mode's
    single-row writes spent about half their maintenance time planning dynamic statements
    (docs/benchmarks.md, "Measurements behind the code"); a kept plan is made for the small i-diffs
    most writes produce (a MERGE's as index lookups of the changed groups, render.by_index_lookups),
    and a bulk statement gets a plan made for its size."""
    static = "\n".join(f"        {line}" for line in r.plpgsql().splitlines())
    if r.merge:
        static = by_index_lookups(static)
    return (f"      IF small_round THEN\n{static}\n      ELSE\n        EXECUTE {string_literal(r.text)};\n"
            "      END IF;")


def _shape_checked(target: str, info: TableInfo, captured_id: int) -> str:
    """PL/pgSQL: make the session's i-diff table of a captured table have the columns this function
    fills (_reshape, _create_temp), once per session and table: the check reads the catalog, a
    visible cost in a single-row write (docs/benchmarks.md, "Measurements behind the code"), so its outcome is kept in a session
    setting, together with the table's OID. A table created again under the same name (DISCARD
    TEMP, a session's own DROP) has a new OID, and the next application checks again; a transaction
    that fails takes its setting back with it."""
    names = [R.KIND_COLUMN] + [R.pre(c) for c in info.column_names] + [R.post(c) for c in info.column_names]
    tag = hashlib.sha1(json.dumps(names).encode()).hexdigest()[:12]
    setting = string_literal(f"idivm.delta_shape_{int(captured_id)}")
    mark = f"coalesce(CAST(CAST(to_regclass({string_literal(target)}) AS oid) AS text), '') || {string_literal(':' + tag)}"
    return (f"IF current_setting({setting}, true) IS DISTINCT FROM {mark} THEN\n"
            f"      {_reshape(target, info)}\n"
            f"      {_create_temp(target, instance_columns(info))}\n"
            f"      PERFORM set_config({setting}, {mark}, false);\n"
            "    END IF;")


def _apply_body(views: list[sa.Row], inputs: dict[int, TableInfo], reads: dict[int, list[int]],
                scripts: dict[int, list[tuple[Step, Rendered]]], nested: bool) -> str:
    """idivm.immediate_apply()'s body (see the module's docstring). `scripts`: per view, its
    program's steps with their rendering; `nested`: some immediate view reads another one's table, so what an application writes to a
    view table is applied to its readers in further rounds, until a round folds nothing. Without
    views over views one round does it, and nothing is folded twice.

    Only the i-diff tables this application filled are emptied (at the end, and before a further
    round): the Python executor's statements use tables of the same names, which an application
    that fires inside such a maintenance (a write to a view table another immediate view reads)
    must leave as they are."""
    changed = {cid: f"changed_{cid}" for cid in sorted(inputs)}
    kinds = {cid: f"kinds_{cid}" for cid in sorted(inputs)}
    declare = "\n".join(f"  {v} boolean := false;" for v in changed.values())
    declare += "\n" + "\n".join(f"  {v} int := 0;" for v in kinds.values())
    declare += "\n  folded bigint;\n  round_changes bigint;\n  small_round boolean;"
    declare += "".join(f"\n  {d}" for d in PLANNER_DECLARATIONS)
    fold, clear = [], []
    taken = ident(TAKEN)
    for cid, info in sorted(inputs.items()):
        pending, target = pending_table(cid), delta_table(cid)
        clear.append(f"    IF {changed[cid]} THEN DELETE FROM {target}; END IF;")
        fold.append(f"""    {_shape_checked(target, info, cid)}
    {changed[cid]} := false;
    {kinds[cid]} := 0;
    IF to_regclass({string_literal(pending)}) IS NOT NULL THEN
      {counted_fill(f"INSERT INTO {target} {fold_select(info, f'SELECT p.img, p.n FROM {taken} AS p', list(info.column_names))}",
                    taken=(TAKEN, pending))}
        INTO folded, {kinds[cid]};
      {changed[cid]} := folded > 0;
      round_changes := round_changes + folded;
    END IF;""")
    apply = []
    for v in views:
        shown = display_name(v.schema_name, v.view_name)
        msg_isolation = string_literal(
            f"view {shown} is maintained immediately, which needs writers at READ COMMITTED; this transaction "
            "runs at %; switch the view to deferred (idivm set-mode "
            f"{shown} deferred) to write at other isolation levels")
        statements = []
        for st, r in scripts[v.id]:  # a scratch table's set-up statement creates or empties it
            line = _statement(r)
            if st.driven_by is None or st.driven_by not in changed:
                statements.append(line)
                continue
            cid = st.driven_by
            statements.append(f"      IF {guard(changed[cid], kinds[cid], driving_masks(st))} THEN\n{line}\n      END IF;")
        any_input = " OR ".join(changed[c] for c in reads[v.id])
        apply.append(f"""    IF ({any_input}) AND NOT EXISTS (SELECT 1 FROM idivm.views WHERE id = {int(v.id)} AND stale_reason IS NOT NULL) THEN
      IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION {msg_isolation}, current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
      END IF;
      LOCK TABLE {qualified(*storage_table(v.id))} IN EXCLUSIVE MODE;
{chr(10).join(statements)}
    END IF;""")
    nothing = " AND ".join(f"NOT {c}" for c in changed.values())
    body = f"""    round_changes := 0;
{chr(10).join(fold)}"""
    if nested:
        rounds = f"""  LOOP
{chr(10).join(clear)}
{body}
    EXIT WHEN {nothing};
    small_round := round_changes <= {SMALL_CHANGES};
{chr(10).join(apply)}
  END LOOP;"""
    else:
        rounds = f"""{body}
    IF NOT ({nothing}) THEN
      small_round := round_changes <= {SMALL_CHANGES};
{chr(10).join(apply)}
{chr(10).join(clear)}
    END IF;"""
    return f"""
#variable_conflict use_column
DECLARE
{declare}
BEGIN
  PERFORM set_config({string_literal(OPEN)}, '1', true);  -- what the scripts write is stashed, applied next round
{rounds}
  PERFORM set_config({string_literal(OPEN)}, '0', true);
END
"""


def _function(conn: Connection, name: str, returns: str, body: str) -> None:
    run(conn, f"CREATE OR REPLACE FUNCTION {name}() RETURNS {returns} LANGUAGE plpgsql SECURITY DEFINER "
              f"{FUNCTION_SETTINGS} AS {string_literal(body)}")


def sync(conn: Connection, readers_first: list[int]) -> None:
    """Make the immediate triggers and functions match the catalog's immediate views (all of them:
    the apply function and each table's triggers are shared by the views over that table).
    readers_first: view ids, every view before the views it reads (see the module docstring); the
    caller computes it (operate/dependencies.py sits above this layer)."""
    for (name,) in conn.execute(sa.text(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'idivm' AND p.proname LIKE 'immediate\\_%'"
    )).all():  # CASCADE: their triggers too, wherever the tables now are
        run(conn, f"DROP FUNCTION IF EXISTS {qualified('idivm', name)}() CASCADE")
    views = catalog.immediate_views(conn)
    if not views:
        return
    by_id = {v.id: v for v in views}
    order = [i for i in readers_first if i in by_id]
    inputs: dict[int, TableInfo] = {}
    reads: dict[int, list[int]] = {}
    readers: dict[int, list[str]] = {}
    scripts: dict[int, list[tuple[Step, Rendered]]] = {}
    read: dict[int, set[str]] = {}
    for v in views:
        rows = catalog.view_inputs(conn, v.id, reflect=True)
        reads[v.id] = [t.id for t in rows]
        for t in rows:
            if t.columns and t.id not in inputs:
                inputs[t.id] = table_info(t.schema_name, t.table_name, t.columns)
            read.setdefault(t.id, set()).update(t.read_columns)
            readers.setdefault(t.id, []).append(display_name(v.schema_name, v.view_name))
        scripts[v.id] = render_program(from_json(catalog.program_of(conn, v.id)))
    for cid, info in inputs.items():  # instances of the columns the views read: a column none of them reads
        inputs[cid] = info.reading(read[cid])  # may be dropped or renamed without breaking the writers' triggers
    for v in views:  # a table dropped under a (now stale) view: its reads drop out
        reads[v.id] = [c for c in reads[v.id] if c in inputs]
    order = [i for i in order if reads[i]]
    if not inputs:
        return
    _function(conn, ENTER, "trigger", _enter_body())
    view_tables = {storage_table(v.id) for v in views}
    nested = any((info.schema, info.name) in view_tables for info in inputs.values())
    _function(conn, APPLY, "void", _apply_body([by_id[i] for i in order], inputs, reads, scripts, nested))
    for cid, info in sorted(inputs.items()):
        leave = qualified("idivm", f"immediate_leave_{cid}")
        truncate = qualified("idivm", f"immediate_truncate_{cid}")
        _function(conn, leave, "trigger", _leave_body(cid))
        _function(conn, truncate, "trigger", _truncate_body(info, readers[cid]))
        t = info.qualified
        run(conn, f"CREATE TRIGGER idivm_immediate_enter BEFORE INSERT OR UPDATE OR DELETE ON {t} "
                  f"FOR EACH STATEMENT EXECUTE FUNCTION {ENTER}()")
        run(conn, f"CREATE TRIGGER idivm_immediate_truncate BEFORE TRUNCATE ON {t} "
                  f"FOR EACH STATEMENT EXECUTE FUNCTION {truncate}()")
        for op, referencing in LEAVE_OPS.items():
            run(conn, f"CREATE TRIGGER {ident('idivm_immediate_leave_' + op)} AFTER {op.upper()} ON {t} "
                      f"{referencing} FOR EACH STATEMENT EXECUTE FUNCTION {leave}()")
        enable_always(conn, t, TRIGGERS)
