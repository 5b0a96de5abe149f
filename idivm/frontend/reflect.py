"""Reflection of base tables: the database already knows keys and column types."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..errors import UnknownObject, UnsupportedQuery
from ..algebra.tables import TableInfo


def resolve_table(conn: Connection, schema: str | None, name: str) -> tuple[str, str, str]:
    """(schema, name, relkind) of a table reference, resolved like PostgreSQL does (search_path)."""
    row = conn.execute(
        sa.text(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.oid = to_regclass(CASE WHEN CAST(:schema AS text) IS NULL THEN quote_ident(:name) "
            "ELSE quote_ident(:schema) || '.' || quote_ident(:name) END)"
        ),
        {"schema": schema, "name": name},
    ).first()
    shown = f"{schema}.{name}" if schema else name
    if row is None:
        raise UnknownObject(f'table "{shown}" does not exist')
    return row[0], row[1], row[2]


def reflect_table(conn: Connection, schema: str | None, name: str) -> TableInfo:
    """Reflect one base table; refuse what idivm cannot capture changes of."""
    schema, name, relkind = resolve_table(conn, schema, name)
    if relkind not in ("r", "p"):
        kinds = {"v": "a view", "m": "a materialized view", "f": "a foreign table", "S": "a sequence"}
        raise UnsupportedQuery(
            f'"{schema}.{name}" is {kinds.get(relkind, "not an ordinary table")}; '
            "idivm maintains views over ordinary tables only"
        )
    # one round trip: every column with its type and its position in the primary key (maintenance
    # reflects its base tables on every run, so this is on the hot path)
    rows = conn.execute(
        sa.text(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), k.ord FROM pg_attribute a "
            "LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary "
            "LEFT JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON k.attnum = a.attnum "
            "WHERE a.attrelid = to_regclass(quote_ident(:s) || '.' || quote_ident(:n)) "
            "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
        ),
        {"s": schema, "n": name},
    ).all()
    key = tuple(r[0] for r in sorted((r for r in rows if r[2] is not None), key=lambda r: r[2]))
    if not key:
        raise UnsupportedQuery(
            f'table "{schema}.{name}" has no primary key; ID-based maintenance identifies rows by their '
            "key, so every base table needs a PRIMARY KEY"
        )
    return TableInfo(schema=schema, name=name, columns=tuple((r[0], r[1]) for r in rows), key=key)
