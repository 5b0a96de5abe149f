"""Maintenance callable from SQL: ``SELECT idivm.maintain('view')`` and ``CALL idivm.maintain_all()``.

Deferred maintenance without a Python process: pg_cron (or any scheduler that runs SQL) calls the
procedure, and an application can bring a view up to date inside its own transaction before it
reads it. The Python executor (executor.py) calls the same functions, so there is one
implementation of a deferred maintenance on PostgreSQL:

- **Per view, compiled at registration**, two functions: ``idivm.idiffs_<id>(snapshot)`` builds
  the view's effective i-diff instances from its logs with the same fold (capture/fold.py) and the
  same window (catalog.unconsumed: the log rows of transactions not visible in the view's last
  snapshot); ``idivm.apply_<id>(inputs, staged)`` runs the view's Δ-program as rendered for
  PostgreSQL (render.py, its i-diffs bound to the function's own tables), each statement only when
  the table whose i-diff drives it changed, and, for the steps whose rows another engine computed
  and staged (program/offload.py), the form that reads them. Both are created at registration
  (operate/registry.py), again from the stored program when an upgrade of idivm renders
  differently (install_all_view_functions), and dropped with the view. Their instances hold the
  columns the view reads (its key among them), which no schema change can touch without making
  the view stale (capture/schema_changes.py), so the compiled text stays valid until a rebuild
  writes a new one.
- **Generic, installed by init**: ``idivm.maintain_locked(view id, ...)`` is the one deferred
  maintenance of a view in a transaction: its halves ``idivm.prepare_maintenance`` (lock the view's
  catalog row, skip immediate views, refuse stale ones with the CLI's message, hold its input
  tables, fill the instances) and ``idivm.finish_maintenance`` (run the Δ-script, record the new
  snapshot); the Spark engine calls the halves itself, with its staging between them
  (executor.py). The Python executor calls maintain_locked after taking the view's lock where it
  cannot send the whole maintenance as ``CALL idivm.maintain_call(...)`` (a procedure that takes the
  lock, calls maintain_locked in its own REPEATABLE READ transaction, commits, prunes and unlocks:
  one round trip for `idivm maintain`, the scheduler and the Python API).
  ``idivm.maintain(view text)`` resolves the name as the CLI does (unqualified: the current
  schema), takes the view's maintenance lock (the advisory lock the CLI and the scheduler take,
  maintenance_lock.py, held to the end of the transaction), calls maintain_locked and returns a
  report row whose ``message`` is the CLI's report line. ``idivm.maintain_all(views text[] DEFAULT NULL)`` is a procedure: each view in
  its own REPEATABLE READ transaction (a view after the maintained views it reads, so a change
  reaches the top of a chain in one call), the lock taken before that transaction's snapshot as
  the CLI takes it, log pruning after each commit, a NOTICE with the report line per view, and a
  failure recorded in the catalog (consecutive_failures, last_error) without stopping the others;
  it raises at the end if any view failed, so that pg_cron's job_run_details says so.

Why the function needs REPEATABLE READ (or SERIALIZABLE): one snapshot must fix both the base
tables the Δ-script reads and the log rows it consumes. At READ COMMITTED every statement would
see a newer database, and a change committed between two statements would be read from the base
table without being consumed, then applied again by the next maintenance. The function refuses
such a transaction with a message saying what to write instead; the procedure opens its own.

Why a transaction that wrote to the view's inputs is refused: it sees its own uncommitted writes
in the base tables, and its own log rows fall in the window, but its xid is not visible in the
snapshot recorded as consumed, so the next maintenance would apply those changes a second time.

A caller whose snapshot predates another maintainer's commit of the same view would apply changes
that maintainer already applied: the catalog row's FOR UPDATE detects it (a serialization failure
at REPEATABLE READ) and the view is reported as skipped: the other maintainer did the work.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ...capture.fold import FOLD_BY_KEY_FROM, fold_log, fold_select, log_images, window_count
from ...capture.triggers import PRUNE_PREFIX
from ...catalog import repository as catalog
from ...introspect.reflect import table_info
from ...names import display_name
from ...program.kinds_needed import driving_masks
from ...program.offload import offloads, staged_name
from ...program.serialize import from_json
from ...program.steps import CACHE_ROLE, VIEW_ROLE, Program, Step
from ...errors import SQLSTATE_NOT_COMPILED, SQLSTATE_STALE
from ...sqltext import qualified, run, string_literal
from .maintenance_lock import LOCK_CLASS
from .immediate import SMALL_CHANGES
from .kind_guards import counted_fill, guard
from .recompute import recompute_body
from .render import SCRATCH_TRUNCATE_BYTES, Rendered, delta_names, render_parts, render_program

REPORT_TYPE = qualified("idivm", "maintenance_report")


def _view_functions(view_id: int) -> list[tuple[str, list[tuple[str, str]], str]]:
    """Each view's compiled functions as (qualified name, arguments as (name, type), result type):
    idiffs_<id> fills the view's i-diff instances, apply_<id> runs its Δ-script over them,
    recompute_<id> recomputes the view instead (recompute.py), logged_<id> counts the changes
    waiting in its logs (whether to recompute)."""
    return [(qualified("idivm", f"idiffs_{int(view_id)}"), [("idivm_snapshot", "text")], "bigint[]"),
            (qualified("idivm", f"apply_{int(view_id)}"), [("idivm_inputs", "bigint[]"), ("idivm_staged", "int[]")],
             "float8[]"),
            (qualified("idivm", f"recompute_{int(view_id)}"), [("idivm_with_caches", "boolean")], "float8[]"),
            (qualified("idivm", f"logged_{int(view_id)}"), [("idivm_snapshot", "text"), ("idivm_cap", "bigint")],
             "bigint[]")]


def _signature(name: str, arguments: list[tuple[str, str]]) -> str:
    return f"{name}({', '.join(t for _, t in arguments)})"


def view_delta(view_id: int, captured_id: int) -> str:
    """The name of the per-view function's i-diff instance of one captured table (in pg_temp): a view's
    own, since it holds the columns that view reads (immediate mode's instances,
    pg_temp.idivm_delta_<captured id>, hold every column of the table)."""
    return f"idivm_d{int(view_id)}_{int(captured_id)}"


# What a maintenance reports, in this order (a float8[]): then each input's effective changes.
# "recomputed": 0 when the Δ-script ran, RECOMPUTED_BY_ESTIMATE or RECOMPUTED_BY_POLICY when the view
# was recomputed instead (its cache left stale where it can be, recompute.py), RECOMPUTED_TO_MEASURE when
# it was recomputed to measure what that costs (PROBE_SHARE), RECOMPUTED_AGAIN when a stale cache was
# kept stale (prepare_maintenance says when), RECOMPUTED_STALE_CACHES
# when the last maintenance left the cache stale (then "changes" counts logged changes, not effective ones: no i-diff was
# built; by estimate, counting stopped one past the threshold); "script_estimate" and
# "recompute_estimate": the estimated costs in ms (NaN where not estimated)
RESULT = ("changes", "statements", "view_rows", "i-diffs", CACHE_ROLE, VIEW_ROLE, "recomputed", "script_estimate",
          "recompute_estimate")
RECOMPUTED_BY_ESTIMATE, RECOMPUTED_BY_POLICY, RECOMPUTED_STALE_CACHES, RECOMPUTED_TO_MEASURE, RECOMPUTED_AGAIN = (
    1, 2, 3, 4, 5)

# Until a recomputation has measured itself, what recomputing costs is the registration's fill,
# which for a grouped view includes its cache (a recomputation skips it: 195 ms against 38 ms for
# bench_oltp's revenue by nation, whose Δ-script cost 118-160 ms a round, so every round ran the
# script): a batch estimated to cost the Δ-script more than this share of the fill is recomputed,
# which measures it. Costs at most one recomputation that the estimate would not have chosen.
PROBE_SHARE = 0.5

# The cost of a batch's i-diffs and Δ-script per logged change before a batch measured it (ms), and
# the smallest batch that measures it (below, the fixed costs of a maintenance weigh on the figure):
# the default of the engine choice's cost model (operate/engine_choice.py)
PRIOR_CHANGE_MS = 0.025
MEASURING_BATCH = 100


def input_arrays(view_id: str) -> str:
    """Three select-list items: the captured ids, schemas and names of a view's inputs, in captured id
    order (the order of the per-input counts after RESULT). `view_id`: the SQL that gives the view's
    id (a query parameter, or a PL/pgSQL variable)."""
    return ", ".join(
        f"ARRAY(SELECT c.{col} FROM idivm.view_inputs AS vi JOIN idivm.captured_tables AS c ON c.id = vi.captured_table_id "
        f"WHERE vi.view_id = {view_id} ORDER BY c.id)" for col in ("id", "schema_name", "table_name"))


def input_changes(inputs: list[int], ids: list[int]) -> dict[int, tuple[int, int]]:
    """What idiffs_<id> returned (ARRAY[changes, then each input's changes and kind mask]), by
    captured id: (effective changes, kind mask). `ids`: the inputs' captured ids in captured id
    order (input_arrays' first item)."""
    return {cid: (inputs[1 + 2 * i], inputs[2 + 2 * i]) for i, cid in enumerate(ids)}


_COUNT = ("      GET DIAGNOSTICS idivm_n = ROW_COUNT; idivm_touched := idivm_touched + greatest(idivm_n, 0); "
          "idivm_statements := idivm_statements + 1;")


def _counted(r: Rendered) -> str:
    """PL/pgSQL of one step's write, counted: static SQL in a small round (its plan kept for the
    session, as immediate mode's), EXECUTE (planned for the round's sizes) in a large one; the
    ANALYZE of a temp table it filled after it."""
    static = "\n".join("        " + line for line in f"{r.write};".splitlines())
    out = (f"      IF idivm_small THEN\n{static}\n      ELSE\n        EXECUTE {string_literal(r.write)};\n"
           f"      END IF;\n{_COUNT}")
    if r.analyze is not None:
        out += f"\n      {r.analyze};"
    return out


def _staged(k: int, r: Rendered, staged: Rendered) -> str:
    """_counted, or, when the caller staged the rows of this step's k-th offload (another engine
    computed them, program/offload.py), the step reading them: always through EXECUTE, since the
    staged table is new in every maintenance that has one."""
    analyze = f"\n        {staged.analyze};" if staged.analyze is not None else ""
    indented = "\n".join("  " + line for line in _counted(r).splitlines())
    return (f"      IF {int(k)} = ANY (idivm_staged) THEN\n        EXECUTE {string_literal(staged.write)};\n"
            f"  {_COUNT}{analyze}\n      ELSE\n{indented}\n      END IF;")


def _statement(r: Rendered, staged: tuple[int, Rendered] | None) -> str:
    if r.block is not None:  # a scratch table's set-up, inline
        return f"      {r.block}\n      idivm_statements := idivm_statements + 1;"
    return _counted(r) if staged is None else _staged(staged[0], r, staged[1])


def _fill(target: str, folds: tuple[str, str], position: int, cid: int, emptied: str | None) -> str:
    """PL/pgSQL filling an input's instance by the fold for its window's size (capture/fold.py,
    FOLD_BY_KEY_FROM): folds are the small window's, as static SQL over the function's
    idivm_snapshot (its plan kept for the session: planning it cost more than running it over a
    few changes), and the large one's, planned for its round (EXECUTE, over $1)."""
    small, large = (counted_fill(f"INSERT INTO {target} {q}", emptied=emptied) for q in folds)
    into = f"INTO idivm_changed_{cid}, idivm_kinds_{cid}"
    return (f"IF idivm_logged[{position}] < {FOLD_BY_KEY_FROM} THEN\n      {small} {into};\n    ELSE\n"
            f"      EXECUTE {string_literal(large)} {into} USING idivm_snapshot;\n    END IF;")


def idiffs_body(view_id: int, shown: str, inputs: list[tuple[int, str, object]]) -> str:
    """The body of idivm.idiffs_<id>(idivm_snapshot text) RETURNS bigint[]: the view's i-diff
    instances filled from the log rows it has not consumed, returned as ARRAY[changes, then each
    input's changes and kind mask]. inputs: (captured id, log table, TableInfo of the columns the
    view reads), in captured id order.

    A round of more than SMALL_CHANGES effective changes analyzes the instances, for the plans
    EXECUTE makes in apply_<id>, which then empties them and analyzes them empty again.

    One query first counts each input's window (up to capture/fold.FOLD_BY_KEY_FROM, which picks
    the fold for its size), and an input without any only has its instance emptied (a view over
    several tables mostly sees changes to one). That count and the small windows' fold are static
    SQL, whose plans the session keeps (PostgreSQL's plan cache keeps making custom plans where a
    generic one would cost more); a large window's fold is planned for its round (EXECUTE)."""
    declare = ["idivm_changes bigint := 0;", "idivm_own xid8 := pg_current_xact_id_if_assigned();",
               "idivm_logged bigint[];"]
    declare += [f"idivm_changed_{cid} bigint;" for cid, _, _ in inputs]
    declare += [f"idivm_kinds_{cid} int;" for cid, _, _ in inputs]
    own_writes, fill, analyze, probes = [], [], [], []
    for position, (cid, log, info) in enumerate(inputs, 1):
        msg = string_literal(f"this transaction wrote to {display_name(info.schema, info.name)}, which view {shown} "
                             "reads; maintain the view in a transaction that has not written to its tables (it "
                             "applies the changes committed before that transaction's snapshot)")
        own_writes.append(f"    IF EXISTS (SELECT 1 FROM {log} AS l WHERE l.xid = idivm_own) THEN\n"
                          f"      RAISE EXCEPTION USING MESSAGE = {msg}, ERRCODE = 'object_not_in_prerequisite_state';\n"
                          "    END IF;")
        target = qualified("pg_temp", view_delta(view_id, cid))
        regclass = f"to_regclass({string_literal(target)})"
        window = catalog.unconsumed("l", view_id, snapshot_sql="CAST($1 AS pg_snapshot)")  # EXECUTE's
        static = catalog.unconsumed("l", view_id, snapshot_sql="CAST(idivm_snapshot AS pg_snapshot)")
        probes.append(window_count(log, static))
        nonempty = f"idivm_logged[{position}] > 0"
        small = fold_select(info, log_images(log, static), list(info.column_names))
        large = fold_log(info, log, window, list(info.column_names))
        insert, refill = (_fill(target, (small, large), position, cid, emptied) for emptied in (None, target))
        create = string_literal(f"CREATE TEMP TABLE {target} ON COMMIT PRESERVE ROWS AS "
                                f"{fold_select(info, log_images(log, window), list(info.column_names))} WITH NO DATA")
        fill.append(f"""  idivm_changed_{cid} := 0;
  idivm_kinds_{cid} := 0;
  IF {regclass} IS NULL THEN
    EXECUTE {create} USING idivm_snapshot;
    ANALYZE {target};
    IF {nonempty} THEN
    {insert}
    END IF;
  ELSIF NOT {nonempty} THEN  -- no row in this input's window: the previous round's rows go
    DELETE FROM {target};
  ELSIF pg_relation_size({regclass}) > {SCRATCH_TRUNCATE_BYTES} THEN
    TRUNCATE {target};
    {insert}
  ELSE  -- the previous round's rows go in the same statement (it cannot see the rows it adds)
    {refill}
  END IF;
  idivm_changes := idivm_changes + idivm_changed_{cid};""")
        analyze.append(f"    ANALYZE {target};")
    nl = "\n"
    per_input = "".join(f", idivm_changed_{cid}, idivm_kinds_{cid}" for cid, _, _ in inputs)
    return f"""
DECLARE
{nl.join('  ' + d for d in declare)}
BEGIN
  IF idivm_own IS NOT NULL THEN
{nl.join(own_writes)}
  END IF;
  SELECT ARRAY[{", ".join(probes)}] INTO idivm_logged;
{nl.join(fill)}
  IF idivm_changes > {SMALL_CHANGES} THEN  -- statistics for the plans EXECUTE makes for this round
{nl.join(analyze)}
  END IF;
  RETURN ARRAY[idivm_changes{per_input}];
END
"""


def logged_body(view_id: int, inputs: list[tuple[int, str, object]]) -> str:
    """The body of idivm.logged_<id>(idivm_snapshot text, idivm_cap bigint) RETURNS bigint[]: the
    log rows of the view's window, at most idivm_cap of them counted (NULL: all), as idiffs_<id>'s
    result is shaped (ARRAY[total, then each input's count and a kind mask of 0]). Counting stops
    at the cap, so that deciding to recompute after millions of changes does not read them all."""
    count = []
    for cid, log, _ in inputs:
        window = catalog.unconsumed("l", view_id, snapshot_sql="CAST($1 AS pg_snapshot)")
        query = string_literal(f"SELECT count(*) FROM (SELECT 1 FROM {log} AS l WHERE {window} LIMIT $2) AS w")
        count.append(f"  EXECUTE {query} INTO idivm_n USING idivm_snapshot, idivm_cap - idivm_total;\n"
                     "  idivm_total := idivm_total + idivm_n;\n"
                     "  idivm_each := idivm_each || ARRAY[idivm_n, 0];")
    nl = "\n"
    return f"""
DECLARE
  idivm_n bigint;
  idivm_total bigint := 0;
  idivm_each bigint[] := ARRAY[]::bigint[];
BEGIN
{nl.join(count)}
  RETURN ARRAY[idivm_total] || idivm_each;
END
"""


def apply_body(view_id: int, inputs: list[int], rendered: list[tuple[Step, Rendered]],
               staged: dict[int, tuple[int, Rendered]]) -> str:
    """The body of idivm.apply_<id>(idivm_inputs bigint[], idivm_staged int[]) RETURNS float8[]: the
    view's Δ-script over the instances idiffs_<id> filled (idivm_inputs: what it returned), as
    ARRAY[statements, view rows, cache ms, view ms]. inputs: the captured ids, in captured id
    order; rendered: the view's program as (step, text), its i-diffs bound to view_delta; staged:
    by id of a step, its offload's index and the step reading the staged rows instead, which runs
    when the index is in idivm_staged.

    Like immediate mode's apply function, a round of at most SMALL_CHANGES effective changes runs the
    statements as static SQL whose plans the session keeps (made for small i-diffs: the instance
    tables are analyzed once, while empty, and sized by their pages afterwards); a larger round
    runs every statement through EXECUTE, then truncates the instances and analyzes them empty
    again, so that the kept plans stay those of small rounds."""
    # every variable is prefixed: the Δ-script's static statements could name a column "n" or "changes"
    declare = ["idivm_n bigint;", "idivm_statements bigint := 0;", "idivm_touched bigint := 0;",
               f"idivm_small boolean := idivm_inputs[1] <= {SMALL_CHANGES};",
               "idivm_mark timestamptz := clock_timestamp();", "idivm_cache_ms float8 := 0;", "idivm_view_ms float8 := 0;"]
    for i, cid in enumerate(inputs):
        declare += [f"idivm_changed_{cid} bigint := idivm_inputs[{2 + 2 * i}];",
                    f"idivm_kinds_{cid} int := idivm_inputs[{3 + 2 * i}];"]
    reset = [f"    TRUNCATE {qualified('pg_temp', view_delta(view_id, cid))};\n"
             f"    ANALYZE {qualified('pg_temp', view_delta(view_id, cid))};" for cid in inputs]
    script = []
    known = set(inputs)
    for step, r in rendered:
        line = _statement(r, staged.get(id(step)))
        if step.driven_by is not None and step.driven_by in known:
            cid = int(step.driven_by)  # only when its i-diff holds kinds it reads (kind_guards.py)
            condition = guard(f"idivm_changed_{cid} > 0", f"idivm_kinds_{cid}", driving_masks(step))
            line = f"    IF {condition} THEN\n{line}\n    END IF;"
        else:
            line = f"    BEGIN\n{line}\n    END;"
        timer = "idivm_cache_ms" if step.role == CACHE_ROLE else "idivm_view_ms"
        script.append(f"{line}\n    {timer} := {timer} + extract(epoch FROM clock_timestamp() - idivm_mark) * 1000; "
                      "idivm_mark := clock_timestamp();")
    nl = "\n"
    return f"""
#variable_conflict use_column
DECLARE
{nl.join('  ' + d for d in declare)}
BEGIN
  IF idivm_inputs[1] > 0 THEN
{nl.join(script)}
  END IF;
  IF NOT idivm_small THEN  -- back to empty tables analyzed empty: the kept plans stay those of small rounds
{nl.join(reset)}
  END IF;
  RETURN ARRAY[idivm_statements, idivm_touched, idivm_cache_ms, idivm_view_ms]::float8[];
END
"""


def install_view_function(conn: Connection, view_id: int, program: Program | None = None) -> None:
    """(Re)create the view's compiled functions (_view_functions) from its Δ-program and inputs (at
    registration, rebuild and upgrade). A view whose base table is gone gets none: it is stale until
    refreshed. `program`: the program registration just built and stored (reading it back from its
    JSON cost a registration a large share of its time).

    Without JIT: the statements read the i-diff instances and Δ tables, temporary and never
    analyzed, whose guessed sizes pass jit_above_cost for a batch of a few rows; compiling the plans
    then costs more than running them (docs/benchmarks.md, "Measurements behind the code")."""
    row = catalog.view_by_id(conn, view_id)
    if program is None:
        program = from_json(catalog.program_of(conn, view_id))
    inputs = []
    for t in catalog.view_inputs(conn, view_id, reflect=True):
        if not t.columns:
            drop_view_function(conn, view_id)
            return
        inputs.append((t.id, t.log_table, table_info(t.schema_name, t.table_name, t.columns).reading(t.read_columns)))
    with delta_names(lambda cid: view_delta(view_id, cid)):
        rendered = render_program(program)
        staged = {id(o.step): (k, render_parts(o.rewrite(staged_name(k))))
                  for k, o in enumerate(offloads(program.ordered()))}
    shown = display_name(row.schema_name, row.view_name)
    ids = [cid for cid, _, _ in inputs]
    bodies = [idiffs_body(view_id, shown, inputs), apply_body(view_id, ids, rendered, staged),
              recompute_body(program.refills), logged_body(view_id, inputs)]
    for (name, arguments, result), body in zip(_view_functions(view_id), bodies):
        run(conn, f"CREATE OR REPLACE FUNCTION {name}({', '.join(f'{a} {t}' for a, t in arguments)}) RETURNS {result} "
                  f"LANGUAGE plpgsql SET client_min_messages = warning SET jit = off AS {string_literal(body)}")
        run(conn, f"REVOKE ALL ON FUNCTION {_signature(name, arguments)} FROM PUBLIC")


def drop_view_function(conn: Connection, view_id: int) -> None:
    for name, arguments, _ in _view_functions(view_id):
        run(conn, f"DROP FUNCTION IF EXISTS {_signature(name, arguments)}")


def install_all_view_functions(conn: Connection) -> None:
    """Every registered view's functions, as this idivm compiles them (an upgrade of idivm)."""
    for vid in catalog.view_ids(conn):
        install_view_function(conn, vid)


# The generic functions, installed by init (operate/install.py).

# How often a maintenance that owns its transaction takes a new snapshot when a table it reads was
# truncated or rewritten after the last one (each attempt waits for that DDL to commit first).
ATTEMPTS = 10

# The start of every deferred maintenance, whoever runs it (prepare_maintenance): the view's
# catalog row locked, immediate views skipped, stale ones refused with the CLI's message, and its input tables held (ACCESS SHARE).
# TRUNCATE and the ALTER TABLE forms that rewrite a table are not MVCC-safe: if one committed after
# this transaction's snapshot and before its lock, the snapshot reads that table as empty while
# the window of the logs misses the DDL's changes. The lock makes any later one wait for this
# maintenance; one that already slipped in shows as a table (or a leaf partition) whose storage, as
# the catalog now says (pg_relation_filenode), is not the one this snapshot's pg_class row names.
# Then the outcome is 'restart': whoever owns the transaction takes a new snapshot.
_BEGIN_MAINTENANCE = f"""
CREATE OR REPLACE FUNCTION idivm.begin_maintenance(view_id bigint, shown text, transaction_owned boolean,
  OUT outcome text, OUT message text, OUT last_snapshot text, OUT now text)
LANGUAGE plpgsql SET client_min_messages = warning AS $body$
DECLARE
  v record;
  held regclass[];
  moved text;
BEGIN
  BEGIN
    SELECT x.last_snapshot, x.stale_reason, x.mode INTO v FROM idivm.views AS x WHERE x.id = view_id FOR UPDATE;
  EXCEPTION WHEN serialization_failure THEN
    outcome := 'skipped';
    message := shown || ': skipped: another session maintained it after this transaction took its snapshot';
    RETURN;
  END;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'view % was dropped while being maintained', shown USING ERRCODE = 'undefined_object';
  END IF;
  IF v.mode = 'immediate' THEN
    outcome := 'skipped';
    message := shown || ': skipped: maintained immediately by its writers: nothing to do';
    RETURN;
  END IF;
  IF v.stale_reason IS NOT NULL THEN
    RAISE EXCEPTION '%', CASE WHEN v.stale_reason LIKE 'base table %' AND v.stale_reason LIKE '% was dropped'
      THEN format('view %s is stale (%s); recreate the table and run `idivm refresh %s`, or drop the view (`idivm drop-view %s`)',
                  shown, v.stale_reason, shown, shown)
      ELSE format('view %s is stale (%s); run `idivm refresh %s` to rebuild it from its definition',
                  shown, v.stale_reason, shown) END
      USING ERRCODE = '{SQLSTATE_STALE}';
  END IF;
  SELECT array_agg(CAST(format('%I.%I', c.schema_name, c.table_name) AS regclass) ORDER BY c.id) INTO held
  FROM idivm.view_inputs AS vi JOIN idivm.captured_tables AS c ON c.id = vi.captured_table_id
  WHERE vi.view_id = begin_maintenance.view_id;
  IF held IS NOT NULL THEN
    EXECUTE 'LOCK TABLE ' || array_to_string(held, ', ') || ' IN ACCESS SHARE MODE';
    moved := idivm.rewritten_since_snapshot(held);
    IF moved IS NOT NULL THEN
      outcome := 'restart';
      message := format('%s was truncated or rewritten after this transaction took its snapshot', moved);
      RETURN;
    END IF;
  END IF;
  -- Δ-script statements are driven by small i-diffs, whose index lookups the default random_page_cost
  -- (4, for spinning disks) often loses to a scan of a whole cache or view: lowered, never raised
  PERFORM set_config('random_page_cost', CAST(least(CAST(current_setting('random_page_cost') AS float8), 1.1) AS text), true);
  -- idivm's own transaction: its commit need not wait for the WAL flush. A crash can lose only a
  -- whole recent maintenance, and with it its recorded snapshot: the next one consumes the same
  -- log rows, which the application's own (synchronous) transactions wrote
  IF transaction_owned THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  outcome := 'ready';
  last_snapshot := v.last_snapshot;
  now := CAST(pg_current_snapshot() AS text);
END
$body$
"""

# Which of these tables (or of their leaf partitions), locked by the caller, lives in another file
# than the one this transaction's snapshot knows: one a TRUNCATE or a table-rewriting ALTER TABLE
# committed after the snapshot, which the snapshot would read as empty. pg_class read by a query is
# read in the snapshot; pg_relation_filenode looks the table up as it is now (the lock made the
# session see the DDL). NULL: none. PL/pgSQL, not SQL: a session plans its query once, where a SQL
# function that cannot be inlined is planned on every call (every maintenance runs it).
_REWRITTEN = """
CREATE OR REPLACE FUNCTION idivm.rewritten_since_snapshot(tables regclass[]) RETURNS text
LANGUAGE plpgsql STABLE AS $body$
BEGIN
  RETURN (SELECT format('%I.%I', n.nspname, k.relname)
    FROM unnest(tables) AS t(oid)
    CROSS JOIN LATERAL (SELECT t.oid UNION SELECT p.relid FROM pg_partition_tree(t.oid) AS p WHERE p.isleaf) AS s(oid)
    JOIN pg_class AS k ON k.oid = s.oid JOIN pg_namespace AS n ON n.oid = k.relnamespace
    WHERE k.relkind IN ('r', 'm') AND k.relfilenode IS DISTINCT FROM pg_relation_filenode(s.oid)
    LIMIT 1);
END
$body$
"""

# A deferred maintenance in two halves, so that another engine (Spark) can compute part of the
# Δ-script between them, from the instances the first half filled, and stage its rows in the
# transaction (program/offload.py); maintain_locked is the two with nothing staged. Every check
# (begin_maintenance's, the compiled functions' existence) and the recorded snapshot are here.
#
# Then whether to recompute the view instead of building its i-diffs and running its Δ-script
# (docs/maintenance.md, "Recomputing instead"): by the view's policy_recompute, else (auto) when
# more changes wait in its logs than the measured cost of recomputing buys at the measured cost
# per change of the i-diffs and the script (counted up to one past that threshold). A view whose
# last recomputation left its cache stale (recompute.py) is recomputed in any case: with its cache
# when the Δ-script would have run (which needs it), else without it again. A recomputed
# view builds no i-diff: `inputs` then holds the logged counts, shaped as idiffs_<id> returns them.
# `estimates`: the script's and the recomputation's estimated ms and the logged changes counted
# (NaN where not estimated or counted), from which finish_maintenance measures the cost per change.
_PREPARE = f"""
CREATE OR REPLACE FUNCTION idivm.prepare_maintenance(view_id bigint, transaction_owned boolean, shown text,
  OUT outcome text, OUT message text, OUT inputs bigint[], OUT new_snapshot text, OUT page_cost text,
  OUT started timestamptz, OUT idiffs_ms float8, OUT recompute int, OUT estimates float8[])
LANGUAGE plpgsql SET client_min_messages = warning AS $body$
DECLARE
  b record;
  c record;
  per_change float8;
  threshold bigint;
  logged bigint[];
BEGIN
  started := clock_timestamp();
  page_cost := current_setting('random_page_cost');
  SELECT * INTO b FROM idivm.begin_maintenance(view_id, shown, transaction_owned);
  outcome := b.outcome;
  message := b.message;
  IF b.outcome <> 'ready' THEN
    RETURN;
  END IF;
  IF to_regprocedure(format('idivm.%I(text)', 'idiffs_' || view_id)) IS NULL THEN
    RAISE EXCEPTION 'view % has no maintenance function; run `idivm refresh %` to rebuild it', shown, shown
      USING ERRCODE = '{SQLSTATE_NOT_COMPILED}';
  END IF;
  new_snapshot := b.now;
  recompute := 0;
  estimates := ARRAY['NaN', 'NaN', 'NaN']::float8[];
  SELECT coalesce(x.policy_recompute, 'auto') AS policy, x.recompute_ms, x.recompute_measured, x.change_ms,
    x.caches_stale, x.stale_regret_ms, x.rebuild_ms INTO c
  FROM idivm.views AS x WHERE x.id = view_id;
  IF c.policy = 'always' OR (c.policy = 'auto' AND c.recompute_ms IS NOT NULL) THEN
    per_change := coalesce(c.change_ms, {PRIOR_CHANGE_MS});
    threshold := CASE WHEN c.policy = 'always' THEN 0
      ELSE floor(least(c.recompute_ms * CASE WHEN c.recompute_measured THEN 1 ELSE {PROBE_SHARE} END / per_change,
                       1e15)) END;
    EXECUTE format('SELECT idivm.%I($1, $2)', 'logged_' || view_id) INTO logged
      USING b.last_snapshot, CASE WHEN c.policy = 'always' THEN NULL ELSE threshold + 1 END;
    estimates := ARRAY[logged[1] * per_change, coalesce(c.recompute_ms, 'NaN'), logged[1]];
    IF logged[1] > threshold THEN
      recompute := CASE WHEN c.policy = 'always' THEN {RECOMPUTED_BY_POLICY}
                        WHEN NOT c.recompute_measured THEN {RECOMPUTED_TO_MEASURE} ELSE {RECOMPUTED_BY_ESTIMATE} END;
      inputs := logged;
    ELSIF c.caches_stale AND c.policy = 'auto' AND c.recompute_measured AND logged[1] > 0
          AND c.stale_regret_ms + c.recompute_ms - estimates[1] < coalesce(c.rebuild_ms, 0) THEN
      -- the Δ-script would be cheaper than recomputing, but it needs the cache rebuilt first: recomputed
      -- again until what that cost beyond the Δ-script's estimates repays rebuilding it (a rent-or-buy
      -- rule: never more than twice the cheaper of the two in hindsight). Going back at once, a stream
      -- whose batches hover near the threshold rebuilt the cache every other round (bench_oltp's sales
      -- per item: 313 and 420 ms rounds among 150-250 ms ones)
      recompute := {RECOMPUTED_AGAIN};
      inputs := logged;
    END IF;
  END IF;
  IF recompute = 0 AND c.caches_stale THEN  -- a count that stayed under its cap is exact: counted again only if not counted
    IF logged IS NULL THEN
      EXECUTE format('SELECT idivm.%I($1, NULL)', 'logged_' || view_id) INTO logged USING b.last_snapshot;
    END IF;
    inputs := logged;
    recompute := {RECOMPUTED_STALE_CACHES};
  ELSIF recompute = 0 THEN
    EXECUTE format('SELECT idivm.%I($1)', 'idiffs_' || view_id) INTO inputs USING b.last_snapshot;
  END IF;
  idiffs_ms := extract(epoch FROM clock_timestamp() - started) * 1000;
END
$body$
"""

# the recomputations that measure what recomputing costs (not one rebuilding a stale cache too)
WITHOUT_CACHE = ", ".join(map(str, (RECOMPUTED_BY_ESTIMATE, RECOMPUTED_BY_POLICY, RECOMPUTED_TO_MEASURE,
                                    RECOMPUTED_AGAIN)))

# The second half: the Δ-script (reading the staged rows of the offloads whose indexes `staged`
# lists), or the view recomputed when prepare_maintenance said so, the new snapshot and the costs
# measured recorded, random_page_cost set back, the report.
_FINISH = f"""
CREATE OR REPLACE FUNCTION idivm.finish_maintenance(view_id bigint, shown text, inputs bigint[], new_snapshot text,
  page_cost text, started timestamptz, idiffs_ms float8, staged int[], recompute int, estimates float8[],
  OUT outcome text, OUT message text, OUT figures float8[], OUT ms float8)
LANGUAGE plpgsql SET client_min_messages = warning AS $body$
DECLARE
  a float8[];
  how text;
BEGIN
  IF recompute > 0 THEN
    EXECUTE format('SELECT idivm.%I($1)', 'recompute_' || view_id) INTO a USING recompute = {RECOMPUTED_STALE_CACHES};
    how := CASE WHEN recompute = {RECOMPUTED_BY_POLICY} THEN format('%s logged %s, recomputed (its policy)',
                    inputs[1], CASE WHEN inputs[1] = 1 THEN 'change' ELSE 'changes' END)
      WHEN recompute = {RECOMPUTED_STALE_CACHES} THEN format('%s logged %s, recomputed with its cache (the last '
                    'recomputation left it stale)', inputs[1], CASE WHEN inputs[1] = 1 THEN 'change' ELSE 'changes' END)
      WHEN recompute = {RECOMPUTED_AGAIN} THEN format('%s logged %s, recomputed again without its cache (the '
                  'Δ-script, estimated at %s ms against recomputing''s %s ms, takes over once what recomputing cost '
                  'beyond it repays rebuilding the cache)', inputs[1], CASE WHEN inputs[1] = 1 THEN 'change' ELSE
                  'changes' END, to_char(estimates[1], 'FM9999999990.0'), to_char(estimates[2], 'FM9999999990.0'))
      WHEN recompute = {RECOMPUTED_TO_MEASURE} THEN format('more than %s logged changes, recomputed to measure what '
                  'that costs (the i-diffs and Δ-script were estimated at more than %s ms, over half the registration''s '
                  'fill, %s ms)', inputs[1] - 1,
                  to_char(estimates[1], 'FM9999999990.0'), to_char(estimates[2], 'FM9999999990.0'))
      ELSE format('more than %s logged changes, recomputed (the i-diffs and Δ-script were estimated at more than '
                  '%s ms, recomputing at %s ms)', inputs[1] - 1,
                  to_char(estimates[1], 'FM9999999990.0'), to_char(estimates[2], 'FM9999999990.0')) END;
  ELSE
    EXECUTE format('SELECT idivm.%I($1, $2)', 'apply_' || view_id) INTO a USING inputs, staged;
  END IF;
  figures := ARRAY[inputs[1], a[1], a[2], idiffs_ms, a[3], a[4], recompute, estimates[1], estimates[2]]::float8[]
    || ARRAY(SELECT inputs[2 * i] FROM generate_series(1, cardinality(inputs) / 2) AS i ORDER BY i)::float8[];
  PERFORM set_config('random_page_cost', page_cost, true);
  ms := extract(epoch FROM clock_timestamp() - started) * 1000;
  UPDATE idivm.views SET last_snapshot = new_snapshot, last_maintained_at = now(), last_attempt_at = now(),
    last_duration_ms = ms, last_changes = figures[1], consecutive_failures = 0, last_error = NULL,
    recompute_ms = CASE WHEN recompute IN ({WITHOUT_CACHE}) THEN a[3] + a[4] ELSE recompute_ms END,
    recompute_measured = recompute_measured OR recompute IN ({WITHOUT_CACHE}),
    rebuild_ms = CASE WHEN recompute = {RECOMPUTED_STALE_CACHES} THEN a[3] + a[4] ELSE rebuild_ms END,
    stale_regret_ms = CASE WHEN recompute = {RECOMPUTED_AGAIN} THEN stale_regret_ms + estimates[2] - estimates[1]
                           WHEN recompute = {RECOMPUTED_BY_ESTIMATE} THEN stale_regret_ms ELSE 0 END,
    caches_stale = recompute > 0 AND a[5] = 1,
    change_ms = CASE WHEN recompute = 0 AND estimates[3] <> 'NaN' AND estimates[3] >= {MEASURING_BATCH}
                     THEN (idiffs_ms + a[3] + a[4]) / estimates[3] ELSE change_ms END
  WHERE id = view_id;
  outcome := 'maintained';
  how := coalesce(how, format('%s %s', figures[1], CASE WHEN figures[1] = 1 THEN 'effective change' ELSE 'effective changes' END));
  message := format('%s: %s, %s %s, %s %s touched in %s ms', shown, how,
    figures[2], CASE WHEN figures[2] = 1 THEN 'statement' ELSE 'statements' END,
    figures[3], CASE WHEN figures[3] = 1 THEN 'view row' ELSE 'view rows' END, to_char(ms, 'FM9999999990.0'));
END
$body$
"""

_MAINTAIN_LOCKED = """
CREATE OR REPLACE FUNCTION idivm.maintain_locked(view_id bigint, transaction_owned boolean, shown text,
  OUT outcome text, OUT message text, OUT figures float8[], OUT ms float8)
LANGUAGE plpgsql SET client_min_messages = warning AS $body$
DECLARE
  p record;
BEGIN
  SELECT * INTO p FROM idivm.prepare_maintenance(view_id, transaction_owned, shown);
  IF p.outcome <> 'ready' THEN
    outcome := p.outcome;
    message := p.message;
    RETURN;
  END IF;
  SELECT * INTO outcome, message, figures, ms
  FROM idivm.finish_maintenance(view_id, shown, p.inputs, p.new_snapshot, p.page_cost, p.started, p.idiffs_ms, '{}',
                                p.recompute, p.estimates);
END
$body$
"""


def _attempts(maintain: str, restarted: str) -> str:
    """PL/pgSQL of a procedure: commit, then run `maintain` (statements that end in a REPEATABLE
    READ transaction's maintenance, leaving its outcome where the condition `restarted` reads it)
    in a new transaction until it was not restarted (begin_maintenance) or ATTEMPTS were. The
    caller commits what the last attempt did, and fails the view if it was restarted too. Nothing
    may be evaluated between a COMMIT or ROLLBACK and SET TRANSACTION: an expression would take
    the new transaction's snapshot before its isolation level is set."""
    return f"""    attempt := 1;
    COMMIT;
    LOOP
      SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
{maintain}
      EXIT WHEN NOT ({restarted}) OR attempt >= {ATTEMPTS};
      attempt := attempt + 1;
      ROLLBACK;
    END LOOP;"""


# What a view's maintenance fails with when every attempt was restarted (the view and its log as before).
_TOO_MANY_ATTEMPTS = (f"format('%s: a table it reads was truncated or rewritten during each of {ATTEMPTS} attempts to "
                      "maintain it (last: %s); maintain it again', shown, {message})")


_MAINTAIN_VIEW = f"""
CREATE OR REPLACE FUNCTION idivm.maintain_view(view_id bigint, transaction_owned boolean)
RETURNS {REPORT_TYPE} LANGUAGE plpgsql SET client_min_messages = warning AS $body$
DECLARE
  r {REPORT_TYPE};
  m record;
BEGIN
  SELECT format('%I.%I', x.schema_name, x.view_name) INTO r.view_name FROM idivm.views AS x WHERE x.id = view_id;
  IF r.view_name IS NULL THEN
    RAISE EXCEPTION 'no maintained view has id %', view_id USING ERRCODE = 'undefined_object';
  END IF;
  IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'idivm.maintain(%) needs a REPEATABLE READ or SERIALIZABLE transaction, and this one runs at %',
      quote_literal(r.view_name), current_setting('transaction_isolation')
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT * FROM idivm.maintain(...); COMMIT; or, outside a transaction, CALL idivm.maintain_all()';
  END IF;
  PERFORM pg_advisory_xact_lock({LOCK_CLASS}, CAST(view_id AS int));  -- the CLI's and the scheduler's lock
  SELECT * INTO m FROM idivm.maintain_locked(view_id, transaction_owned, r.view_name);
  IF m.outcome = 'restart' AND NOT transaction_owned THEN  -- the caller's snapshot cannot be taken again
    RAISE EXCEPTION 'cannot maintain % in this transaction: %; maintain it in a new transaction', r.view_name, m.message
      USING ERRCODE = 'serialization_failure';
  END IF;
  r.outcome := m.outcome;
  r.message := m.message;
  r.changes := m.figures[1];
  r.statements := m.figures[2];
  r.view_rows := m.figures[3];
  r.ms := m.ms;
  RETURN r;
END
$body$
"""

_RESOLVE = """
CREATE OR REPLACE FUNCTION idivm.view_id(view_name text) RETURNS bigint LANGUAGE plpgsql STABLE AS $body$
DECLARE
  parts text[];
  found bigint;
BEGIN
  BEGIN
    parts := parse_ident(view_name);
  EXCEPTION WHEN invalid_parameter_value THEN
    RAISE EXCEPTION 'not a view name: %', quote_literal(view_name) USING ERRCODE = 'invalid_name';
  END;
  IF cardinality(parts) > 2 THEN
    RAISE EXCEPTION 'not a view name: % (write view or schema.view)', quote_literal(view_name) USING ERRCODE = 'invalid_name';
  END IF;
  SELECT x.id INTO found FROM idivm.views AS x
  WHERE x.schema_name = CASE WHEN cardinality(parts) = 2 THEN parts[1] ELSE current_schema() END
    AND x.view_name = parts[cardinality(parts)];
  IF found IS NULL THEN
    RAISE EXCEPTION 'no maintained view named %', view_name USING ERRCODE = 'undefined_object',
      HINT = 'idivm list shows the maintained views, as their names must be typed';
  END IF;
  RETURN found;
END
$body$
"""

_MAINTAIN = f"""
CREATE OR REPLACE FUNCTION idivm.maintain(view_name text) RETURNS {REPORT_TYPE} LANGUAGE sql AS $body$
  SELECT idivm.maintain_view(idivm.view_id(view_name), false)
$body$
"""

# The bounds of each log's prune are read first, in one query, and given to the log's own prune
# function (capture/triggers.prune_function: a static DELETE through the xid index, catalog.prune_logs
# says why bounds and not a subquery); then one statement moves every log's pruned_below.
_PRUNE = f"""
CREATE OR REPLACE FUNCTION idivm.prune_logs(captured_ids bigint[]) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $body$
DECLARE
  ids bigint[];
  lows xid8[];
  highs xid8[];
  consumed xid8[];
BEGIN
  SELECT array_agg(b.id ORDER BY b.id), array_agg(b.low ORDER BY b.id),
         array_agg(b.high ORDER BY b.id), array_agg(b.consumed_below ORDER BY b.id)
  INTO ids, lows, highs, consumed
  FROM (SELECT c.id, coalesce(c.pruned_below, '0') AS low,
               coalesce(min(pg_snapshot_xmin(CAST(v.last_snapshot AS pg_snapshot))), pg_snapshot_xmin(pg_current_snapshot())) AS consumed_below,
               coalesce(min(pg_snapshot_xmax(CAST(v.last_snapshot AS pg_snapshot))), pg_snapshot_xmax(pg_current_snapshot())) AS high
        FROM idivm.captured_tables AS c LEFT JOIN (idivm.view_inputs AS vi JOIN idivm.views AS v
          ON v.id = vi.view_id AND v.mode = 'deferred') ON vi.captured_table_id = c.id
        WHERE c.id = ANY (captured_ids) GROUP BY c.id, c.pruned_below) AS b;
  IF ids IS NULL THEN
    RETURN;
  END IF;
  FOR i IN 1 .. cardinality(ids) LOOP
    -- capture/triggers.prune_function: the table's DELETE, its plan kept for the session
    EXECUTE format('SELECT idivm.%I($1, $2)', {string_literal(PRUNE_PREFIX)} || ids[i]) USING lows[i], highs[i];
  END LOOP;
  UPDATE idivm.captured_tables AS c SET pruned_below = u.consumed
  FROM unnest(ids, consumed) AS u(id, consumed)
  WHERE c.id = u.id AND (c.pruned_below IS NULL OR c.pruned_below < u.consumed);
END
$body$
"""

def _prune_quietly(ids: str) -> str:
    """PL/pgSQL: prune the logs of the captured tables in the array variable `ids` after a committed
    maintenance, asynchronously committed, ignoring failures (pruning is an optimisation: what stays
    is pruned by the next one)."""
    return (f"BEGIN PERFORM set_config('synchronous_commit', 'off', true); PERFORM idivm.prune_logs({ids}); "
            "EXCEPTION WHEN OTHERS THEN NULL; END;")


_MAINTAIN_ALL = f"""
CREATE OR REPLACE PROCEDURE idivm.maintain_all(views text[] DEFAULT NULL) LANGUAGE plpgsql AS $body$
DECLARE
  ids bigint[];
  vid bigint;
  r {REPORT_TYPE};
  failed text[] := ARRAY[]::text[];
  cause text;
  shown text;
  inputs bigint[];
  attempt int;
  stale boolean;
BEGIN
  IF views IS NULL THEN
    SELECT array_agg(x.id ORDER BY x.id) INTO ids FROM idivm.views AS x;
  ELSE
    SELECT array_agg(idivm.view_id(n) ORDER BY o) INTO ids FROM unnest(views) WITH ORDINALITY AS u(n, o);
  END IF;
  -- a view after the maintained views it reads (their storage tables are its captured inputs)
  WITH RECURSIVE edge AS (
    SELECT vi.view_id, lower.id AS reads FROM idivm.view_inputs AS vi
    JOIN idivm.captured_tables AS c ON c.id = vi.captured_table_id
    JOIN idivm.views AS lower ON c.schema_name = 'idivm' AND c.table_name = 'view_' || lower.id
  ), depth(id, d) AS (
    SELECT x.id, 0 FROM idivm.views AS x
    UNION ALL
    SELECT e.view_id, depth.d + 1 FROM depth JOIN edge AS e ON e.reads = depth.id WHERE depth.d < 100
  )
  SELECT array_agg(q.id ORDER BY q.d, q.id) INTO ids
  FROM (SELECT depth.id, max(depth.d) AS d FROM depth WHERE depth.id = ANY (ids) GROUP BY depth.id) AS q;
  FOREACH vid IN ARRAY coalesce(ids, ARRAY[]::bigint[]) LOOP
    SELECT format('%I.%I', x.schema_name, x.view_name) INTO shown FROM idivm.views AS x WHERE x.id = vid;
    CONTINUE WHEN shown IS NULL;  -- dropped meanwhile
    PERFORM pg_advisory_lock({LOCK_CLASS}, CAST(vid AS int));  -- before the maintenance transaction's snapshot
{_attempts(f'''      cause := NULL;
      stale := false;
      BEGIN
        r := idivm.maintain_view(vid, true);
      EXCEPTION WHEN SQLSTATE '{SQLSTATE_STALE}' THEN
        cause := SQLERRM;
        stale := true;
      WHEN OTHERS THEN
        cause := SQLERRM;
      END;''', "cause IS NULL AND r.outcome = 'restart'")}
    IF cause IS NULL AND r.outcome = 'restart' THEN
      cause := {_TOO_MANY_ATTEMPTS.format(message='r.message')};
    END IF;
    COMMIT;
    IF stale THEN
      RAISE WARNING '%: skipped: %', shown, cause;
    ELSIF cause IS NOT NULL THEN
      failed := failed || format('%s: FAILED: %s', shown, cause);
      RAISE WARNING '%: FAILED: %', shown, cause;
      UPDATE idivm.views SET consecutive_failures = consecutive_failures + 1, last_error = cause,
        last_attempt_at = now() WHERE id = vid;
    ELSE
      RAISE NOTICE '%', r.message;
    END IF;
    IF cause IS NULL AND r.changes > 0 THEN  -- consumed something: prune what every view over its tables has
      SELECT array_agg(vi.captured_table_id) INTO inputs FROM idivm.view_inputs AS vi WHERE vi.view_id = vid;
{_prune_quietly('inputs')}
    END IF;
    PERFORM pg_advisory_unlock({LOCK_CLASS}, CAST(vid AS int));
    COMMIT;
  END LOOP;
  IF cardinality(failed) > 0 THEN
    RAISE EXCEPTION 'idivm.maintain_all: % of % views failed: %', cardinality(failed), cardinality(ids),
      array_to_string(failed, '; ') USING ERRCODE = 'triggered_action_exception';
  END IF;
END
$body$
"""

# The Python API's maintenance of one compiled view (engines/postgres/executor.py) in one round trip:
# CALLed outside a transaction block, it takes the view's lock before the maintenance transaction's
# snapshot (its own first transaction, committed), maintains in a REPEATABLE READ transaction
# (maintain_locked), commits, prunes the logs and releases the lock. An error leaves the lock held
# by the session: the caller records the failure and releases it (one more round trip, on failure only).
_MAINTAIN_CALL = f"""
CREATE OR REPLACE PROCEDURE idivm.maintain_call(view_id bigint, shown text, wait boolean,
  INOUT outcome text DEFAULT NULL, INOUT message text DEFAULT NULL, INOUT figures float8[] DEFAULT NULL,
  INOUT input_ids bigint[] DEFAULT NULL, INOUT input_schemas text[] DEFAULT NULL, INOUT input_names text[] DEFAULT NULL)
LANGUAGE plpgsql AS $body$
DECLARE
  m record;
  attempt int;
BEGIN
  IF wait THEN
    PERFORM pg_advisory_lock({LOCK_CLASS}, CAST(view_id AS int));
  ELSIF NOT pg_try_advisory_lock({LOCK_CLASS}, CAST(view_id AS int)) THEN
    outcome := 'busy';
    RETURN;
  END IF;
{_attempts('      SELECT * INTO m FROM idivm.maintain_locked(view_id, true, shown);', "m.outcome = 'restart'")}
  IF m.outcome = 'restart' THEN
    RAISE EXCEPTION '%', {_TOO_MANY_ATTEMPTS.format(message='m.message')} USING ERRCODE = 'serialization_failure';
  END IF;
  outcome := m.outcome;
  message := m.message;
  figures := m.figures;
  IF outcome = 'maintained' THEN
    SELECT {input_arrays('maintain_call.view_id')} INTO input_ids, input_schemas, input_names;
  END IF;
  COMMIT;
  IF outcome = 'maintained' AND figures[1] > 0 THEN  -- consumed something: prune what every view over its tables has
{_prune_quietly('input_ids')}
  END IF;
  PERFORM pg_advisory_unlock({LOCK_CLASS}, CAST(view_id AS int));
END
$body$
"""


def install_functions(conn: Connection) -> None:
    """The generic functions and the report type (idempotent; init and upgrades run it)."""
    if conn.execute(sa.text("SELECT to_regtype('idivm.maintenance_report')")).scalar() is None:
        run(conn, f"CREATE TYPE {REPORT_TYPE} AS (view_name text, outcome text, changes bigint, statements bigint, "
                  "view_rows bigint, ms double precision, message text)")
    for text in (_RESOLVE, _REWRITTEN, _BEGIN_MAINTENANCE, _PREPARE, _FINISH, _MAINTAIN_LOCKED, _MAINTAIN_VIEW, _MAINTAIN, _PRUNE, _MAINTAIN_ALL, _MAINTAIN_CALL):
        run(conn, text)
    for signature in ("rewritten_since_snapshot(regclass[])", "begin_maintenance(bigint, text, boolean)",
                      "prepare_maintenance(bigint, boolean, text)",
                      "finish_maintenance(bigint, text, bigint[], text, text, timestamptz, float8, int[], int, float8[])",
                      "maintain_locked(bigint, boolean, text)", "maintain_view(bigint, boolean)", "maintain(text)",
                      "view_id(text)", "prune_logs(bigint[])"):
        run(conn, f"REVOKE ALL ON FUNCTION idivm.{signature} FROM PUBLIC")
    run(conn, "REVOKE ALL ON PROCEDURE idivm.maintain_all(text[]) FROM PUBLIC")
    run(conn, "REVOKE ALL ON PROCEDURE idivm.maintain_call(bigint, text, boolean, text, text, float8[], bigint[], "
              "text[], text[]) FROM PUBLIC")


