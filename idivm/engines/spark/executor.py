"""Deferred maintenance with its diffs computed on Spark (docs/spark.md).

The PostgreSQL engine's maintenance (engines/postgres/executor.py, server_maintenance.py) does
everything it always does, through the same server functions: the view's lock, one REPEATABLE
READ snapshot that fixes the base tables and the log window, the i-diff instances
(idivm.prepare_maintenance), the Δ-script and the new snapshot recorded
(idivm.finish_maintenance), one commit. This engine only changes where the expensive part of the
script is computed, between those two halves (spark_stage). Once the instances exist, the
transaction exports its snapshot, and every query of a step that reads i-diffs and base tables
alone (program/offload.py: an insert's or a map increment's source, a matching delete's or
update's join of Δ with base tables) is computed by Spark, all of them as one Spark plan
(staging.merged_sql). Small inputs come from the transaction itself as local relations
(engines/spark/local_inputs.py); larger ones Spark reads: the window's log rows (folded exactly as
capture/fold.py folds them, inside that snapshot) and the base tables (inside that snapshot,
checked on every row). Spark's rows are copied into a temporary table per query of the
transaction (program/offload.staged_name), typed by PostgreSQL from the query itself, and the view's
compiled function runs those steps in their staged form, reading them from there. Every other step
runs as PostgreSQL runs it, in the same transaction, so the view, the logs and
the snapshot move together or not at all: a failed Spark job, a lost executor or a crash rolls
the transaction back and the next run consumes the same window. Task retries cannot stage a row
twice (engines/spark/staging.py).
"""
from __future__ import annotations

import functools
import itertools
import os
import time
from collections import Counter
from typing import NamedTuple

from sqlalchemy.engine import Connection

from ...capture.fold import fold_log
from ...catalog import repository as catalog
from ...errors import IdivmError, UnsupportedQuery
from ...introspect.reflect import columns_json, table_info
from ...program import relations as R
from ...program.kinds_needed import BIT, yields_nothing
from ...program.offload import Offload, offloads as offload_steps, staged_name
from ...program.serialize import from_json
from ...program.steps import InsertRows
from ...sqltext import ident, qualified, run
from ..postgres.executor import MaintenanceReport
from ..postgres.render import delta_names, sql as pg_sql
from ..postgres.server_maintenance import view_delta
from . import numeric_division
from .collations import text_rules_of
from .local_inputs import read_local, select_columns
from .needs import needed_columns, occurrences
from .pushdown import Pushdown
from .progress import new_group, tracking
from .reads import carried, columns_to_read, export, read, read_table, select_read, spark_read_type
from .session import run_session
from .settings import SparkSettings
from .spark_sql import TextRules, spark_sql, view_name
from .staging import copy_result, merged_sql

ENGINE = "spark"


class InputTypes(NamedTuple):
    """What spark_sql needs to know of a view's inputs; hashable, for spark_texts' cache."""

    tables: tuple = ()  # ((captured id, schema, table, ((column, type), ...)), ...)
    text: TextRules = TextRules()  # what Spark may compute on their text, by its collations


def offloads(program) -> list[Offload]:
    """What Spark computes of the program's steps, in step order (program/offload.py)."""
    return offload_steps(program.ordered())


def computes_anything(program) -> bool:
    """Whether Spark would compute any part of the program's steps."""
    return bool(offloads(program))


def spark_plan(program, types: InputTypes = InputTypes()) -> str:
    """What `--engine spark` computes on Spark, as explain prints it: each offloaded query's Spark
    SQL, or why Spark refuses it (then maintenance on Spark fails with that line). `types`: the
    inputs' column types (input_types), where the view is registered."""
    column_type = _column_type(types)
    lines = []
    steps = program.ordered()
    for o in offloads(program):
        i, st = steps.index(o.step) + 1, o.step
        what = "its rows" if hasattr(st, "source") else "the rows it matches"
        if o.reads:
            changed = {rel for rel, _ in o.changed}
            what += (" (reading " + ", ".join(rel.label() + (" as this batch's earlier steps leave it" if rel in changed
                                                             else " as before this maintenance")
                                              for rel in sorted(o.reads, key=lambda r: r.label()))
                     + ", when Spark can take it exactly; else in PostgreSQL)")
        try:
            lines.append(f"-- [{i}] {st.purpose}: {what} computed on Spark\n"
                         f"{spark_sql(o.query, column_type, types.text)}")
        except UnsupportedQuery as e:
            lines.append(f"-- [{i}] {st.purpose}: {'in PostgreSQL' if o.reads else 'refused'}: {e}")
    if not lines:
        return "nothing: every step reads the view, a cache or a map, and runs in PostgreSQL"
    return "\n".join(lines + [
        "-- the queries a batch needs run as one Spark plan; inputs of at most IDIVM_SPARK_LOCAL_ROWS rows "
        "come from the maintenance transaction, larger ones are read through JDBC"])


def spark_stage(settings: SparkSettings):
    """What the Spark engine does in a maintenance (engines/postgres/executor.py), between the two
    halves of the view's server-side maintenance: the offloaded queries' rows computed on Spark
    (program/offload.py) and staged in the transaction. `stage(conn, view_id, inputs, report)`,
    inputs: by captured id, the effective changes and kind mask (kinds_needed.BIT) of its i-diff
    instance; returns the indexes of the offloads it staged."""
    def stage(conn: Connection, view_id: int, inputs: dict[int, tuple[int, int]], report: MaintenanceReport) -> list[int]:
        text = catalog.program_of(conn, view_id)
        every = offloads(from_json(text))
        index = {id(o): k for k, o in enumerate(every)}
        tables = catalog.view_inputs(conn, view_id, reflect=True)
        # what Spark would compute differently, or read inexactly, is refused whatever this batch holds;
        # an optional offload (it reads a map or cache) that Spark cannot compute stays in PostgreSQL
        computed = [(o, t) for o, t in zip(every, spark_texts(text, input_types(conn, tables, every)))
                    if (o.step.driven_by is None or inputs.get(o.step.driven_by, (0, 0))[0])
                    and not (o.reads and isinstance(t, UnsupportedQuery))]
        if not computed:
            return []
        texts = {id(o): _text(t) for o, t in computed}
        _sources(tables, [o.query for o, _ in computed])
        kinds = {cid: {k for k, bit in BIT.items() if mask & bit} for cid, (_, mask) in inputs.items()}
        work = [o for o, _ in computed if not yields_nothing(o.query, kinds)]  # else PostgreSQL finds that at once
        if not work:
            return []
        started = time.perf_counter()
        staged, parts = _compute(conn, view_id, work, texts, index, tables, settings)
        report.offloaded = len(staged)
        report.breakdown["spark"] = time.perf_counter() - started  # reads, Spark's jobs, the copy back
        report.breakdown.update(parts)  # of which: copying rows into PostgreSQL (and reading, if separated)
        return staged

    stage.engine = ENGINE  # the report names it even when nothing changed
    return stage


def input_types(conn: Connection, tables, every: list[Offload]) -> InputTypes:
    """The column types of what a view's offloads read, as spark_texts takes them: its inputs
    (`tables`: catalog.view_inputs with reflect) and the maps and caches the offloads read."""
    out = [(t.id, t.schema_name, t.table_name, tuple((c[0], c[1]) for c in t.columns or ())) for t in tables]
    text = text_rules_of(conn, [(t.schema_name, t.table_name, c[0]) for t in tables for c in t.columns or ()])
    kept = sorted({(rel.schema, rel.name) for o in every for rel in o.reads})
    if kept:
        rows = run(conn, "SELECT n.nspname, k.relname, a.attname, format_type(a.atttypid, a.atttypmod) "
                         "FROM pg_attribute AS a JOIN pg_class AS k ON k.oid = a.attrelid "
                         "JOIN pg_namespace AS n ON n.oid = k.relnamespace "
                         "WHERE (n.nspname, k.relname) IN (SELECT * FROM unnest(%(s)s::text[], %(n)s::text[])) "
                         "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2, a.attnum",
                   {"s": [s_ for s_, _ in kept], "n": [n for _, n in kept]}).fetchall()
        for (schema, name), cols in itertools.groupby(rows, key=lambda r: (r[0], r[1])):
            out.append((None, schema, name, tuple((r[2], r[3]) for r in cols)))
    return InputTypes(tuple(out), text)


def spark_input_types(conn: Connection, view_id: int, program) -> InputTypes:
    """input_types of a registered view's program, read from the catalog (explain, tests)."""
    return input_types(conn, catalog.view_inputs(conn, view_id, reflect=True), offloads(program))


def _column_type(types: InputTypes):
    """spark_sql's column_type over the inputs: a base table's column, or the table's column an
    i-diff instance's image holds (pre__c, post__c); None for anything else (maps, caches)."""
    by_id = {cid: dict(cols) for cid, _, _, cols in types.tables}
    by_name = {(schema, name): dict(cols) for _, schema, name, cols in types.tables}

    def column_type(rel: R.Relation, column: str) -> str | None:
        if rel.kind == R.DELTA and rel.captured_id() in by_id:
            base = R.imaged_column(column)
            return by_id[rel.captured_id()].get(base) if base is not None else None
        if rel.kind in (R.BASE, R.VIEW):  # a base table, or a map or cache the program maintains
            return by_name.get((rel.schema, rel.name), {}).get(column)
        return None

    return column_type


@functools.lru_cache(maxsize=256)
def spark_texts(program_text: str, types: InputTypes = InputTypes()) -> tuple:
    """The Spark SQL of each of a program's offloaded queries (offloads() order), or why Spark
    refuses it; once per program, inputs' types and process (sqlglot's transpilation of a query
    costs more than a small maintenance's statements, and a scheduler maintains the same programs
    over and over)."""
    column_type = _column_type(types)
    out = []
    for o in offloads(from_json(program_text)):
        try:
            out.append(spark_sql(o.query, column_type, types.text))
        except UnsupportedQuery as e:
            out.append(e)
    return tuple(out)


def _text(t: str | UnsupportedQuery) -> str:
    if isinstance(t, UnsupportedQuery):
        raise UnsupportedQuery(str(t))
    return t


def _sources(inputs: list, queries: list) -> list[tuple]:
    """What Spark reads for these queries, from the view's inputs (catalog.view_inputs): (relation,
    its captured table, its TableInfo, the names the queries use (None: all), the columns to read);
    carried ones read as text (reads.py). Of an i-diff instance only the change kind and
    the images of the columns read (of those the view reads, which are the ones its instance has)."""
    by_id = {t.id: t for t in inputs}
    by_name = {(t.schema_name, t.table_name): t for t in inputs}
    out = []
    for rel, names in needed_columns(queries).items():
        if rel.kind == R.VIEW:
            continue  # a map or cache: read by _read_maintained, from the transaction
        t = by_id[int(rel.name)] if rel.kind == R.DELTA else by_name.get((rel.schema, rel.name))
        if t is None:
            raise IdivmError(f"the Spark engine reads only the view's captured tables, not {rel.label()}")
        info = table_info(t.schema_name, t.table_name, t.columns)
        if rel.kind == R.DELTA:  # the view's instance holds the columns it reads
            info = info.reading(t.read_columns)
            used = columns_to_read(info, names and {c for c in info.column_names if {R.pre(c), R.post(c)} & names})
            columns = [R.KIND_COLUMN] + [i(c) for c in used for i in (R.pre, R.post)]
        else:
            columns = columns_to_read(info, names)
        out.append((rel, t, info, names, columns))
    return out


def _read_maintained(spark, cur, work: list[Offload], settings: SparkSettings, filters: dict) -> set:
    """Hand Spark the maps and caches the queries read (Offload.reads), as they are before this
    maintenance's steps (none has run yet, and none before the reading step writes them), from the
    transaction itself, only the rows the batch can join where `filters` (pushdown.py) says which;
    those it cannot take exactly (more than the local limit's rows, values wider than Spark's
    decimals) are returned, and the steps reading them stay in PostgreSQL."""
    wanted = {rel for o in work for rel in o.reads}
    names = needed_columns([o.query for o in work if o.reads])
    # a map summed with increments that Spark computes from the batch: its keys must be values Spark
    # holds as they are on both sides (a key of a type read as text would meet the map's own value)
    keyed = {(rel, k) for o in work for rel, keys in o.changed for k in keys}
    unreadable = set()
    for rel in sorted(wanted, key=lambda r: r.label()):
        table = qualified(rel.schema, rel.name)
        (rows,) = cur.execute(f"SELECT {columns_json('to_regclass(%s)')}", (table,)).fetchone()
        columns = [(c, t) for c, t, *_ in rows or [] if names.get(rel) is None or c in names[rel]]
        if any((rel, c) in keyed and carried(t) for c, t, *_ in rows or []):
            unreadable.add(rel)
            continue
        where = f" WHERE {filters[rel]}" if rel in filters else ""
        if not read_local(spark, cur, select_columns([c for c, _ in columns], table + where), columns, view_name(rel),
                          settings.local_rows):
            unreadable.add(rel)
    return unreadable


ADAPTIVE = "spark.sql.adaptive.enabled"


def without_adaptive_execution(spark, settings: SparkSettings) -> None:
    """Plan this run's queries once, without Adaptive Query Execution, unless IDIVM_SPARK_CONF sets
    it: for a plan whose inputs all came from the maintenance transaction (local relations whose
    sizes the optimizer knows exactly, the batch's size). AQE re-plans at every shuffle from runtime
    statistics, which pays for large inputs of unknown size (batches whose base rows come through
    JDBC keep it) and only costs time on inputs whose sizes are known (docs/benchmarks.md,
    "Measurements behind the code"). The setting is the run's own session's
    (session.run_session)."""
    if ADAPTIVE not in settings.conf:
        spark.conf.set(ADAPTIVE, "false")


def _instance(view_id: int, captured_id: int) -> str:
    """The view's i-diff instance of a captured table, as its compiled function filled it."""
    return qualified("pg_temp", view_delta(view_id, captured_id))


def _staged_columns(o: Offload) -> str:
    """The query whose columns type a staged table: for rows inserted into a maintained table, that
    table's columns the insert writes, which PostgreSQL reads Spark's text of each value into as the
    insert would convert it; for other steps, the offloaded query itself. The query alone would
    type a bare NULL of a UNION branch (`SELECT k, NULL FROM ...`, which the view's UNION types by
    its other branches) as text, and a numeric quotient (numeric_division.py) comes as text."""
    step = o.step
    rel = R.relation_of(step.target) if isinstance(step, InsertRows) else None
    if rel is None or rel.kind != R.VIEW:
        return pg_sql(o.query)
    return f"SELECT {', '.join(ident(c) for c in step.columns)} FROM {qualified(rel.schema, rel.name)}"


def _compute(conn: Connection, view_id: int, work: list[Offload], texts: dict[int, str], index: dict[int, int],
             inputs: list, settings: SparkSettings) -> tuple[list[int], dict]:
    """Each offloaded query's rows computed on Spark (`texts`: its Spark SQL, by id of the offload)
    and staged in a temporary table of the transaction (program/offload.staged_name of its `index`
    in the program's offloads); those indexes, and the seconds spent copying (and, with
    IDIVM_SPARK_SEPARATE_READS=1, reading)."""
    cur = conn.connection.driver_connection.cursor()
    snapshot = export(cur)
    spark = run_session(settings)  # its own temp views and settings (session.py)
    instance = functools.partial(_instance, view_id)
    filters = Pushdown(cur, lambda rel: qualified(rel.schema, rel.name), instance).filters([o.query for o in work])
    unreadable = _read_maintained(spark, cur, work, settings, filters)
    work = [o for o in work if not o.reads & unreadable]  # those steps stay in PostgreSQL
    if not work:
        return [], {}
    queries = [o.query for o in work]
    jdbc = set()  # what Spark's executors read through JDBC (the rest came from this transaction)
    for rel, t, info, names, columns in _sources(inputs, queries):
        name = view_name(rel)
        if rel.kind != R.DELTA:  # only the rows the batch can join, where the queries say which
            where = f" WHERE {filters[rel]}" if rel in filters else ""
            if not read_local(spark, cur, select_read(columns, info.qualified + where, info.type_of),
                              [(c, spark_read_type(info.type_of(c))) for c in columns], name, settings.local_rows):
                read_table(spark, settings, cur, snapshot, name, info, names, where)
                jdbc.add(name)
            continue
        image_types = {i(c): info.type_of(c) for c in info.column_names for i in (R.pre, R.post)}

        def type_of(column: str, image_types=image_types) -> str:
            return image_types.get(column, "text")  # and the change kind, I, D or U

        types = [(c, spark_read_type(type_of(c))) for c in columns]
        if read_local(spark, cur, select_read(columns, instance(int(rel.name)), type_of), types, name,
                      settings.local_rows):
            continue  # this transaction's own i-diff instance: the window's changes, folded
        source = f"({fold_log(info, t.log_table, catalog.unconsumed('l', view_id), t.read_columns)}) AS t"
        read(spark, settings, select_read(columns, source, type_of), snapshot, name)
        jdbc.add(name)
    separate = os.environ.get("IDIVM_SPARK_SEPARATE_READS") == "1"
    uses = Counter(rel for q in queries for rel in occurrences(q))  # every place that reads it
    kept = [view_name(rel) for rel, n in uses.items() if view_name(rel) in jdbc and (n > 1 or separate)]
    for name in kept:  # read once, by the first job that needs it, and kept for the next ones
        spark.catalog.cacheTable(name)
    parts: dict[str, float] = {}
    try:
        with tracking(spark, new_group(f"maintain-{view_id}")) as tracker:
            if separate:  # every read done before any query runs: the breakdown tells reads from compute
                started = time.perf_counter()
                for name in kept:
                    spark.table(name).count()
                parts["spark reads"] = time.perf_counter() - started
            staged = [qualified("pg_temp", staged_name(index[id(o)])) for o in work]
            with delta_names(lambda cid: view_delta(view_id, cid)):
                for name, o in zip(staged, work):
                    run(conn, f"CREATE TEMP TABLE {name} ON COMMIT DROP AS {_staged_columns(o)} WITH NO DATA")
            widths = [len(o.query.selects) for o in work]
            if not jdbc:
                without_adaptive_execution(spark, settings)
            merged = merged_sql([texts[id(o)] for o in work], widths)
            numeric_division.register_if_used(spark, merged)
            plan = spark.sql(merged)  # Spark runs them side by side
            copy_result(cur, staged, plan, widths, small=not jdbc, tracker=tracker,
                        conninfo=settings.executor_conninfo())
    finally:
        for name in kept:
            spark.catalog.uncacheTable(name)
    parts["spark copy"] = tracker.copy_seconds
    return [index[id(o)] for o in work], parts
