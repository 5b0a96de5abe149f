"""Initial materialization: the tables a registered view consists of, filled in registration's snapshot."""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from ...algebra.plan import BRANCH_COLUMN, ROW_KEY, scans
from ...frontend.driver import parse_one
from ...program.steps import MAP_UNIT
from ...rules.aggregate import group_select
from ...rules.aggregate_target import AggregateTarget
from ...strategies.higher_order.target import HigherOrderTarget
from ...strategies.refills import map_fill
from ...rules.spj import SpjTarget, full_query
from ...rules.union import UnionTarget
from ...sqltext import ident, qualified, run
from .render import sql

# Maintained tables are updated in place by every maintenance: SPJ views and caches when a non-key
# attribute changes, grouped views on every change of their groups' aggregates. Those columns are not
# indexed, so PostgreSQL can update them as heap-only tuples (no index insertions) if the page has room,
# which a table filled at 100% never has. 10% free space per page: a cache update of V' (389 rows) did
# 14 buffer accesses per row before.
WITH_STORAGE = "WITH (fillfactor = 90)"

# How a table is created and filled from its defining query: `fill(conn, table, query)`. PostgreSQL
# runs CREATE TABLE AS; the Spark engine computes the rows of a query over base tables on Spark
# (engines/spark/materialize.py) and creates the table as PostgreSQL types the same query.
Fill = Callable[[object, str, exp.Query], None]


def create_as(conn, table: str, query: exp.Query) -> None:
    """CREATE TABLE table AS query, in PostgreSQL."""
    run(conn, f"CREATE TABLE {table} {WITH_STORAGE} AS\n{sql(query)}")


def create_empty(conn, table: str, query: exp.Query) -> None:
    """The table as PostgreSQL types the query, without its rows (`explain --sql`'s dry run)."""
    run(conn, f"CREATE TABLE {table} AS {sql(query)} WITH NO DATA")


def drop_table(conn, schema: str, name: str) -> None:
    run(conn, f"DROP TABLE IF EXISTS {qualified(schema, name)}")


def differences(conn, schema: str, name: str, columns, query: exp.Query) -> tuple[list[tuple], list[tuple]]:
    """The rows the query has and the relation lacks, and those it has and the query lacks, as
    multisets over `columns` (`verify`)."""
    cols = ", ".join(ident(c) for c in columns)
    table = qualified(schema, name)
    missing = run(conn, f"SELECT {cols} FROM ({sql(query)}) AS q EXCEPT ALL SELECT {cols} FROM {table}").fetchall()
    extra = run(conn, f"SELECT {cols} FROM {table} EXCEPT ALL SELECT {cols} FROM ({sql(query)}) AS q").fetchall()
    return missing, extra


def create_spj_table(conn, target: SpjTarget, fill: Fill = create_as, group_lookups: bool = True) -> None:
    """The SPJ view (or intermediate cache), keyed by its hidden IDs, each scan's IDs indexed, and
    a cache's group keys where the aggregation rule looks groups up (`group_lookups`)."""
    plan, table = target.plan, table_of(target)
    fill(conn, table, full_query(target))
    run(conn, f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(ident(i.name) for i in plan.ids)})")
    declare_not_null(conn, table, plan.never_null_outputs())
    index_scan_ids(conn, table, plan)
    if group_lookups:
        index_group_keys(conn, table, plan)


def declare_not_null(conn, table: str, columns) -> None:
    """NOT NULL on output columns that cannot be NULL (one ALTER, one scan): a view over this one
    then knows it too (its group keys get plain equality, its table a primary key)."""
    if columns:
        run(conn, f"ALTER TABLE {table} " + ", ".join(f"ALTER COLUMN {ident(c)} SET NOT NULL" for c in sorted(columns)))


def index_scan_ids(conn, table: str, plan) -> None:
    """i-diffs find rows by one scan's IDs: index every scan's ID columns but the first (the key's prefix)."""
    for s in scans(plan)[1:]:
        cols = [i.name for i in plan.ids if i.scan == s.alias]
        run(conn, f"CREATE INDEX ON {table} ({', '.join(ident(c) for c in cols)})")


def index_group_keys(conn, table: str, plan) -> None:
    """A cache's group keys: the regroup statements look rows up by them."""
    stable = [n for n, _ in plan.outputs if n in plan.stable]
    if stable:
        run(conn, f"CREATE INDEX ON {table} ({', '.join(ident(c) for c in stable)})")


def create_union_table(conn, t: UnionTarget, fill: Fill = create_as, group_lookups: bool = True) -> None:
    """UNION ALL: one table, a partial unique index on each branch's IDs (which also serves lookups)
    and, as a cache, its group keys where the aggregation rule looks groups up."""
    table = table_of(t)
    fill(conn, table, t.query())
    for b in t.branches:
        ids = ", ".join(ident(i.name) for i in b.plan.ids)
        run(conn, f"CREATE UNIQUE INDEX ON {table} ({ids}) WHERE ({ident(BRANCH_COLUMN)} = {int(b.branch)})")
        index_scan_ids(conn, table, b.plan)
    if group_lookups:
        index_group_keys(conn, table, t.union.branches[0])  # every branch has the same output names


def create_tables(conn, target, fill: Fill = create_as) -> None:
    """Create, fill and ANALYZE whatever a target consists of (SPJ view, UNION ALL, grouped view + cache,
    the parts it reads first): without statistics the first maintenances' plans over a fresh cache or
    view can be far off. A view that reads parts is filled by PostgreSQL, whichever engine `fill` is:
    its query reads the parts' tables, which only this transaction sees yet."""
    parts = getattr(target, "parts", [])
    for part in parts:
        _create(conn, part, create_as)
        add_row_number(conn, table_of(part), "UNIQUE")  # its rows' identity for the operators above, beside its key
    _create(conn, target, create_as if parts else fill)
    key_for_readers(conn, table_of(target))
    for table in [t for p in parts for t in tables_of(p)] + tables_of(target):
        run(conn, f"ANALYZE {table}")


def key_for_readers(conn, table: str) -> None:
    """A view's table whose rows have no primary key of their own columns (a group key or an
    outer join's IDs that may be NULL, the branches of a UNION ALL, the one row of an aggregate
    without GROUP BY) gets one that never is NULL: a number each row takes when inserted. Views
    over this one identify its rows by it, as by any base table's primary key (capture and
    ID-based maintenance need one). A row keeps its number while it is updated; a group that
    disappears and comes back is a new row to the views over it."""
    if not run(conn, "SELECT EXISTS (SELECT 1 FROM pg_index WHERE indrelid = CAST(%s AS regclass) AND indisprimary)",
               (table,)).fetchone()[0]:
        add_row_number(conn, table, "PRIMARY KEY")


def add_row_number(conn, table: str, constraint: str) -> None:
    """The hidden row number (ROW_KEY) a row takes when inserted and keeps while updated, under
    `constraint` (PRIMARY KEY or UNIQUE)."""
    run(conn, f"ALTER TABLE {table} ADD COLUMN {ident(ROW_KEY)} bigint GENERATED ALWAYS AS IDENTITY {constraint}")


def table_of(target) -> str:
    """The maintained table of a target (view or cache), quoted."""
    return qualified(target.schema, target.name)


def tables_of(target) -> list[str]:
    if isinstance(target, HigherOrderTarget):
        return [qualified("idivm", fill[0]) for fill in target.map_fills()] + [table_of(target)]
    if isinstance(target, AggregateTarget):
        return ([] if target.agg.no_cache else tables_of(target.cache)) + [table_of(target)]
    return [table_of(target)]


def create_higher_order_tables(conn, t: HigherOrderTarget, fill: Fill = create_as) -> None:
    """Each map filled from its definition and keyed by its keys (a map without keys by the constant
    MAP_UNIT column, as the engine's AddToMap expects; keys that may be NULL by a unique index NULLS
    NOT DISTINCT), with an index for each other way the trigger programs look it up; then the view
    table, typed as PostgreSQL types the view's query, filled from the top-level maps."""
    for name, keys, nullable, query in t.map_fills():
        table = qualified("idivm", name)
        fill(conn, table, map_fill(keys, query))
        _unique(conn, table, keys or [MAP_UNIT], bool(nullable))
    for name, lookups in t.map_lookups().items():
        for cols in lookups:
            run(conn, f"CREATE INDEX ON {qualified('idivm', name)} ({', '.join(ident(c) for c in cols)})")
    view, layout = table_of(t), t.table
    definition = parse_one(t.definition).sql("postgres")
    run(conn, f"CREATE TABLE {view} {WITH_STORAGE} AS SELECT * FROM ({definition}) AS q WITH NO DATA")
    if layout.hidden:
        keys = dict((c, var) for c, var in layout.keys)
        counts = qualified("idivm", t.count_map_table())
        typed = [(c, typ or _column_type(conn, counts, keys[c])) for c, typ in layout.hidden]
        run(conn, f"ALTER TABLE {view} " + ", ".join(f"ADD COLUMN {ident(c)} {typ}" for c, typ in typed))
    run(conn, f"INSERT INTO {view} ({', '.join(ident(c) for c in layout.columns)})\n{sql(t.view_from_maps.fill())}")
    if layout.primary_key:
        _unique(conn, view, layout.primary_key, bool(layout.nullable))


def _column_type(conn, table: str, column: str) -> str:
    return run(conn, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
                     "AND attname = %s", (table, column)).fetchone()[0]


def _unique(conn, table: str, columns: list[str], nullable: bool) -> None:
    """A primary key, or where a column may be NULL a unique index that treats NULLs as equal."""
    cols = ", ".join(ident(c) for c in columns)
    if nullable:
        run(conn, f"CREATE UNIQUE INDEX ON {table} ({cols}) NULLS NOT DISTINCT")
    else:
        run(conn, f"ALTER TABLE {table} ADD PRIMARY KEY ({cols})")


def _create(conn, target, fill: Fill, group_lookups: bool = True) -> None:
    """`group_lookups`: whether a cache's rows are looked up by group (the general rule re-reads
    the affected groups; the specialized SUM/COUNT/AVG rules never do, and an index on the group
    keys would only cost every cache write)."""
    if isinstance(target, HigherOrderTarget):
        create_higher_order_tables(conn, target, fill)
    elif isinstance(target, AggregateTarget):
        if not target.agg.no_cache:
            _create(conn, target.cache, fill, group_lookups=target.sum_args is None)
        table = table_of(target)
        fill(conn, table, group_select(target, restrict=False))
        if target.agg.keys:
            cols = ", ".join(ident(c) for c in target.agg.id_names)
            declare_not_null(conn, table, target.agg.never_null_outputs())
            if set(target.agg.keys) <= target.agg.never_null_keys():
                # a primary key: other views may then read this one (capture needs a key)
                run(conn, f"ALTER TABLE {table} ADD PRIMARY KEY ({cols})")
            else:
                run(conn, f"CREATE UNIQUE INDEX ON {table} ({cols}) NULLS NOT DISTINCT")
    elif isinstance(target, UnionTarget):
        create_union_table(conn, target, fill, group_lookups)
    else:
        create_spj_table(conn, target, fill, group_lookups)
