"""A compiled program bound to one registered view: the step the compiler leaves to registration.

The compiler (frontend, strategies) knows no catalog id, so one compilation serves a dry run
(`idivm explain --sql`) and a registration alike. Its program names a base table's Δ and the table
whose i-diff drives a step by the table (relations.table_key), the view's own tables symbolically
(names.own_table) and scratch relations by purpose. Registration, once the catalog has given the view
its id and each base table its captured id, binds them here and stores the bound program, which
is what every engine renders: Δ by captured id (the engines keep one i-diff instance per captured
table), own tables by the view's id (idivm/names.py, own_table), scratch relations suffixed with
the view's id (immediate mode maintains several views in one transaction, each with its own).
"""
from __future__ import annotations

from dataclasses import fields, replace

from sqlglot import exp

from ..names import own_part, own_table
from . import relations as R
from .steps import CreateScratch, Program, Record, Step


def scratch_name(view_id: int, name: str) -> str:
    return f"{name}_{int(view_id)}"


class Binding:
    """One view's ids: its own, and the captured id of each base table it reads (by table_key)."""

    def __init__(self, view_id: int, captured: dict[tuple[str, str], int]):
        self.view_id = view_id
        self.captured = {R.table_key(schema, name): cid for (schema, name), cid in captured.items()}
        self.made: dict[int, exp.Table] = {}

    def relation(self, rel: R.Relation, alias: exp.TableAlias | None) -> exp.Table | None:
        """The bound table of a symbolic relation, or None when it is bound already (a base table)."""
        if rel.kind == R.DELTA:
            out = R.captured_delta(self.captured[rel.name], of=rel.name)
        elif rel.kind == R.VIEW and rel.schema is None:
            out = R.view(*own_table(self.view_id, own_part(rel.name)))
        elif rel.kind == R.SCRATCH:
            out = R.scratch(scratch_name(self.view_id, rel.name))
        else:
            return None
        if alias is not None:
            out.set("alias", alias.copy())
        return out

    def tree(self, tree: exp.Expression) -> exp.Expression:
        """The tree with its relations bound, in place (a tree that is itself a relation: its bound
        table). Strategies hand one tree to several steps: a table this binding made is never
        bound again."""
        for node in list(tree.find_all(exp.Table)):
            if id(node) in self.made:
                continue
            rel = R.relation_of(node)
            bound = self.relation(rel, node.args.get("alias")) if rel is not None else None
            if bound is not None:
                self.made[id(bound)] = bound  # kept, so that no other node takes its id
                if node is tree:
                    return bound
                node.replace(bound)
        return tree

    def value(self, value):
        if isinstance(value, exp.Expression):
            return self.tree(value)
        if isinstance(value, Record):
            return Record(into=scratch_name(self.view_id, value.into), returning=[self.tree(r) for r in value.returning],
                          body=self.tree(value.body))
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def step(self, step: Step) -> Step:
        changes = {f.name: self.value(getattr(step, f.name)) for f in fields(step)
                   if f.name not in ("driven_by", "name")}
        if step.driven_by is not None:  # a part's changes are no captured table's: the step always runs
            changes["driven_by"] = None if R.is_part(step.driven_by) else self.captured[step.driven_by]
        if isinstance(step, CreateScratch):
            changes["name"] = scratch_name(self.view_id, step.name)
        return replace(step, **changes)


def bind(program: Program, view_id: int, captured: dict[tuple[str, str], int]) -> Program:
    """The program with every symbolic name bound to the view's ids (captured: (schema, table) ->
    captured table id, for every base table the view reads). Its trees are bound in place, not
    copied (a copy of every tree was a tenth of a registration's client time): a compiled program
    is bound once, by the registration that compiled it (compiler.Compilation.bound)."""
    b = Binding(view_id, captured)
    return Program(strategy=program.strategy, steps=[b.step(s) for s in program.steps],
                   derivations=list(program.derivations))
