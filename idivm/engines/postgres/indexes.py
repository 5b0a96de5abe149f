"""Keeping the indexes users add to a view's storage table when it is rebuilt (refresh, replace).

Applications index a maintained view for their own reads by indexing its storage table
(`CREATE INDEX ON idivm.view_7 (customer)`; `idivm explain` names the table). A rebuild creates a
new storage table (a new id), so those indexes are read from the old one before it is dropped and
created again on the new one, under their own names. The indexes idivm creates itself (keys, the
lookups maintenance needs) are created again by the registration; an index whose definition, table
and name aside, equals one of those is not duplicated.
"""
from __future__ import annotations

import re

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ...sqltext import qualified, run

_ON = re.compile(r"^(CREATE (?:UNIQUE )?INDEX )(\S+)( ON (?:ONLY )?)(\S+\.\S+)( .*)$", re.S)


def saved_indexes(conn: Connection, storage: tuple[str, str]) -> list[tuple[str, str]]:
    """(name, definition) of every index on the storage table that is not a constraint's."""
    rows = conn.execute(text(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = to_regclass(:t) AND NOT EXISTS "
        "(SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) ORDER BY 1"), {"t": qualified(*storage)}).all()
    return [(r[0], r[1]) for r in rows]


def restore_indexes(conn: Connection, storage: tuple[str, str], saved: list[tuple[str, str]]) -> None:
    """Create the saved indexes on the new storage table, but those it already has."""
    have = {_shape(d) for _, d in saved_indexes(conn, storage)}
    for name, definition in saved:
        found = _ON.match(definition)
        if found is None or _shape(definition) in have:
            continue
        run(conn, found.group(1) + found.group(2) + found.group(3) + qualified(*storage) + found.group(5))


def _shape(definition: str) -> str:
    """An index definition without its name and table: what two equal indexes share."""
    found = _ON.match(definition)
    return (found.group(1) + found.group(5)) if found else definition
