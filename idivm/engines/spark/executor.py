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
consumes the same window. Task retries cannot stage a row twice: nothing is written until the
driver has the job's result.
"""
from __future__ import annotations

from dataclasses import replace

from sqlalchemy.engine import Connection
from sqlglot import exp

from ...capture.fold import fold_select, log_images
from ...catalog import repository as catalog
from ...errors import IdivmError
from ...introspect.reflect import table_info
from ...names import display_name
from ...program import relations as R
from ...program.serialize import from_json
from ...program.steps import InsertRows, Step
from ...program.trees import select
from ...sqltext import ident, qualified, run
from ..postgres.executor import MaintenanceReport, Statement
from ..postgres.render import render_step, sql as pg_sql
from .reads import check_types, export, read
from .session import spark_session
from .settings import SparkSettings
from .spark_sql import spark_sql, view_name

ENGINE = "spark"


def _relations(tree: exp.Expression) -> list[R.Relation]:
    out = []
    for node in tree.find_all(exp.Table):
        rel = R.relation_of(node)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


def _needed(work: list[InsertRows]) -> dict[R.Relation, set[str] | None]:
    """Per relation the steps read, the columns they name (None: all of them, where a column is
    not qualified by a relation's alias or a star reads every column)."""
    out: dict[R.Relation, set[str] | None] = {}
    for st in work:
        aliases: dict[str, R.Relation] = {}
        for node in st.source.find_all(exp.Table):
            rel = R.relation_of(node)
            if rel is not None:
                aliases[node.alias_or_name] = rel
                out.setdefault(rel, set())
        everything = any(isinstance(s, exp.Star) and not isinstance(s.parent, exp.Count)
                         for s in st.source.find_all(exp.Star))
        for c in st.source.find_all(exp.Column):
            rel = aliases.get(c.table)
            if rel is None or everything:
                everything = everything or not c.table
                continue
            if out[rel] is not None:
                out[rel].add(c.name)
        if everything:
            for rel in aliases.values():
                out[rel] = None
    return out


def offloadable(step: Step) -> bool:
    """A step whose rows Spark computes: an insert from i-diffs and base tables alone."""
    if not isinstance(step, InsertRows):
        return False
    kinds = {rel.kind for rel in _relations(step.source)}
    return R.DELTA in kinds and kinds <= {R.DELTA, R.BASE}


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
            replaced = _compute(conn, view_id, work, settings)
            report.offloaded = len(work)
        return [Statement(render_step(replaced.get(id(st), st)), st.driven_by, st.role) for st in steps]

    script.engine = ENGINE  # the report names it even when nothing changed
    return script


def _compute(conn: Connection, view_id: int, work: list[InsertRows], settings: SparkSettings) -> dict[int, Step]:
    """Each step's rows computed on Spark and staged in a temporary table of the transaction; the
    steps rewritten to insert from there."""
    inputs = {t.id: t for t in catalog.view_inputs(conn, view_id, reflect=True)}
    by_name = {(t.schema_name, t.table_name): t for t in inputs.values()}
    cur = conn.connection.driver_connection.cursor()
    snapshot = export(cur)
    spark = spark_session(settings)
    for rel, names in _needed(work).items():
        t = inputs[int(rel.name)] if rel.kind == R.DELTA else by_name.get((rel.schema, rel.name))
        if t is None:
            raise IdivmError(f"the Spark engine reads only the view's captured tables, not {rel.label()}")
        info = table_info(t.schema_name, t.table_name, t.columns)
        if rel.kind == R.DELTA:  # only the images of the columns the steps read, and the change kind
            images = [c for c in info.column_names if names is None or {R.pre(c), R.post(c)} & names]
            columns = [R.KIND_COLUMN] + [i(c) for c in images for i in (R.pre, R.post)]
            source = f"({fold_select(info, log_images(t.log_table, catalog.unconsumed('l', view_id)))}) AS t"
        else:  # the columns the steps read (a row's presence alone still counts: NULL stands for none)
            images = columns = [c for c in info.column_names if names is None or c in names]
            source = info.qualified
        check_types(display_name(t.schema_name, t.table_name), [(c, info.type_of(c)) for c in images])
        read(spark, settings, f"SELECT {', '.join(ident(c) for c in columns) or 'NULL'} FROM {source}", snapshot,
             view_name(rel))
    out: dict[int, Step] = {}
    for k, st in enumerate(work):
        staged = f"idivm_staged_{k}"
        run(conn, f"CREATE TEMP TABLE {qualified('pg_temp', staged)} ON COMMIT DROP AS {pg_sql(st.source)} WITH NO DATA")
        rows = spark.sql(spark_sql(st.source)).toLocalIterator()
        with cur.copy(f"COPY {qualified('pg_temp', staged)} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(tuple(row))
        out[id(st)] = replace(st, source=select([exp.Star()], [R.scratch(staged)]))
    return out
