"""The PostgreSQL schema provider (frontend/schema.py): the frontend's questions answered from
PostgreSQL's catalog, inside the registering transaction (probes run in savepoints that are
rolled back, so nothing is left behind)."""
from __future__ import annotations

import json
import re

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlglot import exp

from ..algebra.tables import TableInfo
from ..errors import UnknownObject, UnsupportedQuery
from ..names import ONE_TABLE, SERIES_TABLE, STORAGE_SCHEMA
from ..sqltext import run
from .reflect import reflect_table

_CALLS = re.compile(r":(funcid|opfuncid|opno|aggfnoid) (\d+)")
PROBE = "pg_temp.idivm_volatility_probe"


def probe(conn: Connection, statements: str) -> str | None:
    """Run `statements` inside a savepoint that is then rolled back and released whatever happened;
    the first column of the last statement's first row (None if it returns no row), or its
    psycopg.Error. The transaction is left as it was, at its top level (SQLAlchemy's nested
    transaction, rolled back, stays open as a subtransaction, and a transaction inside one cannot
    export its snapshot for Spark). The savepoint is its own round trip: PostgreSQL parses a string
    of statements whole, so a syntax error in them would also have undone a savepoint sent with them,
    leaving the transaction aborted."""
    run(conn, "SAVEPOINT idivm_probe")
    try:
        cur = run(conn, statements)
        while cur.nextset():
            pass
        row = cur.fetchone() if cur.description else None
        return None if row is None else row[0]
    finally:
        run(conn, "ROLLBACK TO SAVEPOINT idivm_probe; RELEASE SAVEPOINT idivm_probe")


class PostgresSchema:
    """One compilation's provider: each table is reflected once and each type asked about once (the
    frontend asks for a table at every reference, alias and subquery; three round trips each)."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._tables: dict[tuple[str | None, str, bool], TableInfo] = {}
        self._equality: dict[str, bool] = {}

    def table(self, schema: str | None, name: str, only: bool = False) -> TableInfo:
        key = (schema, name, only)
        if key not in self._tables:
            try:
                self._tables[key] = reflect_table(self.conn, schema, name, only=only)
            except UnknownObject:
                if (schema, name) == (STORAGE_SCHEMA, ONE_TABLE):  # frontend/one_row.py
                    raise UnknownObject(f"a SELECT without FROM reads {STORAGE_SCHEMA}.{ONE_TABLE}, the one-row table "
                                        "`idivm init` creates: run it first") from None
                if (schema, name) == (STORAGE_SCHEMA, SERIES_TABLE):  # frontend/table_functions.py
                    raise UnknownObject(f"generate_series in FROM reads {STORAGE_SCHEMA}.{SERIES_TABLE}, the table of "
                                        "integers `idivm init` creates: run it first") from None
                raise
        return self._tables[key]

    def non_immutable_calls(self, tree: exp.Expression) -> list[tuple[str, str]]:
        """PostgreSQL resolves the overloads: the query becomes a temporary view inside a savepoint
        that is rolled back, and the functions, operators and aggregates its stored query tree calls
        (pg_rewrite.ev_action) are looked up in pg_proc."""
        functions, operators = self._calls(tree)
        if not functions and not operators:
            return []
        return [(r.fn, r.v) for r in self.conn.execute(sa.text(
            "SELECT DISTINCT CAST(CAST(p.oid AS regprocedure) AS text) AS fn, p.provolatile AS v FROM pg_proc p "
            "WHERE p.provolatile <> 'i' AND (p.oid = ANY(:f) OR p.oid IN "
            "(SELECT o.oprcode FROM pg_operator o WHERE o.oid = ANY(:o))) ORDER BY 1"
        ), {"f": sorted(functions), "o": sorted(operators)}).all()]

    def calls_outside_catalog(self, tree: exp.Expression) -> list[str]:
        """The functions, aggregates and operators the query calls (as PostgreSQL resolves them) that
        are not built in (not in pg_catalog), named as their regprocedure / regoperator prints them."""
        functions, operators = self._calls(tree)
        if not functions and not operators:
            return []
        return [r[0] for r in self.conn.execute(sa.text(
            "SELECT CAST(CAST(p.oid AS regprocedure) AS text) FROM pg_proc p WHERE p.oid = ANY(:f) "
            "AND p.pronamespace <> CAST('pg_catalog' AS regnamespace) UNION "
            "SELECT CAST(CAST(o.oid AS regoperator) AS text) FROM pg_operator o WHERE o.oid = ANY(:o) "
            "AND o.oprnamespace <> CAST('pg_catalog' AS regnamespace) ORDER BY 1"
        ), {"f": sorted(functions), "o": sorted(operators)}).all()]

    def _calls(self, tree: exp.Expression) -> tuple[set[int], set[int]]:
        """The OIDs of the functions (and aggregates) and of the operators of the query's stored tree."""
        action = self._probe_query(f"CREATE TEMP VIEW {PROBE} AS SELECT 1 AS x FROM ({tree.sql('postgres')}) AS q; "
                                   # planned too: the planner refuses what parsing accepts (a FULL JOIN on a
                                   # condition that is neither hash- nor merge-joinable), and a view must
                                   # equal a query PostgreSQL can run
                                   f"EXPLAIN SELECT * FROM {PROBE}; "
                                   f"SELECT CAST(ev_action AS text) FROM pg_rewrite WHERE ev_class = '{PROBE}'::regclass")
        calls = _CALLS.findall(action or "")
        return ({int(n) for kind, n in calls if kind != "opno"}, {int(n) for kind, n in calls if kind == "opno"})

    def output_types(self, tree: exp.Expression) -> list[tuple[str, str]]:
        """PostgreSQL types the query as a temporary view (in a savepoint rolled back): its columns'
        names and types, as format_type prints them."""
        columns = self._probe_query(f"CREATE TEMP VIEW {PROBE} AS {tree.sql('postgres')}; "
                                    "SELECT CAST(json_agg(json_build_array(attname, format_type(atttypid, atttypmod)) "
                                    f"ORDER BY attnum) AS text) FROM pg_attribute WHERE attrelid = '{PROBE}'::regclass "
                                    "AND attnum > 0")
        return [(n, t) for n, t in json.loads(columns)]

    def _probe_query(self, statements: str) -> str | None:
        """probe() of statements over the view's query: PostgreSQL's rejection is the view's refusal."""
        try:
            return probe(self.conn, statements)
        except psycopg.Error as e:
            first = str(e).splitlines()[0]
            raise UnsupportedQuery(f"PostgreSQL rejected the view's query: {first}") from None

    def has_equality(self, type_name: str) -> bool:
        """What maintenance needs of a type: = (IS DISTINCT FROM) and grouping."""
        if type_name not in self._equality:
            self._equality[type_name] = self._probe_equality(type_name)
        return self._equality[type_name]

    def _probe_equality(self, type_name: str) -> bool:
        try:
            probe(self.conn, f"SELECT x FROM (SELECT CAST(NULL AS {type_name}) AS x) AS s "
                             "WHERE x IS NOT DISTINCT FROM x GROUP BY x")
            return True
        except psycopg.Error:
            return False
