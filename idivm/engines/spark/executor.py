"""Deferred maintenance with its diffs computed on Spark (docs/spark.md).

The PostgreSQL engine's maintenance transaction (engines/postgres/executor.py) does everything it
always does: the view's lock, one REPEATABLE READ snapshot that fixes the base tables and the log
window, the i-diff instances, the apply, the new snapshot recorded, one commit. This engine only
replaces where the expensive part of the script is computed. Once the instances exist, the
transaction exports its snapshot, and every step that inserts rows computed from i-diffs and base
tables alone (an InsertRows over Δ and base relations: the joins of a batch with large tables) is
computed by Spark, which reads the window's log rows (folded exactly as capture/fold.py folds
them, inside that snapshot) and the base tables (inside that snapshot, checked on every row).
Spark's rows are copied into a temporary table of the transaction, typed by PostgreSQL from the
step's own source, and the step inserts from there. Every other step runs as PostgreSQL would run
it, in the same transaction, so the view, the logs and the snapshot move together or not at all:
a failed Spark job, a lost executor or a crash rolls the transaction back and the next run
consumes the same window. Task retries cannot stage a row twice (engines/spark/staging.py).
"""
from __future__ import annotations

import time
from dataclasses import replace

from psycopg.sql import Literal
from sqlalchemy.engine import Connection
from sqlglot import exp

from ...capture.fold import fold_select, log_images
from ...catalog import repository as catalog
from ...errors import IdivmError, UnsupportedQuery
from ...introspect.reflect import table_info
from ...names import display_name
from ...program import relations as R
from ...program.serialize import from_json
from ...program.steps import InsertRows, Step
from ...program.trees import conjuncts, select
from ...sqltext import ident, qualified, run
from ..postgres.executor import MaintenanceReport, Statement
from ..postgres.render import delta_table, render_step, sql as pg_sql
from .needs import needed_columns, relations
from .progress import new_group, tracking
from .reads import check_types, export, read, read_table
from .session import spark_session
from .settings import SparkSettings
from .spark_sql import spark_sql, view_name
from .staging import copy_rows

ENGINE = "spark"


PUSHDOWN_LIMIT = 20_000  # at most this many distinct batch values are inlined into a base table's read


def _pushdowns(work: list[InsertRows]) -> dict[R.Relation, list[tuple[str, int, str]]]:
    """Per base relation that the steps read exactly once: the equalities `base column = Δ column`
    among the conjuncts of the WHERE (or an inner join's ON) of the SELECT that reads it. Only the
    base rows whose column holds one of the batch's values can satisfy such a conjunct, so Spark
    need read no others: (base column, captured table, Δ column) each."""
    reads: dict[R.Relation, int] = {}
    for st in work:
        for node in st.source.find_all(exp.Table):
            rel = R.relation_of(node)
            if rel is not None and rel.kind == R.BASE:
                reads[rel] = reads.get(rel, 0) + 1
    out: dict[R.Relation, list[tuple[str, int, str]]] = {}
    for st in work:
        aliases: dict[str, R.Relation] = {}
        for node in st.source.find_all(exp.Table):
            rel = R.relation_of(node)
            if rel is not None and aliases.setdefault(node.alias_or_name, rel) != rel:
                aliases = {}  # one alias for two relations: no pushdown in this step
                break
        for sel in st.source.find_all(exp.Select):
            joins = sel.args.get("joins") or []
            if any(j.args.get("side") for j in joins):  # an outer join keeps rows that match nothing
                continue
            here = {t.alias_or_name for t in [getattr(sel.args.get("from_"), "this", None)] + [j.this for j in joins]
                    if isinstance(t, exp.Table)}
            where = sel.args.get("where")
            conds = conjuncts(where.this if where else None) + [c for j in joins for c in conjuncts(j.args.get("on"))]
            for c in conds:
                if not (isinstance(c, exp.EQ) and isinstance(c.this, exp.Column) and isinstance(c.expression, exp.Column)):
                    continue
                for b, d in ((c.this, c.expression), (c.expression, c.this)):
                    base, delta = aliases.get(b.table), aliases.get(d.table)
                    if (b.table in here and base is not None and base.kind == R.BASE and reads.get(base) == 1
                            and delta is not None and delta.kind == R.DELTA):
                        out.setdefault(base, []).append((b.name, int(delta.name), d.name))
    return out


def offloadable(step: Step) -> bool:
    """A step whose rows Spark computes: an insert from i-diffs and base tables alone."""
    if not isinstance(step, InsertRows):
        return False
    kinds = {rel.kind for rel in relations(step.source)}
    return R.DELTA in kinds and kinds <= {R.DELTA, R.BASE}


def computes_anything(program) -> bool:
    """Whether Spark would compute any of the program's diff sources."""
    return any(offloadable(st) for st in program.ordered())


def _key_filter(cur, equalities: list[tuple[str, int, str]]) -> str:
    """WHERE column = ANY(the batch's values) for each equality whose batch holds few enough
    distinct values (read from the transaction's own i-diff instance); '' if none qualifies."""
    parts = []
    for column, captured_id, delta_column in equalities:
        values = [v for (v,) in cur.execute(
            f"SELECT DISTINCT {ident(delta_column)} FROM {delta_table(captured_id)} WHERE {ident(delta_column)} IS NOT NULL "
            f"LIMIT {PUSHDOWN_LIMIT + 1}").fetchall()]
        if len(values) <= PUSHDOWN_LIMIT:
            parts.append(f"{ident(column)} = ANY({Literal(values).as_string(cur)})" if values else "FALSE")
    return f" WHERE {' AND '.join(parts)}" if parts else ""


def spark_plan(program) -> str:
    """What `--engine spark` computes on Spark, as explain prints it: each offloadable step's Spark
    SQL, or why Spark refuses it (then maintenance on Spark fails with that line)."""
    lines = []
    for i, st in enumerate(program.ordered(), 1):
        if not offloadable(st):
            continue
        try:
            lines.append(f"-- [{i}] {st.purpose}: computed on Spark\n{spark_sql(st.source)}")
        except UnsupportedQuery as e:
            lines.append(f"-- [{i}] {st.purpose}: refused: {e}")
    return "\n".join(lines) or "nothing: every step reads the view, a cache or a map, and runs in PostgreSQL"


def spark_script(settings: SparkSettings):
    """A script provider for maintain_view (engines/postgres/executor.py) that computes the
    offloadable steps' rows on Spark."""
    def script(conn: Connection, view_id: int, changed: dict[int, int], report: MaintenanceReport) -> list[Statement]:
        text = catalog.program_of(conn, view_id)
        if text is None:
            raise IdivmError(f"view {report.view} was registered before idivm stored Δ-programs; run "
                             f"`idivm refresh {report.view}` once to maintain it on Spark")
        program = from_json(text)
        steps = program.ordered()
        work = [st for st in steps if offloadable(st) and (st.driven_by is None or changed.get(st.driven_by))]
        replaced: dict[int, Step] = {}
        if work:
            started = time.perf_counter()
            replaced, copying = _compute(conn, view_id, work, settings)
            report.offloaded = len(work)
            report.breakdown["spark"] = time.perf_counter() - started  # reads, Spark's jobs, the copy back
            report.breakdown["spark copy"] = copying  # of which copying rows into PostgreSQL
        return [Statement(render_step(replaced.get(id(st), st)), st.driven_by, st.role) for st in steps]

    script.engine = ENGINE  # the report names it even when nothing changed
    return script


def _compute(conn: Connection, view_id: int, work: list[InsertRows], settings: SparkSettings) -> tuple[dict[int, Step], float]:
    """Each step's rows computed on Spark and staged in a temporary table of the transaction; the
    steps rewritten to insert from there; and the seconds spent copying."""
    inputs = {t.id: t for t in catalog.view_inputs(conn, view_id, reflect=True)}
    by_name = {(t.schema_name, t.table_name): t for t in inputs.values()}
    cur = conn.connection.driver_connection.cursor()
    snapshot = export(cur)
    spark = spark_session(settings)
    pushdowns = _pushdowns(work)
    for rel, names in needed_columns([st.source for st in work]).items():
        t = inputs[int(rel.name)] if rel.kind == R.DELTA else by_name.get((rel.schema, rel.name))
        if t is None:
            raise IdivmError(f"the Spark engine reads only the view's captured tables, not {rel.label()}")
        info = table_info(t.schema_name, t.table_name, t.columns)
        if rel.kind != R.DELTA:  # only at the batch's values where the steps join it to them
            read_table(spark, settings, cur, snapshot, view_name(rel), info, names, _key_filter(cur, pushdowns.get(rel, [])))
            continue
        # only the images of the columns the steps read, and the change kind
        images = [c for c in info.column_names if names is None or {R.pre(c), R.post(c)} & names]
        columns = [R.KIND_COLUMN] + [i(c) for c in images for i in (R.pre, R.post)]
        source = f"({fold_select(info, log_images(t.log_table, catalog.unconsumed('l', view_id)))}) AS t"
        check_types(display_name(t.schema_name, t.table_name), [(c, info.type_of(c)) for c in images])
        read(spark, settings, f"SELECT {', '.join(ident(c) for c in columns)} FROM {source}", snapshot, view_name(rel))
    out: dict[int, Step] = {}
    with tracking(spark, new_group(f"maintain-{view_id}")) as tracker:
        for k, st in enumerate(work):
            staged = f"idivm_staged_{k}"
            run(conn, f"CREATE TEMP TABLE {qualified('pg_temp', staged)} ON COMMIT DROP AS {pg_sql(st.source)} WITH NO DATA")
            copy_rows(cur, qualified("pg_temp", staged), spark.sql(spark_sql(st.source)).toLocalIterator(), tracker)
            out[id(st)] = replace(st, source=select([exp.Star()], [R.scratch(staged)]))
    return out, tracker.copy_seconds
