"""docs/sql-support.md kept true: every row of its tables has an example in
tests/fixtures/sql_support.sql, and each example compiles (`explain(sql=...)`, a dry run that
creates nothing) under the strategies its row lists as maintaining it, and is refused, in one
line, by those it lists as refusing it."""
from __future__ import annotations

import re
from pathlib import Path

import idivm

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "sql-support.md"
FIXTURE = Path(__file__).parent / "fixtures" / "sql_support.sql"
SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TABLE r (k int PRIMARY KEY, a int, b int, c text, f float8, n numeric, d date, ts timestamp,
                tz timestamptz, j json, m mood);
CREATE TABLE s (k int PRIMARY KEY, a int, g int);
CREATE TABLE t (k int PRIMARY KEY, x int);
CREATE TABLE coll (k int PRIMARY KEY, c text COLLATE "C", i text COLLATE "und-x-icu");
CREATE TABLE nokey (a int);
CREATE TABLE p (k int PRIMARY KEY, a int) PARTITION BY HASH (k);
CREATE TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE p1 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE parent (k int PRIMARY KEY);
CREATE TABLE child () INHERITS (parent);
CREATE VIEW pv AS SELECT * FROM r;
CREATE MATERIALIZED VIEW mv AS SELECT k FROM r;
"""
FIRST_ORDER = ("id", "tuple")


def rows() -> list[tuple[str, str, str, str]]:
    """(table, first cell, status cell, strategies cell) of every row of the document's two tables:
    'main' (the rows for id and tuple) and 'ho' (the higher-order strategy's)."""
    out, table = [], None
    for line in DOC.read_text().splitlines():
        if line.startswith("| Construct | Status"):
            table = "main"
        elif line.startswith("| Construct | `higher-order`"):
            table = "ho"
        elif not line.startswith("|"):
            table = None if not line.strip() else table
        elif table and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            out.append((table, cells[0], cells[1], cells[2] if table == "main" else ""))
    return out


def examples() -> dict[tuple[str, str], list[str]]:
    """(table, row prefix) -> its example views, from the fixture file."""
    out: dict[tuple[str, str], list[str]] = {}
    key = None
    for line in FIXTURE.read_text().splitlines():
        m = re.match(r"-- (ho )?row: (.+)$", line)
        if m:
            key = ("ho" if m.group(1) else "main", m.group(2).strip())
            out[key] = []
        elif line.strip() and not line.startswith("--"):
            out[key].append(line.strip())
    return out


def expectations(table: str, status: str, strategies: str) -> dict[str, bool]:
    """Strategy -> whether the row says it maintains its examples (strategies the row is silent on
    are not checked)."""
    if table == "main":
        if status in ("supported", "accepted, ignored"):
            named = [s for s in ("id", "tuple", "higher-order") if re.search(rf"\b{s}\b", strategies)]
            return {s: True for s in named or FIRST_ORDER}
        return {s: False for s in FIRST_ORDER} if status == "refused" else {}
    if status == "supported":
        return {"higher-order": True}
    if status.startswith("supported (`higher-order` only)"):
        return {"higher-order": True, "id": False, "tuple": False}
    return {"higher-order": False} if status == "refused" else {}


def test_every_row_has_an_example_and_every_example_a_row():
    keys = list(examples())
    matched = {k: [r for r in rows() if r[0] == k[0] and r[1].startswith(k[1])] for k in keys}
    assert all(len(v) == 1 for v in matched.values()), {k: len(v) for k, v in matched.items() if len(v) != 1}
    assert not [r[1][:60] for r in rows() if not any(k[0] == r[0] and r[1].startswith(k[1]) for k in keys)]


def test_each_example_is_maintained_or_refused_as_its_row_says(engine, db):
    db.execute(SCHEMA)
    engine.register_view("base_view", "SELECT k, a FROM r")
    wrong = []
    for (table, prefix), sqls in examples().items():
        (_, _, status, strategies), = [r for r in rows() if r[0] == table and r[1].startswith(prefix)]
        for strategy, maintained in expectations(table, status, strategies).items():
            for sql in sqls:
                try:
                    engine.explain(sql=sql, strategy=strategy)
                    ok = True
                except idivm.IdivmError as e:
                    assert "\n" not in str(e).strip(), e
                    ok, why = False, str(e)[:120]
                if ok != maintained:
                    wrong.append(f"{prefix[:50]} | {strategy}: {sql[:70]} -> {'maintained' if ok else why}")
    assert not wrong, "\n".join(wrong)

