"""Base tables as the plan sees them: columns in order, with types, and the primary key."""
from __future__ import annotations

from dataclasses import dataclass, replace

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
    # (column, its collation, schema-qualified and quoted) where that is not its type's default: a
    # table holding the column's values for maintenance (an i-diff instance) declares it, or it would
    # compare and order them by the default (`u < 'b'` under und-x-icu read by C.UTF-8's order)
    collations: tuple[tuple[str, str], ...] = ()

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

    def declared(self, column: str) -> str:
        """The column's type as a column definition declares it: with its collation, if not the default."""
        collation = dict(self.collations).get(column)
        return self.type_of(column) + (f" COLLATE {collation}" if collation else "")

    def reading(self, names) -> "TableInfo":
        """The table as a view that reads only `names` sees it: those columns and the key, in order.
        Its i-diff instances hold no other column, so dropping or renaming another one cannot break
        them (algebra/columns_read.py)."""
        wanted = set(names) | set(self.key)
        return replace(self, columns=tuple(c for c in self.columns if c[0] in wanted),
                       collations=tuple(c for c in self.collations if c[0] in wanted))
