"""The Δ-program printer: what `idivm explain` shows before the engine's rendering.

Each step prints as its phase and purpose, then what it does in the IR's own
words (delete / update / insert / create scratch, target, from, where, keyed by)
with abstract relations shown by what they stand for: ``Δ[public.parts]`` for
an i-diff instance, ``public.parts`` for a base table in the post-state.
"""
from __future__ import annotations

from sqlglot import exp

from .relations import bind_relations
from .steps import PHASES, AddToMap, CreateScratch, DeleteMatching, InsertRows, MergeRows, Program, Record, Step, UpdateMatching


def _label_table(rel) -> exp.Table:
    return exp.Table(this=exp.to_identifier(rel.label(), quoted=False))


def show(tree: exp.Expression) -> str:
    """One tree in readable form (relations by label); newlines kept for long queries."""
    return bind_relations(tree, _label_table).sql("postgres", pretty=False)


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _record(r: Record | None) -> list[str]:
    if r is None:
        return []
    return [f"  record  changed rows ({', '.join(show(e) for e in r.returning)}) into scratch {r.into}:",
            _indent(show(r.body))]


def format_step(step: Step) -> list[str]:
    if isinstance(step, CreateScratch):
        return [f"  create scratch {step.name} with the columns of:", _indent(show(step.source))]
    if isinstance(step, DeleteMatching):
        return ([f"  delete  {show(step.target)}", f"  using   {', '.join(show(u) for u in step.using)}",
                 f"  where   {show(step.condition)}"] + _record(step.record))
    if isinstance(step, UpdateMatching):
        sets = ", ".join(f"{c} = {show(v)}" for c, v in step.assignments)
        return ([f"  update  {show(step.target)}", f"  set     {sets}",
                 f"  using   {', '.join(show(u) for u in step.using)}", f"  where   {show(step.condition)}"]
                + _record(step.record))
    if isinstance(step, InsertRows):
        keyed = ""
        if step.unique_on:
            keyed = f"  (skipping rows whose ({', '.join(step.unique_on)}) exist"
            keyed += f" where {show(step.unique_where)})" if step.unique_where is not None else ")"
        analyzed = ["  then gather its statistics"] if step.analyze else []
        return ([f"  insert  {show(step.target)} ({', '.join(step.columns)}){keyed}", _indent(show(step.source))]
                + _record(step.record) + analyzed)
    if isinstance(step, MergeRows):
        out = [f"  merge   {show(step.target)}", f"  using   ({show(step.source)}) AS {step.source_alias}",
               f"  on      {show(step.condition)}"]
        if step.delete_when is not None:
            out.append(f"  matched and {show(step.delete_when)}: delete")
        if step.assignments:
            out.append("  matched: set " + ", ".join(f"{c} = {show(v)}" for c, v in step.assignments))
        if step.columns:
            when = f" and {show(step.insert_when)}" if step.insert_when is not None else ""
            out.append(f"  not matched{when}: insert ({', '.join(step.columns)}) values "
                       f"({', '.join(show(v) for v in step.values)})")
        return out
    if isinstance(step, AddToMap):
        nullable = f" (NULLs one key: {', '.join(step.nullable)})" if step.nullable else ""
        return [f"  add to  {show(step.target)} [{', '.join(step.keys)}] ({step.value} +=){nullable}",
                _indent(show(step.source))]
    raise TypeError(f"no printer for step {type(step).__name__}")


def format_program(program: Program) -> str:
    lines = []
    for i, step in enumerate(program.ordered(), 1):
        driven = ("" if step.driven_by is None else f"  [driven by Δ[{step.driven_by}]]" if isinstance(step.driven_by, str)
                  else f"  [driven by Δ of captured table {step.driven_by}]")
        lines.append(f"[{i}] {PHASES[step.phase]} ({step.role}): {step.purpose}{driven}")
        lines += format_step(step)
    return "\n".join(lines)
