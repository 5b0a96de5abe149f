"""What the frontend needs to know about the database, asked through a schema provider.

The frontend never queries the database itself (as sqlglot's ``qualify(schema=...)`` takes a schema):
it receives an object with these methods. The PostgreSQL engine's provider
(introspect/provider.py) answers from PostgreSQL's catalog; tests can give a fixed one.
"""
from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from ..algebra.tables import TableInfo


class SchemaProvider(Protocol):
    def table(self, schema: str | None, name: str, only: bool = False) -> TableInfo:
        """The base table a reference resolves to (as the database's search path resolves it), or
        UnknownObject / UnsupportedQuery naming why it cannot be a base table of a view."""

    def non_immutable_calls(self, tree: exp.Expression) -> list[tuple[str, str]]:
        """The functions, operators and aggregates the query calls, as the database resolves their
        overloads for the argument types, that are not immutable: (signature, 'v' volatile or
        's' stable). UnsupportedQuery if the database rejects the query."""

    def has_equality(self, type_name: str) -> bool:
        """Whether values of the type can be compared (IS DISTINCT FROM) and grouped."""

    def output_types(self, tree: exp.Expression) -> list[tuple[str, str]]:
        """The output columns of a query, (name, SQL type) as the database types them (a subquery
        that aggregates becomes a table of the view with these columns)."""
