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


def _target(t: exp.Table) -> str:
    """`schema.name AS alias` of a write's target."""
    return sql(t)


def _using(kw: str, items: list[exp.Expression]) -> str:
    return f"\n{kw} {', '.join(sql(i) for i in items)}" if items else ""


def _write(step: Step) -> str:
    if isinstance(step, DeleteMatching):
        return f"DELETE FROM {_target(step.target)}{_using('USING', step.using)}\nWHERE {sql(step.condition)}"
    if isinstance(step, UpdateMatching):
        sets = ", ".join(f"{ident(c)} = {sql(v)}" for c, v in step.assignments)
        return f"UPDATE {_target(step.target)} SET {sets}{_using('FROM', step.using)}\nWHERE {sql(step.condition)}"
    if isinstance(step, InsertRows):
        cols = ", ".join(ident(c) for c in step.columns)
        text = f"INSERT INTO {_target(step.target)} ({cols})\n{sql(step.source)}"
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
    UPDATE adds), then the rows that reached 0 deleted (a second statement: the main query of a
    data-modifying CTE chain cannot see the rows its CTEs changed). A map without keys is keyed by a
    constant column (MAP_UNIT) so that it too has a unique key."""
    keys = step.keys or [MAP_UNIT]
    v = ident(step.value)
    cols = ", ".join(ident(k) for k in keys)
    src_keys = ", ".join(f"s.{ident(k)}" for k in step.keys) if step.keys else f"TRUE AS {ident(MAP_UNIT)}"
    group = f" GROUP BY {', '.join(f's.{ident(k)}' for k in step.keys)}" if step.keys else ""
    bare = step.target.copy()
    bare.set("alias", None)
    target = sql(bare)
    return (f"INSERT INTO {target} AS m ({cols}, {v})\nSELECT * FROM (SELECT {src_keys}, sum(s.{v}) AS {v} "
            f"FROM ({sql(step.source)}) AS s{group}) AS i WHERE i.{v} <> 0\n"
            f"ON CONFLICT ({cols}) DO UPDATE SET {v} = m.{v} + excluded.{v};\n"
            f"DELETE FROM {target} WHERE {v} = 0")


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


def format_rendered(program: Program) -> str:
    """The rendered script as explain prints it."""
    lines = []
    for i, (st, text) in enumerate(render(program), 1):
        lines.append(f"-- [{i}] {PHASES[st.phase]}: {st.purpose}")
        lines.append(text + ";")
    return "\n".join(lines)
