"""Registering, dropping and rebuilding maintained views, and switching their mode: the work behind
the API's register_view, drop_view, refresh and set_mode, done inside a transaction the caller
opened (with writers blocked where a snapshot must not miss a change)."""
from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.columns_read import columns_read
from ..algebra.plan import BRANCH_COLUMN, Aggregate, Union, base_tables, format_plan
from ..capture import drop_capture, ensure_capture
from ..capture.triggers import reinstall_functions, sync_logging
from ..catalog import repository as catalog
from ..engines.postgres import immediate
from ..engines.postgres.view_relation import create_view_relation, drop_view_relation
from ..engines.postgres.materialize import Fill, create_as, create_tables, drop_table
from ..engines.postgres.server_maintenance import drop_view_function, install_view_function
from ..errors import IdivmError, UnknownObject
from ..compiler import Compilation
from ..frontend.driver import parse_one
from ..introspect.provider import PostgresSchema
from ..introspect.reflect import own_equality_columns, still_as_reflected
from ..introspect.session import relation_exists, schema_exists
from ..names import display_name, own_table, storage_table
from ..program.serialize import targets, to_json
from ..program.steps import written_tables
from ..sqltext import qualified
from ..strategies.higher_order.target import HigherOrderTarget
from ..strategies.targets import diff_schemas_of
from .compile_in import compile_in
from .dependencies import dependency_order, edges
from .policy import notify_threshold

MODES = ("deferred", "immediate")


def register_locked(conn: Connection, schema: str, view: str, sql: str, strategy: str, minimized: bool,
                    fill: Fill = create_as, compiled: Compilation | None = None) -> None:
    """Store the view's compiled program bound to its ids, install capture on its base tables and
    create and fill its tables, in the caller's transaction (whose snapshot must be taken after
    writers to the base tables are blocked, so the fill and the first logged change meet). `fill`
    creates each table from its query (engines/postgres/materialize.py: PostgreSQL's own CREATE
    TABLE AS, or the Spark engine's). `compiled`: the view as compiled before the tables were held,
    used if they are still as it read them (else compiled again)."""
    if compiled is None or not still_as_reflected(conn, compiled.view.tables.values()):
        compiled = compile_in(conn, sql, strategy, minimized)
    shown = f"{schema}.{view}"
    if catalog.view_by_name(conn, schema, view):  # its relation may be gone with a DROP SCHEMA (then it is stale)
        raise IdivmError(f'cannot register "{shown}": a maintained view with that name already exists; register '
                         "it with --replace to rebuild it from this query (replace=True in Python), or with "
                         "--if-not-exists to keep it as it is (if_not_exists=True)")
    if relation_exists(conn, qualified(schema, view)):
        raise IdivmError(f'cannot register "{shown}": a table or view with that name already exists; choose another '
                         "name, or drop or rename it first")
    if not schema_exists(conn, schema):
        raise UnknownObject(f'schema "{schema}" does not exist')
    plan = compiled.plan
    infos = {(t.schema, t.name): t for t in base_tables(plan)}  # each table once, in the plan's order
    captured = {key: ensure_capture(conn, info, notify_threshold) for key, info in infos.items()}
    view_id = catalog.insert_view(conn, schema, view, sql, compiled.strategy, [n for n, _ in plan.outputs], [],
                                  format_plan(plan))
    target, program = compiled.bound(view_id, captured)
    catalog.set_ids(conn, view_id, _ids(plan, target))
    catalog.set_program(conn, view_id, to_json(program))
    read = columns_read(plan)
    for key, cid in sorted(captured.items(), key=lambda kv: kv[1]):
        catalog.insert_input(conn, view_id, cid, infos[key].reading(read[key]).columns)  # a schema change of these makes the view stale
    reinstall_functions(conn, notify_threshold, sorted(captured.values()))  # notify thresholds now count this view
    sync_logging(conn)  # this (deferred) view reads them: tables read by immediate views alone log again
    catalog.insert_diff_schemas(conn, view_id, [
        (ds.scan, captured[(ds.table.schema, ds.table.name)], ds.kind, ds.attrs, ds.conditional, ds.label())
        for ds in ([] if isinstance(target, HigherOrderTarget) else diff_schemas_of(plan))
        if (ds.table.schema, ds.table.name) in captured])  # a part's table is the view's own, not captured
    install_view_function(conn, view_id, program)  # CALL idivm.maintain_call(...), idivm.maintain(...) run it
    catalog.insert_derivations(conn, view_id, program.derivations)
    began = time.perf_counter()
    create_tables(conn, target, fill)
    catalog.set_recompute_ms(conn, view_id, (time.perf_counter() - began) * 1000)
    create_view_relation(conn, schema, view, storage_table(view_id), [n for n, _ in plan.outputs],
                  f"maintained by idivm ({compiled.strategy}): {sql}")


def _ids(plan, target) -> list[list[str]]:
    """The view table's identifying columns, for the catalog."""
    if isinstance(target, HigherOrderTarget):
        return target.catalog_ids()
    if isinstance(plan, Aggregate):
        return [["group", k, h] for k, h in zip(plan.keys, plan.id_names)]
    if isinstance(plan, Union):
        return [[i.scan, i.column, i.name] for b in plan.branches for i in b.ids] + [["union", "b", BRANCH_COLUMN]]
    return [[i.scan, i.column, i.name] for i in plan.ids]


def compile_program(conn: Connection, row: sa.Row, minimized: bool = True):
    """The view's Δ-program compiled afresh from its stored definition, bound to its ids."""
    compiled = compile_in(conn, row.definition, row.strategy, minimized)
    return compiled.bound(row.id, catalog.captured_ids_by_table(conn, row.id))[1]


def make_immediate_locked(conn: Connection, schema: str, view: str) -> None:
    row = catalog.view_by_name(conn, schema, view)
    vid = row.id
    partitioned = catalog.partitioned_inputs(conn, vid)
    if partitioned:
        raise IdivmError(f"immediate mode is not supported over partitioned tables ({partitioned}): writes "
                         "straight to a partition would bypass it; maintain the view deferred")
    _refuse_outside_catalog(conn, display_name(schema, view), row.definition, vid)
    catalog.set_immediate(conn, vid)
    sync_immediate(conn)


def _refuse_outside_catalog(conn: Connection, shown: str, definition: str, view_id: int) -> None:
    """Immediate mode runs the Δ-script in writers' transactions, in functions whose search path is
    pg_catalog alone (SECURITY DEFINER: objects on an application's search path must not redirect
    them). A function or operator of the view's query that is not built in would not be found
    there (every write failed: "function dbl(integer) does not exist"), and a column whose type
    brings its own = (citext) would be compared by another operator (citext as text, so a group
    "a" missed its row "A"). Such views stay deferred, where maintenance runs on the maintainer's
    search path as the query did; this refuses them by name."""
    why = "is not built in, and immediate maintenance runs with only pg_catalog on its search path"
    calls = PostgresSchema(conn).calls_outside_catalog(parse_one(definition))
    if calls:
        raise IdivmError(f"immediate mode cannot maintain {shown}: its query calls {calls[0]}, which {why}; "
                         "maintain the view deferred")
    for t in catalog.view_inputs(conn, view_id):
        own = own_equality_columns(conn, t.schema_name, t.table_name, list(t.read_columns))
        if own:
            column, type_ = own[0]
            raise IdivmError(f"immediate mode cannot maintain {shown}: column {column} of "
                             f"{display_name(t.schema_name, t.table_name)} has type {type_}, whose = operator {why}; "
                             "maintain the view deferred")


def drop_locked(conn: Connection, row: sa.Row, keep_capture: bool = False) -> None:
    """Drop a view's tables and catalog rows, and the capture no other view needs (keep_capture: a
    rebuild re-registers the view at once; `drop_unread_capture` then removes what it no longer
    reads. Dropping a trigger locks its table against readers, Spark's fill among them)."""
    inputs = catalog.input_ids(conn, row.id)
    drop_view_relation(conn, row.schema_name, row.view_name)
    drop_table(conn, *storage_table(row.id))
    drop_table(conn, *own_table(row.id, "cache"))
    program = catalog.program_of(conn, row.id)
    for schema, name in written_tables(targets(program)) if program is not None else ():
        drop_table(conn, schema, name)  # its maps
    drop_view_function(conn, row.id)
    catalog.delete_view(conn, row.id)
    if row.mode == "immediate":
        sync_immediate(conn)
    own = catalog.captured_id(conn, *storage_table(row.id))  # its table, read by views dropped before it
    if own is not None and not catalog.is_read(conn, own):
        drop_capture(conn, own)  # the table is gone: nothing is locked
    if not keep_capture:
        drop_unread_capture(conn, inputs)
        sync_logging(conn)  # tables now read by immediate views alone stop logging


def drop_unread_capture(conn: Connection, captured_ids) -> None:
    """Remove the capture of those tables no view reads any more; re-install the others' functions
    (their notify thresholds follow the views that still read them)."""
    kept = []
    existing = catalog.captured_ids(conn)
    for cid in captured_ids:
        if cid not in existing:
            continue  # the capture of a view table, dropped with it (drop_locked)
        if catalog.is_read(conn, cid):
            kept.append(cid)
        else:
            drop_capture(conn, cid)
    reinstall_functions(conn, notify_threshold, kept)


def sync_immediate(conn: Connection) -> None:
    """immediate.sync with the views in the order its apply function needs: readers first."""
    views = catalog.view_ids(conn)
    immediate.sync(conn, list(reversed(dependency_order(views, edges(conn)))))
    sync_logging(conn)


def readers_closure(view_id: int, reads: dict[int, set[int]]) -> set[int]:
    """Every view that reads view_id, directly or through other views."""
    found: set[int] = set()
    frontier = {view_id}
    while frontier:
        frontier = {v for v, inputs in reads.items() if inputs & frontier} - found
        found |= frontier
    return found
