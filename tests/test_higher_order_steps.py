"""The viewlet transform's trigger programs as Δ-program steps, rendered by the PostgreSQL engine
and run on PostgreSQL: after a random batch of inserts, deletes and updates to one base table,
every map table equals its definition recomputed from the base tables."""
from __future__ import annotations

import random

import pytest

from idivm.calculus.expr import Cmp, Rel, Sum, Var, mul
from idivm.engines.postgres.render import delta_table, render_step
from idivm.program import relations as Rl
from idivm.program.bind import bind
from idivm.program.steps import AddToMap, Program
from idivm.strategies.higher_order.to_steps import VALUE, BaseTable, Binder, increment_query, trigger_steps
from idivm.strategies.higher_order.viewlet import compile_query

TABLES = {"public.r": BaseTable("public", "r", ("k", "a", "b")),
          "public.s": BaseTable("public", "s", ("k", "b", "c")),
          "public.t": BaseTable("public", "t", ("k", "c", "d"))}
CAPTURED = {("public", "r"): 1, ("public", "s"): 2, ("public", "t"): 3}  # as registration would number them
R = Rel("public.r", ("RK", "A", "B"))
S = Rel("public.s", ("SK", "B", "C"))
T = Rel("public.t", ("TK", "C", "D"))
QUERIES = {
    "chain": Sum(("A", "D"), mul(R, S, T)),
    "sum_inequality": Sum((), mul(R, S, T, Cmp("<", Var("A"), Var("D")), Var("C"))),
    "self_join": Sum(("B",), mul(R, Rel("public.r", ("RK2", "A2", "B")), Var("A"))),
    "grouped_sum": Sum(("A",), mul(R, S, Var("C"))),
}


def _run(db, step):
    for statement in render_step(step).split(";\n"):
        db.execute(statement)


def _map_rows(db, name):
    return sorted(db.execute(f'SELECT * FROM "map_{name}"').fetchall())


def _definition(db, m, binder):
    keys = ", ".join(f's."{k}"' for k in m.keys) or "TRUE"
    group = f" GROUP BY {', '.join(f's.{chr(34)}{k}{chr(34)}' for k in m.keys)}" if m.keys else ""
    from idivm.engines.postgres.render import sql
    q = f'SELECT {keys}, sum(s."{VALUE}") FROM ({sql(increment_query(m.query, binder))}) AS s{group} HAVING sum(s."{VALUE}") <> 0'
    return sorted(db.execute(q).fetchall())


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("seed", [1, 2])
def test_trigger_programs_keep_map_tables_equal_to_their_definitions(db, name, seed):
    rng = random.Random(seed)
    for t in TABLES.values():
        x, y = t.columns[1:]
        db.execute(f"CREATE TABLE {t.name} (k int PRIMARY KEY, {x} int NOT NULL, {y} int NOT NULL)")
        for k in range(1, 9):
            db.execute(f"INSERT INTO {t.name} VALUES (%s, %s, %s)", (k, rng.randint(0, 2), rng.randint(0, 2)))
    compiled = compile_query(QUERIES[name])
    map_keys = {m.name: m.keys for m in compiled.maps}
    binder = Binder(TABLES, lambda n: Rl.view("public", f"map_{n}"), map_keys)
    for m in compiled.maps:
        keys = list(m.keys) or ["__unit"]
        cols = ", ".join(f'"{k}" {"boolean" if k == "__unit" else "int"}' for k in keys)
        db.execute(f'CREATE TABLE "map_{m.name}" ({cols}, "{VALUE}" numeric NOT NULL, PRIMARY KEY ({", ".join(chr(34) + k + chr(34) for k in keys)}))')
        _run(db, AddToMap(phase=0, purpose="fill", target=binder.map_ref(m.name), keys=list(m.keys), value=VALUE,
                          source=increment_query(m.query, binder)))
    for m in compiled.maps:
        assert [r[:-1] + (r[-1],) for r in _map_rows(db, m.name)] == _definition(db, m, binder), m.name
    batches = [r for _ in range(2) for r in rng.sample(sorted(TABLES), len(TABLES))]  # every table, twice
    for round_, relation in enumerate(batches):
        t = TABLES[relation]
        x, y = t.columns[1:]
        with db.transaction():
            db.execute(f"CREATE TEMP TABLE {delta_table(CAPTURED[(t.schema, t.name)])} (kind text, pre__k int, pre__{x} int, "
                       f"pre__{y} int, post__k int, post__{x} int, post__{y} int) ON COMMIT DROP")
            keys = [r[0] for r in db.execute(f"SELECT k FROM {t.name}").fetchall()]
            for k in rng.sample(keys, min(len(keys), 3)):  # updates and deletes of existing rows
                old = db.execute(f"SELECT k, {x}, {y} FROM {t.name} WHERE k = %s", (k,)).fetchone()
                if rng.random() < 0.5:
                    db.execute(f"DELETE FROM {t.name} WHERE k = %s", (k,))
                    db.execute(f"INSERT INTO {delta_table(CAPTURED[(t.schema, t.name)])} VALUES ('D', %s, %s, %s, NULL, NULL, NULL)", old)
                else:
                    new = (k, rng.randint(0, 2), rng.randint(0, 2))
                    db.execute(f"UPDATE {t.name} SET {x} = %s, {y} = %s WHERE k = %s", (new[1], new[2], k))
                    db.execute(f"INSERT INTO {delta_table(CAPTURED[(t.schema, t.name)])} VALUES ('U', %s, %s, %s, %s, %s, %s)", old + new)
            for k in range(100 + 10 * round_, 100 + 10 * round_ + rng.randint(0, 3)):  # inserts
                new = (k, rng.randint(0, 2), rng.randint(0, 2))
                db.execute(f"INSERT INTO {t.name} VALUES (%s, %s, %s)", new)
                db.execute(f"INSERT INTO {delta_table(CAPTURED[(t.schema, t.name)])} VALUES ('I', NULL, NULL, NULL, %s, %s, %s)", new)
            steps, _ = trigger_steps(compiled, relation, binder, lambda k: f"idivm_inc_{k}")
            for step in bind(Program(strategy="higher-order", steps=steps), 1, CAPTURED).ordered():
                _run(db, step)
        for m in compiled.maps:
            assert _map_rows(db, m.name) == _definition(db, m, binder), (name, relation, m.name, compiled.format())


def test_trigger_programs_print_and_round_trip_through_json():
    from idivm.program.printer import format_program
    from idivm.program.serialize import from_json, to_json

    compiled = compile_query(QUERIES["chain"])
    binder = Binder(TABLES, lambda n: Rl.view("public", f"map_{n}"), {m.name: m.keys for m in compiled.maps})
    steps, _ = trigger_steps(compiled, "public.s", binder, lambda k: f"idivm_inc_{k}")
    program = Program(strategy="higher-order", steps=steps)
    again = from_json(to_json(program))
    assert [render_step(s) for s in again.steps] == [render_step(s) for s in program.steps]
    printed = format_program(program)
    assert "add to  public.map_M1 [A, D] (__value +=)" in printed and "Δ[public.s]" in printed
    assert "MERGE" not in printed  # the IR, not PostgreSQL's rendering of it
