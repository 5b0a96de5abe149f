"""The compiler (compiler.py) run against a database: its connection answers the schema provider's
questions (introspect/provider.py) and types the queries the strategies ask about (which sums are
exact). Nothing is written; registration, rebuilds and `explain --sql` compile through here."""
from __future__ import annotations

from sqlalchemy.engine import Connection

from ..compiler import Compilation, compile_view
from ..engines.postgres.render import sql as pg_sql
from ..introspect.provider import PostgresSchema
from ..sqltext import column_types


def compile_in(conn: Connection, sql: str, strategy: str, minimized: bool = True) -> Compilation:
    return compile_view(sql, PostgresSchema(conn), strategy, column_types=lambda q: column_types(conn, pg_sql(q)),
                        minimized=minimized)
