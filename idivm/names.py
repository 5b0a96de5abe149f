"""Parsing user-supplied object names (NAME may be schema-qualified) with PostgreSQL's rules."""
from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from .errors import IdivmError


def parse_name(name: str) -> tuple[str | None, str]:
    """'s.v' / 'v' / '"Mixed Case"' -> (schema or None, name), unquoted parts folded to lower case."""
    try:
        t = sqlglot.parse_one(name, into=exp.Table, read="postgres")
    except ParseError:
        raise IdivmError(f"invalid view name {name!r}; use NAME or SCHEMA.NAME") from None
    t = normalize_identifiers(t, dialect="postgres")
    if t.catalog or not t.name:
        raise IdivmError(f"invalid view name {name!r}; use NAME or SCHEMA.NAME")
    return (t.db or None), t.name
