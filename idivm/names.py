"""Parsing user-supplied object names (NAME may be schema-qualified) with PostgreSQL's rules."""
from __future__ import annotations

import re
import string

from sqlglot.dialects.postgres import Postgres

from .errors import IdivmError


_PART = r'"(?:[^"]|"")+"|[^\W\d][\w$]*'
_NAME = re.compile(rf"\s*({_PART})(?:\s*\.\s*({_PART}))?\s*")


_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _unquote(part: str) -> str:
    """PostgreSQL's identifier rules: a quoted part is taken as written, an unquoted one has its ASCII
    letters folded to lower case (in a UTF-8 database other letters stay as they are)."""
    return part[1:-1].replace('""', '"') if part.startswith('"') else part.translate(_FOLD)


def parse_name(name: str) -> tuple[str | None, str]:
    """'s.v' / 'v' / '"Mixed Case"' -> (schema or None, name), unquoted parts folded to lower case.
    Any identifier PostgreSQL accepts is a name here, keywords of other SQL dialects too (glob, rlike)."""
    m = _NAME.fullmatch(name)
    if m is None:
        raise IdivmError(f"invalid view name {name!r}; use NAME or SCHEMA.NAME")
    first, second = m.group(1), m.group(2)
    return (_unquote(first), _unquote(second)) if second else (None, _unquote(first))


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


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 row`, `2 rows`: a count with its noun in the right number, for messages users read."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def size_text(n: int) -> str:
    """Bytes as PostgreSQL's pg_size_pretty prints them (powers of 1024): 8192 -> "8 kB"."""
    units = ("bytes", "kB", "MB", "GB", "TB")
    for unit in units:
        if abs(n) < 10 * 1024 or unit == units[-1]:
            return f"{n} {unit}"
        n = (n + 512) // 1024
    raise AssertionError("unreachable")


STORAGE_SCHEMA = "idivm"
# idivm's one-row table (created with the catalog; PostgreSQL has no DUAL): what a maintained view's
# SELECT without FROM reads (frontend/one_row.py), captured like any table.
ONE_TABLE = "one"
# idivm's table of the integers SERIES_FIRST to SERIES_LAST (created with the catalog, never written):
# what generate_series(a, b) in a maintained view's FROM reads (frontend/table_functions.py).
SERIES_TABLE, SERIES_COLUMN, SERIES_FIRST, SERIES_LAST = "series", "n", -1000, 10000
# idivm's function single_row(row count, value) (created with the catalog): the value of a scalar
# subquery without an aggregate, from its rows' count and MAX (frontend/single_row_subqueries.py).
SINGLE_ROW_FUNCTION = "single_row"


def storage_table(view_id: int) -> tuple[str, str]:
    """(schema, name) of the table that stores a maintained view: the ID columns that maintenance
    matches rows by, beside the output columns, kept in idivm's schema. Applications read the view
    under its own name, a PostgreSQL view of exactly the output columns that refuses writes
    (engines/postgres/view_relation.py)."""
    return STORAGE_SCHEMA, f"view_{int(view_id)}"


SELF = "self"
# The schema a part's table (algebra/plan.PartScan: a subquery that aggregates, read like a table) is
# named in until registration binds it to the view's id: "@part"."part_1" is the view's own
# table self.part_1 (own_table) and its i-diff a scratch relation (program/relations.py).
PART_SCHEMA = "@part"


def own_table(view_id: int | None, part: str = SELF) -> tuple[str | None, str]:
    """(schema, name) of one of a view's own tables: `part` is SELF (its storage), "cache" (a grouped
    view's intermediate cache) or "map_<name>" (a higher-order map). The compiler knows no view ids:
    with view_id None the name is symbolic, (None, "self") or (None, "self.cache"), as a compiled
    program names it; registration binds it (program/bind.py) to idivm.view_<id>, idivm.cache_<id>,
    idivm.map_<id>_<name>."""
    if view_id is None:
        return None, part if part == SELF else f"{SELF}.{part}"
    if part == SELF:
        return storage_table(view_id)
    kind, _, rest = part.partition("_")
    return STORAGE_SCHEMA, f"{kind}_{int(view_id)}" + (f"_{rest}" if rest else "")


def own_part(name: str) -> str:
    """The part of a symbolic own-table name: "self" -> SELF, "self.cache" -> "cache"."""
    return SELF if name == SELF else name.removeprefix(f"{SELF}.")
