"""Initial materialization and `refresh` on Spark (`register-view --engine spark`, docs/spark.md).

Registration's transaction (operate/registry.py) creates every table a view consists of from its
defining query, in the snapshot taken after writers were blocked. This engine's fill computes the
rows of each query over base tables alone (the view's join, a grouped view's cache, a higher-order
view's maps) on Spark, reading the base tables inside that transaction's exported snapshot, and
copies them into the table, which PostgreSQL created empty from the same query (so its column
types are exactly the ones PostgreSQL would have given it). Queries over tables the registration
just created (a grouped view over its cache, a view filled from its maps, a view over a view that
the same refresh rebuilt) read data no other session can see yet: PostgreSQL runs them, in the
same transaction.
Whatever fails (a Spark job, the copy, a later index) rolls the whole registration back.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlglot import exp

from ...introspect.reflect import reflect_table
from ...program import relations as R
from ...sqltext import qualified, run
from ..postgres.materialize import WITH_STORAGE, create_as
from ..postgres.render import sql as pg_sql
from .needs import needed_columns
from .progress import ProgressCallback, new_group, tracking
from .reads import export, read_table
from . import numeric_division
from .session import run_session
from .settings import SparkSettings
from .collations import text_rules_of
from .spark_sql import spark_sql, view_name
from .staging import copy_result


def _committed(conn, rels: list[R.Relation]) -> bool:
    """Whether other sessions (Spark's) see these very tables: a view over a view rebuilt in the same
    transaction (refresh of a chain) reads a table that exists only in this transaction, while
    other sessions still see the one it replaces (and would wait for this transaction's lock on it)."""
    check = "SELECT CAST(to_regclass(:t) AS oid)"
    names = [qualified(r.schema, r.name) for r in rels]
    here = [conn.execute(sa.text(check), {"t": t}).scalar() for t in names]
    with conn.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as other:
        return here == [other.execute(sa.text(check), {"t": t}).scalar() for t in names]


@dataclass
class SparkFill:
    """A `fill` (engines/postgres/materialize.py) that computes queries over base tables on Spark.
    `computed` lists what it did: (table, rows, seconds)."""

    settings: SparkSettings
    progress: ProgressCallback | None = None
    computed: list[tuple[str, int, float]] = field(default_factory=list)

    def __call__(self, conn, table: str, query: exp.Query) -> None:
        rels = R.relations(query)
        if not rels or any(r.kind != R.BASE for r in rels) or not _committed(conn, rels):
            create_as(conn, table, query)  # reads what this transaction just created
            return
        needed = needed_columns([query])
        infos = {rel: reflect_table(conn, rel.schema, rel.name) for rel in needed}

        def column_type(rel: R.Relation, column: str) -> str | None:
            info = infos.get(rel)
            return info.type_of(column) if info is not None and column in info.column_names else None

        read = [(info.schema, info.name, c) for rel, info in infos.items() for c in (needed[rel] or info.column_names)]
        text = spark_sql(query, column_type, text_rules_of(conn, read))  # refuses by name what Spark would not compute exactly
        started = time.perf_counter()
        run(conn, f"CREATE TABLE {table} {WITH_STORAGE} AS\n{pg_sql(query)}\nWITH NO DATA")
        cur = conn.connection.driver_connection.cursor()
        snapshot = export(cur)
        spark = run_session(self.settings)  # its own temp views (session.py)
        for rel, names in needed.items():
            read_table(spark, self.settings, cur, snapshot, view_name(rel), infos[rel], names)
        with tracking(spark, new_group("fill"), self.progress) as tracker:
            numeric_division.register_if_used(spark, text)
            # copied by the driver (COPY's bulk insert into the new table): rows the executors wrote
            # would be copied once more, by INSERT ... SELECT, which logs every row (staging.py)
            rows = copy_result(cur, [table], spark.sql(text), tracker=tracker)[0]
        self.computed.append((table, rows, time.perf_counter() - started))
