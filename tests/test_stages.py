"""Each compiler stage's printed output for fixed views, checked without a database against the
expected output beside each input (tests/fixtures/stages/NAME.sql -> NAME.out), as sqlglot checks its
optimizer rules: the plan with IDs, the base-table i-diff schemas, the derivations (rule DAG or
higher-order compilation) and the Δ-program. A change to any stage shows as a difference here, to be
read and, when intended, accepted with IDIVM_UPDATE_FIXTURES=1 (which rewrites the .out files)."""
from __future__ import annotations

import os

import pytest

from idivm.algebra.plan import part_scans
from idivm.compiler import compile_view
from idivm.engines.postgres.render import _bind, render
from idivm.program import relations as R
from idivm.program.bind import bind
from idivm.program.serialize import from_json, to_json
from idivm.program.steps import relations_read
from idivm.names import PART_SCHEMA
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
    c = compile_view(sql.strip(), SCHEMA, strategy)
    program = c.bound(1, {t: i for i, t in enumerate(c.tables(), 1)})[1]  # as registration stores it
    before = to_json(program)
    rendered = render(program)
    assert to_json(program) == before
    fresh = from_json(before)
    for step in fresh.steps:
        for tree in [v for v in vars(step).values() if hasattr(v, "sql")]:
            assert R.bind_relations(tree, _bind).sql("postgres") in "\n".join(t for _, t in rendered)


@pytest.mark.parametrize("name", CASES)
def test_the_stored_program_reads_back_as_the_same_trees(name):
    """program/serialize.py's JSON form keeps every tree whole: read back, each step equals the
    compiled one (sqlglot's tree equality covers every argument, placeholder marks included), prints
    and renders the same, and writes the same text again."""
    first, sql = (FIXTURES / f"{name}.sql").read_text().split("\n", 1)
    strategy = first.removeprefix("-- strategy:").strip()
    c = compile_view(sql.strip(), SCHEMA, strategy)
    for program in (c.program, c.bound(1, {t: i for i, t in enumerate(c.tables(), 1)})[1]):
        text = to_json(program)
        again = from_json(text)
        assert again.steps == program.steps and again.refills == program.refills
        assert again.derivations == program.derivations and again.strategy == program.strategy
        assert to_json(again) == text
    assert [t for _, t in render(again)] == [t for _, t in render(program)]


def test_a_stored_program_of_another_format_is_refused_in_one_line():
    from idivm.errors import IdivmError

    with pytest.raises(IdivmError, match="register the view again"):
        from_json('{"version": 1, "strategy": "id", "steps": [], "derivations": [], "refills": []}')


@pytest.mark.parametrize("name", CASES)
def test_the_compiler_knows_no_catalog_id_and_binding_names_every_relation(name):
    """The compiler's program names Δs by table, the view's own tables symbolically and scratch
    relations by purpose (compiler.py); bound to a view's ids (program/bind.py) every Δ is a
    captured id, every own table lives in idivm's schema under the view's id, and every scratch
    relation carries the view's id, so that views maintained in one transaction never share one."""
    first, sql = (FIXTURES / f"{name}.sql").read_text().split("\n", 1)
    c = compile_view(sql.strip(), SCHEMA, first.removeprefix("-- strategy:").strip())
    keys = {R.table_key(*t) for t in c.tables()}

    def relations(program):
        return [r for s in program.steps for r in relations_read(s)] + [
            R.relation_of(s.target) for s in program.steps if hasattr(s, "target")]

    for rel in relations(c.program):
        assert rel.kind != R.DELTA or rel.name in keys
        assert rel.kind != R.VIEW or (rel.schema is None and rel.name.split(".")[0] == "self")
    parts = {R.table_key(PART_SCHEMA, p.part) for p in part_scans(c.plan)}  # a part's Δ is the view's own scratch
    assert {s.driven_by for s in c.program.steps} <= keys | parts | {None}
    captured = {t: i for i, t in enumerate(c.tables(), 7)}
    kinds = [type(s) for s in c.program.steps]
    unshared = from_json(to_json(c.program))  # no tree held by two steps, as strategies may hand out
    bound = c.bound(42, captured)[1]
    assert [type(s) for s in bound.steps] == kinds
    refills, bound.refills = bound.refills, []  # the refills come from the bound target (strategies/refills.py)
    assert to_json(bound) == to_json(bind(unshared, 42, captured))  # bound in place, each relation once
    assert refills and all(r.target.db == "idivm" and "_42" in r.target.name for r in refills)
    assert refills[-1].role == "view" and refills[-1].target.name == "view_42"
    for rel in relations(bound):
        assert rel.kind != R.DELTA or int(rel.name) in captured.values()
        assert rel.kind != R.VIEW or (rel.schema == "idivm" and "_42" in rel.name)
        assert rel.kind != R.SCRATCH or rel.name.endswith("_42")
    assert {s.driven_by for s in bound.steps} <= set(captured.values()) | {None}
    assert c.program is None  # binding took the program over


@pytest.mark.parametrize("name", CASES)
def test_printing_and_binding_without_copies_change_nothing(name, monkeypatch):
    """Two shortcuts of the compiler: derivations print conditions without copying them first
    (rules/idiff.show), and a plan expression is bound to a step's relations in one walk
    (program/trees.rebuilt) where sqlglot's transform copies the tree first. Compiled with sqlglot's
    own copying forms instead, every fixture's program, derivations included, is the same."""
    from sqlglot import exp

    from idivm.algebra.placeholders import printable
    from idivm.program import trees
    from idivm.rules import idiff, spj

    first, sql = (FIXTURES / f"{name}.sql").read_text().split("\n", 1)
    strategy = first.removeprefix("-- strategy:").strip()
    fast = to_json(compile_view(sql.strip(), SCHEMA, strategy).program)
    monkeypatch.setattr(idiff, "show", lambda e: printable(e).sql("postgres"))
    monkeypatch.setattr(spj, "rebuilt", lambda tree, fn: tree.transform(fn))
    assert to_json(compile_view(sql.strip(), SCHEMA, strategy).program) == fast
    tree = exp.maybe_parse("SELECT a.x + 1 AS y FROM t AS a WHERE a.k = (SELECT max(b.k) FROM u AS b)")
    before = tree.sql()

    def renamed(n):
        return trees.col("z", n.name) if isinstance(n, exp.Column) and n.table == "a" else n

    assert trees.rebuilt(tree, renamed) == tree.transform(renamed) and tree.sql() == before


def test_a_placeholder_is_no_column_a_user_wrote_and_never_reaches_a_statement():
    """Placeholders are exp.Columns marked with their kind (algebra/placeholders.py): a tree with
    one is not equal to the same tree with a user's column of that name, a copy keeps the mark,
    the printers spell it out, and the PostgreSQL renderer refuses it rather than print a column
    of some table."""
    from sqlglot import exp

    from idivm.algebra.placeholders import CACHE, PRE, Kind, printable
    from idivm.engines.postgres.render import sql

    cache = CACHE("g0")
    user = exp.column("g0", quoted=True)
    assert cache != user and hash(cache) != hash(user) and cache == cache.copy() and CACHE.marks(cache.copy())
    assert not CACHE.marks(user) and not PRE.marks(cache)
    tree = exp.select(cache.copy(), exp.column("price", "p")).from_("parts")
    assert list(CACHE.find_all(tree)) == [cache]
    assert printable(tree).sql() == 'SELECT cache."g0", p.price FROM parts'
    with pytest.raises(ValueError, match="unbound placeholder"):
        sql(tree)
    assert sql(exp.select(user).from_("parts")) == 'SELECT "g0" FROM parts'
    with pytest.raises(ValueError, match="labelled"):
        Kind("cache")
