"""Quoting helpers: the only way identifiers reach SQL text.

Nothing user-supplied is pasted into SQL: identifiers go through
``ident``/``qualified`` (sqlglot's PostgreSQL quoting), values are bound
parameters.
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from sqlglot import exp

DIALECT = "postgres"


@lru_cache(maxsize=4096)
def ident(name: str) -> str:
    """One quoted identifier (cached: maintenance quotes every column of every input on each run)."""
    return exp.to_identifier(name, quoted=True).sql(DIALECT)


def qualified(schema: str | None, name: str) -> str:
    """A quoted, optionally schema-qualified name."""
    return f"{ident(schema)}.{ident(name)}" if schema else ident(name)


def table_expr(schema: str | None, name: str, alias: str | None = None) -> exp.Table:
    """A sqlglot table node with quoted parts."""
    return exp.Table(
        this=exp.to_identifier(name, quoted=True),
        db=exp.to_identifier(schema, quoted=True) if schema else None,
        alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)) if alias else None,
    )


def col(table: str | None, name: str) -> exp.Column:
    """A quoted column reference."""
    return exp.Column(
        this=exp.to_identifier(name, quoted=True),
        table=exp.to_identifier(table, quoted=True) if table else None,
    )


def run(conn, sql: str, params: tuple | None = None):
    """Execute generated SQL on the DBAPI (psycopg) cursor of a SQLAlchemy connection.

    Without parameters psycopg does not scan the text for placeholders, so a
    quoted identifier containing '%' or ':' is passed through intact.
    """
    cur = conn.connection.driver_connection.cursor()
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    return cur


def run_batch(conn, statements: list[str]) -> list[tuple[str, int]]:
    """Execute several generated statements in one round trip (the simple query protocol: no
    parameters) and return each one's command tag and row count (-1 where there is none), in order.
    They run in the caller's transaction; the first that fails raises and ends the batch."""
    cur = run(conn, ";\n".join(statements))
    out = [(cur.statusmessage or "", cur.rowcount)]
    while cur.nextset():
        out.append((cur.statusmessage or "", cur.rowcount))
    return out


def string_literal(text: str) -> str:
    """A SQL string literal (standard_conforming_strings, the default since PostgreSQL 9.1)."""
    return "'" + text.replace("'", "''") + "'"


class ColumnType(NamedTuple):
    """A result column's type OID and, for numeric, the scale its type declares (None where it
    declares none: an unconstrained numeric, or an expression's result, whose values may each
    have their own scale)."""

    oid: int
    scale: int | None = None


NUMERIC_OID = 1700


def _declared_scale(typmod: int) -> int | None:
    """The scale every value of a numeric(p, s) has: s, or 0 for PostgreSQL 15's negative scales
    (which round to tens, hundreds, ... and store no fractional digits); None without a typmod.
    The typmod packs (p << 16 | s) + 4, s as an 11-bit signed field (numeric.c)."""
    if typmod < 4:
        return None
    s = (((typmod - 4) & 0x7FF) ^ 1024) - 1024
    return max(s, 0)


def column_types(conn, sql: str) -> list[ColumnType]:
    """Types of a query's result columns, from PostgreSQL's own description (no rows read)."""
    cur = run(conn, f"SELECT * FROM ({sql}) AS {ident('q')} LIMIT 0")
    res = cur.pgresult
    return [ColumnType(d.type_code, _declared_scale(res.fmod(i)) if d.type_code == NUMERIC_OID else None)
            for i, d in enumerate(cur.description)]
