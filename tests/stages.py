"""The compiler's stages without a database: a fixed schema provider (frontend/schema.py) over the
tables of tests/fixtures/stages/schema.sql, and the printed output of every stage of one view."""
from __future__ import annotations

import re
from pathlib import Path

from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from idivm.algebra.plan import format_plan
from idivm.algebra.tables import TableInfo
from idivm.errors import UnknownObject
from idivm.compiler import compile_view
from idivm.program.printer import format_program
from idivm.strategies.targets import diff_schemas_of

FIXTURES = Path(__file__).parent / "fixtures" / "stages"


class FixedSchema:
    """Tables as `CREATE TABLE name (column type [PRIMARY KEY | NOT NULL], ..., PRIMARY KEY (...))`
    lines say, each type written as PostgreSQL prints it (`integer`, not `int`); every call
    immutable, every type comparable (what PostgreSQL would answer for the fixtures' built-in types)."""

    def __init__(self, ddl: str):
        self.tables: dict[str, TableInfo] = {}
        for name, body in re.findall(r"CREATE TABLE (\w+) \((.*)\);", ddl):
            columns, key, not_null = [], [], set()
            for part in [p.strip() for p in re.split(r",\s*(?![^()]*\))", body)]:
                if part.startswith("PRIMARY KEY"):
                    key += [c.strip() for c in part[part.index("(") + 1:-1].split(",")]
                    continue
                column, type_, *rest = part.split(None, 2)
                columns.append((column, type_))
                if rest and "PRIMARY KEY" in rest[0]:
                    key.append(column)
                if rest and "NOT NULL" in rest[0]:
                    not_null.add(column)
            self.tables[name] = TableInfo("public", name, tuple(columns), tuple(key), frozenset(not_null))

    def table(self, schema, name, only=False) -> TableInfo:
        if name not in self.tables or schema not in (None, "public"):
            raise UnknownObject(f'table "{name}" does not exist')
        return self.tables[name]

    def non_immutable_calls(self, tree):
        return []

    def has_equality(self, type_name: str) -> bool:
        return True

    def output_types(self, tree):
        """As sqlglot types the query over these tables (the fixtures' types are its names too)."""
        schema = {"public": {n: dict(t.columns) for n, t in self.tables.items()}}
        typed = annotate_types(qualify(tree.copy(), schema=schema, dialect="postgres"), schema=schema)
        return [(e.alias_or_name, e.type.sql("postgres")) for e in typed.expressions]


def stages(sql: str, strategy: str, schema: FixedSchema) -> str:
    """The plan with IDs, the base-table i-diff schemas and the Δ-program of a view, as printed:
    the compiler's own output (compiler.py), over symbolic relations (no column types asked: the
    general aggregation rule where one would ask)."""
    c = compile_view(sql, schema, strategy)
    schemas = [] if c.strategy == "higher-order" else [ds.label() for ds in diff_schemas_of(c.plan)]
    parts = [f"-- plan (pass 1: IDs)\n{format_plan(c.plan)}",
             "-- base-table i-diff schemas\n" + "\n".join(schemas),
             "-- derivations\n" + "\n".join(c.program.derivations),
             f"-- Δ-program\n{format_program(c.program)}"]
    return "\n\n".join(p.rstrip() for p in parts) + "\n"
