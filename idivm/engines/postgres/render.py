"""Rendering Δ-program steps as PostgreSQL statements.

This is the one place that knows PostgreSQL's forms of the steps: ``DELETE ...
USING``, ``UPDATE ... FROM``, ``INSERT ... ON CONFLICT DO NOTHING`` (skip rows
whose IDs exist), data-modifying CTEs with ``RETURNING`` (a Record), session
temp tables for i-diff instances and scratch relations (``pg_temp``, dropped or
emptied at commit). Abstract relations are bound here
(program/relations.py): Δ[t] is ``pg_temp.idivm_delta_<captured id>``.
"""
from __future__ import annotations

from sqlglot import exp

from ...program import relations as R
from ...program.steps import PHASES, AddToMap, CreateScratch, DeleteMatching, InsertRows, Program, Record, Step, UpdateMatching
from ...sqltext import DIALECT, ident, qualified, table_expr

CHANGED = "changed"  # the CTE holding a recorded write's RETURNING rows
MAP_UNIT = "__unit"  # the key column of a map without keys


def delta_table_name(captured_id: int) -> str:
    return f"idivm_delta_{int(captured_id)}"


def delta_table(captured_id: int) -> str:
    """The per-maintenance i-diff instance table of one captured base table (quoted)."""
    return qualified("pg_temp", delta_table_name(captured_id))


def _bind(rel: R.Relation) -> exp.Expression:
    if rel.kind == R.DELTA:
        return table_expr("pg_temp", delta_table_name(int(rel.name)))
    if rel.kind == R.SCRATCH:
        return table_expr("pg_temp", rel.name)
    if rel.kind == R.RETURNED:
        return table_expr(None, CHANGED)
    return table_expr(rel.schema, rel.name)


def sql(tree: exp.Expression) -> str:
    """A tree with its relations bound, as PostgreSQL text."""
    return R.bind_relations(tree, _bind).sql(DIALECT)


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
    if isinstance(step, AddToMap):
        return _add_to_map(step)
    raise TypeError(f"the PostgreSQL engine cannot render {type(step).__name__}")


def _add_to_map(step: AddToMap) -> str:
    """Two statements: the source's values summed per key and upserted (INSERT ... ON CONFLICT DO
    UPDATE adds), then the rows of those keys that reached 0 deleted (a second statement: the main
    query of a data-modifying CTE chain cannot see the rows its CTEs changed). A map without keys is
    keyed by a constant column (MAP_UNIT) so that it too has a unique key; one whose keys may be
    NULL has a unique index NULLS NOT DISTINCT (engines/postgres/materialize.py) for the upsert, and
    the delete matches NULL keys by IS NULL, which that index serves too."""
    keys = step.keys or [MAP_UNIT]
    v = ident(step.value)
    cols = ", ".join(ident(k) for k in keys)
    bare = step.target.copy()
    bare.set("alias", None)
    target, source = sql(bare), sql(step.source)
    if not step.keys:
        return (f"INSERT INTO {target} AS m ({cols}, {v})\nSELECT * FROM (SELECT TRUE AS {ident(MAP_UNIT)}, "
                f"sum(s.{v}) AS {v} FROM ({source}) AS s) AS i WHERE i.{v} <> 0\n"
                f"ON CONFLICT ({cols}) DO UPDATE SET {v} = m.{v} + excluded.{v};\n"
                f"DELETE FROM {target} WHERE {v} = 0")
    src_keys = ", ".join(f"s.{ident(k)}" for k in step.keys)
    match = " AND ".join(f"(m.{ident(k)} = c.{ident(k)} OR (m.{ident(k)} IS NULL AND c.{ident(k)} IS NULL))"
                         if k in step.nullable else f"m.{ident(k)} = c.{ident(k)}" for k in step.keys)
    return (f"INSERT INTO {target} AS m ({cols}, {v})\nSELECT * FROM (SELECT {src_keys}, sum(s.{v}) AS {v} "
            f"FROM ({source}) AS s GROUP BY {src_keys}) AS i WHERE i.{v} <> 0\n"
            f"ON CONFLICT ({cols}) DO UPDATE SET {v} = m.{v} + excluded.{v};\n"
            f"DELETE FROM {target} AS m USING (SELECT DISTINCT {src_keys} FROM ({source}) AS s) AS c "
            f"WHERE {match} AND m.{v} = 0")


def _recorded(write: str, r: Record) -> str:
    returning = ", ".join(sql(e) for e in r.returning)
    return (f"WITH {ident(CHANGED)} AS (\n{write}\nRETURNING {returning})\n"
            f"INSERT INTO {qualified('pg_temp', r.into)}\n{sql(r.body)}")


def render_step(step: Step) -> str:
    if isinstance(step, CreateScratch):
        return (f"CREATE TEMP TABLE {qualified('pg_temp', step.name)} ON COMMIT DROP AS {sql(step.source)} "
                "WITH NO DATA")
    text = _write(step)
    record = getattr(step, "record", None)
    return _recorded(text, record) if record is not None else text


def render(program: Program) -> list[tuple[Step, str]]:
    """Every step in execution order with its PostgreSQL text."""
    return [(st, render_step(st)) for st in program.ordered()]


def format_statements(statements) -> str:
    """Rendered statements as explain prints them: (phase, purpose, sql) each, in execution order."""
    return "\n".join(f"-- [{i}] {PHASES[phase]}: {purpose}\n{text};"
                     for i, (phase, purpose, text) in enumerate(statements, 1))


def format_rendered(program: Program) -> str:
    """A program's rendering as explain prints it."""
    return format_statements((st.phase, st.purpose, text) for st, text in render(program))
