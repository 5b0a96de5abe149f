"""Each compiler stage's printed output for fixed views, checked without a database against the
expected output beside each input (tests/fixtures/stages/NAME.sql -> NAME.out), as sqlglot checks its
optimizer rules: the plan with IDs, the base-table i-diff schemas, the derivations (rule DAG or
higher-order compilation) and the Δ-program. A change to any stage shows as a difference here, to be
read and, when intended, accepted with IDIVM_UPDATE_FIXTURES=1 (which rewrites the .out files)."""
from __future__ import annotations

import os

import pytest

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
