"""Base tables as the plan sees them: columns in order, with types, and the primary key."""
from __future__ import annotations

from dataclasses import dataclass

from ..sqltext import qualified


@dataclass(frozen=True)
class TableInfo:
    """A base table: where it is, its columns (name, SQL type) in order, and its primary key."""

    schema: str
    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return qualified(self.schema, self.name)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    @property
    def non_key(self) -> tuple[str, ...]:
        return tuple(c for c in self.column_names if c not in self.key)

    def type_of(self, column: str) -> str:
        return dict(self.columns)[column]
