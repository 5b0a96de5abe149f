"""Parsing user-supplied object names (NAME may be schema-qualified) with PostgreSQL's rules."""
from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
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


_PLAIN = re.compile(r"[a-z_][a-z0-9_$]*")


def display_name(schema: str | None, name: str) -> str:
    """A name as it must be typed back (parse_name's inverse): parts that PostgreSQL would fold or
    that are keywords are double-quoted, so `"BigQty"` prints as public."BigQty", not public.BigQty."""
    def part(p: str) -> str:
        if _PLAIN.fullmatch(p) and p.upper() not in KEYWORDS:
            return p
        return '"' + p.replace('"', '""') + '"'

    return f"{part(schema)}.{part(name)}" if schema else part(name)


KEYWORDS = frozenset(k for k in Postgres.Tokenizer.KEYWORDS if k.isalpha())
