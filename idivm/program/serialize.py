"""The JSON form of a Δ-program, stored in the catalog (idivm.views.program).

Trees are kept as sqlglot's own serialization (Expression.dump / load), so a
program read back is the same tree an engine would have rendered at
registration; a Spark engine renders the stored program, not PostgreSQL text.
"""
from __future__ import annotations

import dataclasses
import json

from sqlglot import exp

from . import steps as S

STEP_TYPES = {cls.__name__: cls for cls in (S.CreateScratch, S.DeleteMatching, S.UpdateMatching, S.InsertRows, S.MergeRows, S.AddToMap)}
FORMAT_VERSION = 1


def _dump(value):
    if isinstance(value, exp.Expression):
        return {"tree": value.dump()}
    if isinstance(value, S.Record):
        return {"record": {f.name: _dump(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return value


def _load(value):
    if isinstance(value, dict) and "tree" in value:
        return exp.Expression.load(value["tree"])
    if isinstance(value, dict) and "record" in value:
        return S.Record(**{k: _load(v) for k, v in value["record"].items()})
    if isinstance(value, list):
        return [_load(v) for v in value]
    return value


def to_json(program: S.Program) -> str:
    steps = []
    for step in program.steps:
        fields = {f.name: _dump(getattr(step, f.name)) for f in dataclasses.fields(step)}
        steps.append({"step": type(step).__name__, **fields})
    refills = [{f.name: _dump(getattr(r, f.name)) for f in dataclasses.fields(r)} for r in program.refills]
    return json.dumps({"version": FORMAT_VERSION, "strategy": program.strategy, "steps": steps,
                       "derivations": program.derivations, "refills": refills}, separators=(",", ":"))


def targets(text: str) -> list[exp.Expression]:
    """The targets of a stored program's steps, loading no other tree (dropping a view needs only
    these, and a whole program of an outer-join view is slow to load)."""
    return [exp.Expression.load(raw["target"]["tree"]) for raw in json.loads(text)["steps"]
            if isinstance(raw.get("target"), dict) and "tree" in raw["target"]]


def from_json(text: str) -> S.Program:
    data = json.loads(text)
    out = S.Program(strategy=data["strategy"], derivations=list(data["derivations"]))
    for raw in data["steps"]:
        cls = STEP_TYPES[raw.pop("step")]
        args = {k: _load(v) for k, v in raw.items()}
        if "assignments" in args:
            args["assignments"] = [tuple(a) for a in args["assignments"]]
        out.steps.append(cls(**args))
    out.refills = [S.Refill(**{k: _load(v) for k, v in raw.items()}) for raw in data["refills"]]
    return out
