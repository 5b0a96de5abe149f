"""The compiler's stages without a database: a fixed schema provider (frontend/schema.py) over the
tables of tests/fixtures/stages/schema.sql, and the printed output of every stage of one view."""
from __future__ import annotations

import re
from pathlib import Path

from idivm.algebra.plan import base_tables, format_plan
from idivm.algebra.tables import TableInfo
from idivm.errors import UnknownObject
from idivm.frontend.build_plan import compile_view_sql
from idivm.program.printer import format_program
from idivm.strategies.targets import build_program, diff_schemas_of, make_target

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


def stages(sql: str, strategy: str, schema: FixedSchema) -> str:
    """The plan with IDs, the base-table i-diff schemas and the Δ-program of a view, as printed,
    compiled as registration compiles it with view id 1 and captured tables numbered in the
    plan's order (no column types asked: the general aggregation rule where one would ask)."""
    plan = compile_view_sql(schema, sql).plan
    captured: dict[tuple[str, str], int] = {}
    for t in base_tables(plan):
        captured.setdefault((t.schema, t.name), len(captured) + 1)
    target = make_target("idivm", "view_1", plan, captured, 1, strategy=strategy, definition=sql)
    program = build_program(target, strategy)
    schemas = [] if strategy == "higher-order" else [ds.label() for ds in diff_schemas_of(plan)]
    parts = [f"-- plan (pass 1: IDs)\n{format_plan(plan)}",
             "-- base-table i-diff schemas\n" + "\n".join(schemas),
             "-- derivations\n" + "\n".join(program.derivations),
             f"-- Δ-program\n{format_program(program)}"]
    return "\n\n".join(p.rstrip() for p in parts) + "\n"
