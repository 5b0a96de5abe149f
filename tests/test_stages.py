"""Each compiler stage's printed output for fixed views, checked without a database against the
expected output beside each input (tests/fixtures/stages/NAME.sql -> NAME.out), as sqlglot checks its
optimizer rules: the plan with IDs, the base-table i-diff schemas, the derivations (rule DAG or
higher-order compilation) and the Δ-program. A change to any stage shows as a difference here, to be
read and, when intended, accepted with IDIVM_UPDATE_FIXTURES=1 (which rewrites the .out files)."""
from __future__ import annotations

import os

import pytest

from idivm.algebra.plan import base_tables
from idivm.engines.postgres.render import _bind, render
from idivm.frontend.build_plan import compile_view_sql
from idivm.program import relations as R
from idivm.program.serialize import from_json, to_json
from idivm.strategies.targets import build_program, make_target
from stages import FIXTURES, FixedSchema, stages

SCHEMA = FixedSchema((FIXTURES / "schema.sql").read_text())
CASES = sorted(p.stem for p in FIXTURES.glob("*.sql") if p.stem != "schema")


@pytest.mark.parametrize("name", CASES)
def test_each_stage_prints_as_expected(name):
    first, sql = (FIXTURES / f"{name}.sql").read_text().split("\n", 1)
    strategy = first.removeprefix("-- strategy:").strip()
    got = stages(sql.strip(), strategy, SCHEMA)
    expected = FIXTURES / f"{name}.out"
    if os.environ.get("IDIVM_UPDATE_FIXTURES") == "1":
        expected.write_text(got)
    assert expected.exists(), f"no expected output {expected.name}: run with IDIVM_UPDATE_FIXTURES=1 and read it"
    assert got == expected.read_text()


@pytest.mark.parametrize("name", CASES)
def test_rendering_leaves_the_program_as_it_was(name):
    """The PostgreSQL renderer prints each tree as it stands, binding relations as it prints
    (engines/postgres/render.py): every step renders as binding a copy first would, and its trees
    are unchanged afterwards (sqlglot's generator rewrites some constructs in place)."""
    first, sql = (FIXTURES / f"{name}.sql").read_text().split("\n", 1)
    strategy = first.removeprefix("-- strategy:").strip()
    plan = compile_view_sql(SCHEMA, sql.strip()).plan
    captured = {}
    for t in base_tables(plan):
        captured.setdefault((t.schema, t.name), len(captured) + 1)
    program = build_program(make_target("idivm", "view_1", plan, captured, 1, strategy=strategy, definition=sql),
                            strategy)
    before = to_json(program)
    rendered = render(program)
    assert to_json(program) == before
    fresh = from_json(before)
    for step in fresh.steps:
        for tree in [v for v in vars(step).values() if hasattr(v, "sql")]:
            assert R.bind_relations(tree, _bind).sql("postgres") in "\n".join(t for _, t in rendered)
