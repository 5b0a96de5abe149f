"""Base tables as the plan sees them: columns in order, with types, and the primary key."""
from __future__ import annotations

from dataclasses import dataclass

from ..sqltext import qualified


@dataclass(frozen=True)
class TableInfo:
    """A base table: where it is, its columns (name, SQL type) in order, its primary key, and which
    other columns are declared NOT NULL (group keys that cannot be NULL are matched by plain equality)."""

    schema: str
    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    not_null: frozenset[str] = frozenset()

    def never_null(self, column: str) -> bool:
        return column in self.key or column in self.not_null

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
