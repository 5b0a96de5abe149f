"""Rendering Δ-program steps as PostgreSQL statements.

This is the one place that knows PostgreSQL's forms of the steps: ``DELETE ...
USING``, ``UPDATE ... FROM``, ``INSERT ... ON CONFLICT DO NOTHING`` (skip rows
whose IDs exist), data-modifying CTEs with ``RETURNING`` (a Record), session
temp tables for i-diff instances and scratch relations (``pg_temp``, dropped or
emptied at commit). Abstract relations are bound here
(program/relations.py): Δ[t] is ``pg_temp.idivm_delta_<captured id>``.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from contextvars import ContextVar
from typing import Callable

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from ...algebra.placeholders import is_placeholder, printable
from ...program import relations as R
from ...program.steps import (MAP_UNIT, PHASES, AddToMap, CreateScratch, DeleteMatching, InsertRows, MergeRows, Program,
                              Record, Step, UpdateMatching)
from ...sqltext import ident, qualified, string_literal, table_expr

CHANGED = "changed"  # the CTE holding a recorded write's RETURNING rows


def delta_table_name(captured_id: int) -> str:
    return f"idivm_delta_{int(captured_id)}"


_DELTA_NAME: ContextVar[Callable[[int], str]] = ContextVar("delta_name", default=delta_table_name)


@contextmanager
def delta_names(name: Callable[[int], str]):
    """Within the block, Δ[t] binds to pg_temp.<name(captured id)> instead of delta_table_name: the
    SQL-callable maintenance function of a view keeps i-diff tables of its own
    (server_maintenance.py), whose columns are those that view reads."""
    token = _DELTA_NAME.set(name)
    try:
        yield
    finally:
        _DELTA_NAME.reset(token)


def delta_table(captured_id: int) -> str:
    """The per-maintenance i-diff instance table of one captured base table (quoted)."""
    return qualified("pg_temp", delta_table_name(captured_id))


def _bind(rel: R.Relation) -> exp.Expression:
    if rel.kind == R.DELTA:
        if rel.captured_id() is None:  # a program as compiled, not bound to ids (a dry run prints it)
            return table_expr("pg_temp", f"Δ[{rel.name}]")
        return table_expr("pg_temp", _DELTA_NAME.get()(rel.captured_id()))
    if rel.kind == R.SCRATCH:
        return table_expr("pg_temp", rel.name)
    if rel.kind == R.RETURNED:
        return table_expr(None, CHANGED)
    return table_expr(rel.schema, rel.name)


def _dispatch() -> dict:
    """PostgreSQL's generator's dispatch table (sqlglot's `_dispatch`, expression class -> handler)
    with two handlers of idivm's: each abstract relation printed as the table `_bind` binds it to,
    and a placeholder (algebra/placeholders.py) that was never bound refused. A tree is rendered as
    it stands, where binding it first took a copy of it (most of a program's rendering time); the
    trees idivm renders have none of the constructs the generator rewrites in place (nested WITH,
    semi- and anti-joins, QUALIFY), so rendering leaves them as they were. A subclass of the
    generator would do the same, but sqlglot's compiled build (sqlglotc) refuses instances of
    Python subclasses of its classes."""
    dispatch = _POSTGRES.generator()._dispatch
    table_sql, column_sql = dispatch[exp.Table], dispatch[exp.Column]

    def bound_table_sql(gen, expression: exp.Table, sep: str = " AS ") -> str:
        rel = R.relation_of(expression)
        if rel is None:
            return table_sql(gen, expression, sep)
        bound = _bind(rel)
        if expression.alias:
            bound.set("alias", expression.args["alias"].copy())
        return table_sql(gen, bound, sep)

    def checked_column_sql(gen, expression: exp.Column) -> str:
        if is_placeholder(expression):
            raise ValueError(f"an unbound placeholder reached a statement: {printable(expression).sql()}")
        return column_sql(gen, expression)

    return {**dispatch, exp.Table: bound_table_sql, exp.Column: checked_column_sql}


_POSTGRES = Postgres()
_DISPATCH = _dispatch()


def sql(tree: exp.Expression) -> str:
    """A tree with its relations bound, as PostgreSQL text."""
    generator = _POSTGRES.generator()
    generator._dispatch = _DISPATCH
    return generator.generate(tree, copy=False)


def _using(kw: str, items: list[exp.Expression]) -> str:
    return f"\n{kw} {', '.join(sql(i) for i in items)}" if items else ""


def _write(step: Step) -> str:
    if isinstance(step, DeleteMatching):
        return f"DELETE FROM {sql(step.target)}{_using('USING', step.using)}\nWHERE {sql(step.condition)}"
    if isinstance(step, UpdateMatching):
        sets = ", ".join(f"{ident(c)} = {sql(v)}" for c, v in step.assignments)
        return f"UPDATE {sql(step.target)} SET {sets}{_using('FROM', step.using)}\nWHERE {sql(step.condition)}"
    if isinstance(step, InsertRows):
        cols = ", ".join(ident(c) for c in step.columns)
        text = f"INSERT INTO {sql(step.target)} ({cols})\n{sql(step.source)}"
        if step.unique_on:
            conflict = ", ".join(ident(c) for c in step.unique_on)
            if step.unique_where is not None:  # a partial unique index
                conflict += f") WHERE ({sql(step.unique_where)}"
            text += f"\nON CONFLICT ({conflict}) DO NOTHING"
        return text
    if isinstance(step, MergeRows):
        return _merge(step)
    if isinstance(step, AddToMap):
        return _add_to_map(step)
    raise TypeError(f"the PostgreSQL engine cannot render {type(step).__name__}")


def _merge(step: MergeRows) -> str:
    """PostgreSQL's MERGE (15 and later): the first WHEN clause that holds acts, so a matched row
    is deleted or else updated. MERGE fires the target's statement triggers with transition tables
    for each action, so capture sees its changes as it sees a DELETE, an UPDATE and an INSERT."""
    text = (f"MERGE INTO {sql(step.target)}\nUSING ({sql(step.source)}) AS {ident(step.source_alias)}\n"
            f"ON {sql(step.condition)}")
    if step.delete_when is not None:
        text += f"\nWHEN MATCHED AND {sql(step.delete_when)} THEN DELETE"
    if step.assignments:
        text += "\nWHEN MATCHED THEN UPDATE SET " + ", ".join(f"{ident(c)} = {sql(v)}" for c, v in step.assignments)
    if step.columns:
        when = f" AND {sql(step.insert_when)}" if step.insert_when is not None else ""
        text += (f"\nWHEN NOT MATCHED{when} THEN INSERT ({', '.join(ident(c) for c in step.columns)}) "
                 f"VALUES ({', '.join(sql(v) for v in step.values)})")
    return text


def _add_to_map(step: AddToMap) -> str:
    """One MERGE: the source's values summed per key (keys whose sum is 0 left out) are added to the
    map's rows; a row whose value reaches 0 is deleted, a new key inserted. A map without keys is
    keyed by a constant column (MAP_UNIT) so that it too has one row to match. Keys that may be
    NULL match NULL (written so that the map's index serves both cases). Each maintenance writes a
    view's maps under that view's lock (deferred: its advisory lock; immediate: the view table's
    EXCLUSIVE lock), so no concurrent insert of the same key can race the MERGE."""
    v = ident(step.value)
    keys = step.keys or [MAP_UNIT]
    bare = step.target.copy()
    bare.set("alias", None)
    target, source = sql(bare), sql(step.source)
    if step.keys:
        grouped = ", ".join(f"s.{ident(k)}" for k in step.keys)
        summed = f"SELECT {grouped}, sum(s.{v}) AS {v} FROM ({source}) AS s GROUP BY {grouped}"
    else:
        summed = f"SELECT TRUE AS {ident(MAP_UNIT)}, sum(s.{v}) AS {v} FROM ({source}) AS s"
    on = " AND ".join(f"(m.{ident(k)} = i.{ident(k)} OR (m.{ident(k)} IS NULL AND i.{ident(k)} IS NULL))"
                      if k in step.nullable else f"m.{ident(k)} = i.{ident(k)}" for k in keys)
    cols = ", ".join(ident(k) for k in keys)
    values = ", ".join(f"i.{ident(k)}" for k in keys)
    return (f"MERGE INTO {target} AS m\nUSING (SELECT * FROM ({summed}) AS t WHERE t.{v} <> 0) AS i\nON {on}\n"
            f"WHEN MATCHED AND m.{v} + i.{v} = 0 THEN DELETE\n"
            f"WHEN MATCHED THEN UPDATE SET {v} = m.{v} + i.{v}\n"
            f"WHEN NOT MATCHED THEN INSERT ({cols}, {v}) VALUES ({values}, i.{v})")


SCRATCH_TAG = "$idivm_scratch$"


SCRATCH_TRUNCATE_BYTES = 8 << 20  # a scratch table this large (dead rows included) is truncated, not deleted from


def _create_scratch(step: CreateScratch) -> str:
    """A session temp table, created by the first maintenance that needs it, and emptied by every later one
    before it is filled: creating a table in every maintenance costs catalog writes, and emptying it
    at every commit (ON COMMIT DELETE ROWS) costs every commit of the session a truncation per such
    table, however many views' tables it had collected (server_maintenance.idiffs_body;
    docs/benchmarks.md, "Measurements behind the code"). DELETE leaves dead rows, which temp tables
    never vacuum: a table grown past SCRATCH_TRUNCATE_BYTES is truncated instead. The check runs
    server-side so that an existing table gives no NOTICE. A transaction that fails takes its newly
    created tables with it; the next one creates them again. A new table is analyzed while empty:
    the planner then sizes it by its actual pages, where a table never analyzed counts as at least
    ten pages (a thousand rows and more), which made plans kept by immediate mode's apply function
    scan whole views for one changed group (for V', nearly all of the statement's time)."""
    table = qualified("pg_temp", step.name)
    name = string_literal(table)
    create = f"CREATE TEMP TABLE {table} ON COMMIT PRESERVE ROWS AS {sql(step.source)} WITH NO DATA"
    return (f"IF to_regclass({name}) IS NULL THEN {create}; ANALYZE {table}; "
            f"ELSIF pg_relation_size(to_regclass({name})) > {SCRATCH_TRUNCATE_BYTES} THEN TRUNCATE {table}; "
            f"ELSE DELETE FROM {table}; END IF;")


PLANNER_SWITCHES = ("enable_hashjoin", "enable_mergejoin")
_SAVED = {switch: f"idivm_saved_{switch}" for switch in PLANNER_SWITCHES}
PLANNER_DECLARATIONS = [f"{v} text;" for v in _SAVED.values()]  # the variables by_index_lookups uses


def by_index_lookups(static: str) -> str:
    """PL/pgSQL: a kept MERGE (`static`, a grouped view's per-group sums or a map's increments, as
    immediate mode runs them in small rounds) planned as a nested loop that looks each changed group
    up in the target's unique index.

    The planner sizes the scratch relation the MERGE reads by its pages: one page with two changed
    groups counts as about 120 rows, and for 120 groups it prefers to hash-join them with the whole
    target, read from its first row to its last: for the paper's V' that was most of a single-row
    price update in immediate mode (docs/benchmarks.md, "Measurements behind the code"), where looking two groups up costs
    microseconds. The plan is made at the statement's first execution with hash and merge
    joins switched off for this statement alone (set_config(..., true), then set back to the
    values they had), and kept; the target always has a unique index on the keys matched (the
    view's group keys, a map's keys). The compiled deferred functions' plans of the same MERGE,
    checked the same way (auto_explain, V' and a view of 20,000 groups), were index lookups
    already; they keep the planner's choice."""
    off = ", ".join(f"set_config({string_literal(s)}, 'off', true)" for s in PLANNER_SWITCHES)
    back = ", ".join(f"set_config({string_literal(s)}, {v}, true)" for s, v in _SAVED.items())
    save = "\n".join(f"        {v} := current_setting({string_literal(s)});" for s, v in _SAVED.items())
    return f"{save}\n        PERFORM {off};\n{static}\n        PERFORM {back};"


def _recorded(write: str, r: Record) -> str:
    returning = ", ".join(sql(e) for e in r.returning)
    return (f"WITH {ident(CHANGED)} AS (\n{write}\nRETURNING {returning})\n"
            f"INSERT INTO {qualified('pg_temp', r.into)}\n{sql(r.body)}")


@dataclass(frozen=True)
class Rendered:
    """One step as PostgreSQL runs it, in the parts its callers need, so that none reads the text
    back: `text`, one SQL string (what explain prints and the profiler sends); `write`, the step's write alone,
    and `analyze`, the ANALYZE of the session temp table it filled (None: none), which callers
    that count the rows a write touched run apart; `block`, a scratch table's set-up as PL/pgSQL
    statements (a function body runs them inline: compiling an inline DO block costs every
    execution; `text` has them as a DO block); `merge`, a MERGE whose plan a
    function body keeps as index lookups (by_index_lookups)."""
    text: str
    write: str
    analyze: str | None = None
    block: str | None = None
    merge: bool = False

    def plpgsql(self) -> str:
        """The step as PL/pgSQL statements of a function body (static SQL: the function keeps its
        plan for the session)."""
        return self.block if self.block is not None else self.text + ";"


def render_parts(step: Step) -> Rendered:
    if isinstance(step, CreateScratch):
        block = _create_scratch(step)
        do = f"DO {SCRATCH_TAG}BEGIN {block} END{SCRATCH_TAG}"
        return Rendered(text=do, write=do, block=block)
    record = getattr(step, "record", None)
    write = _recorded(_write(step), record) if record is not None else _write(step)
    merge = isinstance(step, (MergeRows, AddToMap)) and record is None
    if not getattr(step, "analyze", False):
        return Rendered(text=write, write=write, merge=merge)
    bare = step.target.copy()  # a session temp table has no statistics: the planner would guess
    bare.set("alias", None)
    analyze = f"ANALYZE {sql(bare)}"
    return Rendered(text=f"{write};\n{analyze}", write=write, analyze=analyze, merge=merge)


def render_step(step: Step) -> str:
    return render_parts(step).text


def render_program(program: Program) -> list[tuple[Step, Rendered]]:
    """Every step in execution order, in its rendered parts (the compiled functions' bodies)."""
    return [(st, render_parts(st)) for st in program.ordered()]


def render(program: Program) -> list[tuple[Step, str]]:
    """render_program with each step's one SQL string (explain, the profiler)."""
    return [(st, r.text) for st, r in render_program(program)]


def format_statements(statements) -> str:
    """Rendered statements as explain prints them: (phase, purpose, sql) each, in execution order."""
    return "\n".join(f"-- [{i}] {PHASES[phase]}: {purpose}\n{text};"
                     for i, (phase, purpose, text) in enumerate(statements, 1))


def format_rendered(program: Program) -> str:
    """A program's rendering as explain prints it."""
    return format_statements((st.phase, st.purpose, text) for st, text in render(program))
