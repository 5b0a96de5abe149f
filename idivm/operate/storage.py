"""How much storage each maintained view uses (`status`, `list`, `explain`): its table, its caches
and maps, and its share of the logs of the tables it reads.

A log row stays until every deferred view over its table has consumed it, so a view's share of a
log is the part of the log's size in proportion to the rows it has not consumed yet: a view that
is far behind is the one holding the log's space.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection

from ..introspect.session import relation_bytes, row_count
from ..names import size_text


@dataclass(frozen=True)
class Storage:
    view_bytes: int  # the view's storage table (names.storage_table) with its indexes
    aux_bytes: int  # its caches (idivm.cache_<id>) and maps (idivm.map_<id>_*), with their indexes
    log_bytes: int  # its share of its base tables' logs (an estimate: size x unconsumed / all rows)

    @property
    def total(self) -> int:
        return self.view_bytes + self.aux_bytes + self.log_bytes

    def as_json(self) -> dict:
        return {"view_bytes": self.view_bytes, "caches_bytes": self.aux_bytes, "log_share_bytes": self.log_bytes,
                "total_bytes": self.total}

    def __str__(self) -> str:
        parts = [f"{size_text(self.view_bytes)} view"]
        if self.aux_bytes:
            parts.append(f"{size_text(self.aux_bytes)} caches")
        if self.log_bytes:
            parts.append(f"{size_text(self.log_bytes)} logs")
        return " + ".join(parts)


def log_sizes(conn: Connection, logs: set[str]) -> dict[str, tuple[int, int]]:
    """log table (qualified) -> (bytes, rows); a table read only by immediate views keeps no log."""
    out = {}
    for log in sorted(logs):
        size = relation_bytes(conn, log)
        if size is not None:
            out[log] = (size, row_count(conn, log))
    return out


def log_share(pending_by_log: dict[str, int], sizes: dict[str, tuple[int, int]]) -> int:
    """A view's share of its logs' bytes, from its unconsumed rows in each."""
    share = 0
    for log, pending in pending_by_log.items():
        size, rows = sizes.get(log, (0, 0))
        if rows:
            share += size * min(pending, rows) // rows
    return share
