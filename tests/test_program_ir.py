"""The Δ-program IR: every strategy's program is stored as JSON, reads back to the same steps, and
the PostgreSQL engine's rendering of it is exactly what maintenance runs; its relations are abstract."""
from __future__ import annotations

import pytest
from sqlglot import exp

from idivm.engines.postgres.render import delta_names, render
from idivm.engines.postgres.server_maintenance import view_delta
from idivm.program import relations as R
from idivm.program.printer import format_program
from idivm.program.serialize import from_json, to_json
from idivm.program.steps import CreateScratch, DeleteMatching, InsertRows, MergeRows, UpdateMatching

SHAPES = {
    "spj": "SELECT d.did, p.pid, p.price FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
           "JOIN devices d ON d.did = dp.did WHERE d.category = 'phone'",
    "sum": "SELECT d.did, SUM(p.price) AS cost, COUNT(*) AS n FROM parts p JOIN devices_parts dp ON dp.pid = p.pid "
           "JOIN devices d ON d.did = dp.did GROUP BY d.did",
    "minmax": "SELECT dp.did, MIN(p.price) AS lo FROM parts p JOIN devices_parts dp ON dp.pid = p.pid GROUP BY dp.did",
    "nocache": "SELECT d.category, MAX(p.price) AS hi FROM devices d JOIN parts p ON p.price > 10 GROUP BY d.category",
    "union": "SELECT pid AS k FROM parts UNION ALL SELECT did AS k FROM devices",
    "exists": "SELECT d.did FROM devices d WHERE EXISTS (SELECT 1 FROM devices_parts dp WHERE dp.did = d.did)",
}


@pytest.fixture
def shop(db):
    db.execute("CREATE TABLE devices (did text PRIMARY KEY, category text)")
    db.execute("CREATE TABLE parts (pid text PRIMARY KEY, price numeric)")
    db.execute("CREATE TABLE devices_parts (did text, pid text, PRIMARY KEY (did, pid))")
    return db


def _stored(db, name):
    return db.execute("SELECT program FROM idivm.views WHERE view_name = %s", (name,)).fetchone()[0]


def _tables(step):
    trees = [getattr(step, f) for f in ("target", "source", "condition", "unique_where") if getattr(step, f, None) is not None]
    trees += list(getattr(step, "using", []) or []) + [v for _, v in getattr(step, "assignments", [])]
    record = getattr(step, "record", None)
    if record is not None:
        trees += [record.body, *record.returning]
    return [t for tree in trees for t in tree.find_all(exp.Table)]


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_stored_program_round_trips_and_renders_to_the_views_function(engine, shop, strategy):
    for name, sql in SHAPES.items():
        engine.register_view(f"{name}_{strategy}", sql, strategy=strategy)
        text = _stored(shop, f"{name}_{strategy}")
        program = from_json(text)
        assert to_json(program) == text  # the JSON form is stable
        rendered = render(program)
        assert [r for _, r in rendered] == [r for _, r in render(from_json(text))], name  # rendering is stable
        # the view's own function runs the stored program over its own Δ tables
        view_id, source = shop.execute(
            "SELECT v.id, p.prosrc FROM idivm.views v JOIN pg_proc p ON p.proname = 'apply_' || v.id "
            "WHERE v.view_name = %s", (f"{name}_{strategy}",)).fetchone()
        with delta_names(lambda cid: view_delta(view_id, cid)):
            own = [sql for _, sql in render(program)]
        reading_deltas = [sql for sql in own if f"\"idivm_d{view_id}_" in sql]
        assert reading_deltas and all(line in source for sql in reading_deltas for line in sql.splitlines()), name
        assert "idivm_delta_" not in source and "idivm_x" not in source, name
        printed = format_program(program)
        for i, step in enumerate(program.ordered(), 1):
            assert f"[{i}] " in printed and step.purpose in printed
        kinds = {type(s) for s in program.steps}
        assert kinds & {DeleteMatching, UpdateMatching, InsertRows}, name
        if name in ("sum", "minmax", "nocache"):
            assert CreateScratch in kinds
            assert any(s.role == "cache" for s in program.steps) == (name != "nocache")
        # the specialized rules merge their per-group sums into the view in one step (a MERGE)
        assert (MergeRows in kinds) == (name == "sum"), name
        # every relation a step reads or writes is abstract until the engine binds it
        concrete = [t.sql() for s in program.steps for t in _tables(s) if R.relation_of(t) is None]
        assert not concrete, (name, concrete)


def test_explain_prints_the_program_and_its_postgresql_rendering(engine, shop):
    engine.register_view("v", SHAPES["sum"])
    text = engine.explain("v")
    program = text.split("Δ-program:", 1)[1].split("Δ-script (PostgreSQL):", 1)[0]
    assert "delete  idivm.cache_" in program and "using   Δ[public.parts]" in program
    assert "ON CONFLICT" not in program and "pg_temp" not in program  # the IR is not PostgreSQL text
    assert 'DELETE FROM "idivm"."cache_' in text.split("Δ-script (PostgreSQL):", 1)[1]
    unminimized = engine.explain("v", unminimized=True)
    assert "Δ-program before minimization:" in unminimized and "Δ-script (PostgreSQL) before minimization:" in unminimized


@pytest.mark.parametrize("strategy", ["id", "tuple"])
def test_steps_are_guarded_by_the_change_kinds_they_read(engine, shop, strategy):
    """program/kinds_needed.driving_masks: a step that reads its driving i-diff's inserted rows runs only
    when the i-diff has I or U rows (kind masks with bit 1 or 4), one that reads deleted rows only
    with D or U; a step the analysis cannot restrict runs whenever its i-diff has rows; and each
    step's masks say the same as the emptiness of its probe query under every batch."""
    from idivm.program.kinds_needed import ANY_MASK, BIT, KINDS, driving_masks, probe, yields_nothing

    seen = set()
    for name, sql in SHAPES.items():
        engine.register_view(f"{name}_{strategy}", sql, strategy=strategy)
        program = from_json(_stored(shop, f"{name}_{strategy}"))
        for step in program.ordered():
            masks = driving_masks(step)
            assert masks <= ANY_MASK
            if step.driven_by is None or probe(step) is None:
                assert masks == ANY_MASK
                continue
            query = probe(step)
            deltas = {int(r.name) for r in map(R.relation_of, query.find_all(exp.Table)) if r and r.kind == R.DELTA}
            for mask in ANY_MASK:  # the masks are exactly the batches under which the probe may yield
                kinds = {cid: set(KINDS) for cid in deltas} | {step.driven_by: {k for k in KINDS if mask & BIT[k]}}
                assert (mask in masks) == (step.driven_by not in deltas or not yields_nothing(query, kinds))
            if masks == frozenset(m for m in ANY_MASK if m & (BIT["I"] | BIT["U"])):
                seen.add("inserted or updated")
            if masks == frozenset(m for m in ANY_MASK if m & (BIT["D"] | BIT["U"])):
                seen.add("deleted or updated")
            if masks == frozenset(m for m in ANY_MASK if m & BIT["I"]):
                seen.add("inserted")
    assert {"deleted or updated"} <= seen, seen  # Δ- and pre-state steps: a batch of inserts skips them
    if strategy == "id":
        assert "inserted" in seen, seen  # Δ+ of new rows: a batch of updates skips them
