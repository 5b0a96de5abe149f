"""Each whole-statement rewrite of the frontend (frontend/driver.py's REWRITES) against its fixture
file, tests/fixtures/rewrites/<module>.sql: a comment naming each case, the input statement, and
the statement the rewrite must print, as sqlglot checks its optimizer rules. A rewrite that takes
the schema is given the fixed one of tests/fixtures/stages/schema.sql."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from idivm.frontend.driver import REWRITES, parse_one
from stages import FIXTURES as STAGES, FixedSchema

FIXTURES = Path(__file__).parent / "fixtures" / "rewrites"
BY_MODULE = {rule.__module__.rsplit(".", 1)[1]: rule for rule in REWRITES}


def cases(path: Path):
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    title = None
    pending: list[str] = []
    for line in lines:
        if line.startswith("#"):
            title = line[1:].strip()
            continue
        pending.append(line.rstrip(";"))
        if len(pending) == 2:
            yield pytest.param(path.stem, *pending, id=f"{path.stem}: {title}")
            pending = []


@pytest.mark.parametrize("module, given, expected", [c for p in sorted(FIXTURES.glob("*.sql")) for c in cases(p)])
def test_rewrite_prints_as_expected(module, given, expected):
    rule = BY_MODULE[module]
    if "schema" in inspect.signature(rule).parameters:
        schema = FixedSchema((STAGES / "schema.sql").read_text())
        rule = (lambda r: lambda tree: r(tree, schema))(rule)
    assert rule(parse_one(given)).sql("postgres") == expected
    assert rule(parse_one(expected)).sql("postgres") == expected  # a rewritten statement stays as it is
