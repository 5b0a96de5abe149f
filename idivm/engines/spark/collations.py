"""What the collations of a view's text columns let Spark compute (spark_sql.TextRules).

Spark compares text byte by byte and orders it by code point; PostgreSQL compares and orders each
column by its collation, its own or the database's default. Equality agrees wherever the collation
is deterministic (PostgreSQL then compares bytes too); order only under C, POSIX and C.UTF-8; case
mapping is spark_sql's (_case_mapped).
"""
from __future__ import annotations

import re

from ...sqltext import run
from .spark_sql import CASE_ASCII, CASE_C, TextRules

# Per column: whether its collation is C (or POSIX, or the database's default where that is C under
# libc), whether it is C or the default, whether it orders by code point, whether it is
# deterministic; and the database's locale for case mapping (its ICU locale under ICU, read from the
# row by name: pg_database's column is daticulocale in PostgreSQL 15 and 16, datlocale since 17).
# A column of a type without collation counts as C.
_C = "('C', 'POSIX')"
_CODE_POINT = "('C', 'POSIX', 'C.UTF-8', 'C.utf8')"
COLLATIONS = (
    "SELECT bool_and(a.attcollation = 0 OR c.collname IN " + _C + " OR (c.collname = 'default' "
    "AND d.datlocprovider = 'c' AND d.datctype IN " + _C + ")), "
    "bool_and(a.attcollation = 0 OR c.collname IN ('default', 'C', 'POSIX')), "
    "min(CASE WHEN d.datlocprovider = 'i' THEN coalesce(to_jsonb(d) ->> 'daticulocale', to_jsonb(d) ->> 'datlocale') "
    "ELSE d.datctype END), "
    "bool_and(a.attcollation = 0 OR c.collname IN " + _C + " OR (c.collname = 'default' AND d.datlocprovider = 'c' "
    "AND d.datcollate IN " + _CODE_POINT + ") OR (c.collprovider = 'c' AND c.collcollate IN " + _CODE_POINT + ")), "
    "bool_and(coalesce(c.collisdeterministic, true)) "
    "FROM pg_database AS d CROSS JOIN unnest(%(s)s::text[], %(n)s::text[], %(c)s::text[]) AS t(s, n, c) "
    "JOIN pg_attribute AS a ON a.attrelid = to_regclass(quote_ident(t.s) || '.' || quote_ident(t.n)) "
    "AND a.attname = t.c LEFT JOIN pg_collation AS c ON c.oid = a.attcollation "
    "WHERE d.datname = current_database() AND a.attnum > 0 AND NOT a.attisdropped")


def text_rules_of(conn, columns: list[tuple[str, str, str]]) -> TextRules:
    """TextRules for the (schema, table, column) columns a view reads (conn: a SQLAlchemy connection)."""
    row = run(conn, COLLATIONS, {"s": [c[0] for c in columns], "n": [c[1] for c in columns],
                                 "c": [c[2] for c in columns]}).fetchone()
    return text_rules(*row)


def text_rules(all_c: bool | None, default_or_c: bool | None, ctype: str | None, code_point_order: bool | None,
               deterministic: bool | None) -> TextRules:
    """TextRules for text columns whose collations are all C (`all_c`), all the database's default
    or C (`default_or_c`; then `ctype`, the database's locale, decides lower/upper), all ordered
    by code point (`code_point_order`) and all deterministic; None: no text column read."""
    if all_c is None:
        return TextRules(CASE_C, True, True)
    case = CASE_C if all_c else CASE_ASCII if default_or_c and ctype is not None and not re.match(
        r"^(tr|az)([_-]|$)", ctype, re.IGNORECASE) else None
    return TextRules(case, bool(code_point_order), bool(deterministic))
