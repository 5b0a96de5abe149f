"""The JSON form of a Δ-program, stored in the catalog (idivm.views.program).

Trees are kept as trees, not as SQL text, so a program read back is the same tree an engine would
have rendered at registration (tree equality: every argument, placeholder marks included); a Spark
engine renders the stored program, not PostgreSQL text. A node is a JSON object naming its sqlglot
class under the key "" beside its arguments. Not sqlglot's own `Expression.dump`, which names
each node's module path and parent index in a flat list: every registration writes its program,
and that form made an outer-join view's program 2.6 times as large and twice as slow to write and read
(docs/benchmarks.md, "The stored program's JSON form"). What sqlglot records beside the arguments
(a cast's derived type, the parser's positions) is not kept: no engine reads it back.
"""
from __future__ import annotations

import dataclasses
import json

from sqlglot import exp

from ..errors import IdivmError
from . import steps as S

STEP_TYPES = {cls.__name__: cls for cls in (S.CreateScratch, S.DeleteMatching, S.UpdateMatching, S.InsertRows, S.MergeRows, S.AddToMap)}
FORMAT_VERSION = 2
CLASS = ""  # the key naming a node's class: no sqlglot argument is called that


def _tree(node: exp.Expression) -> dict:
    out = {CLASS: type(node).__name__}
    for key, value in node.args.items():
        if value is None:
            continue
        if type(value) is list:
            out[key] = [_tree(v) if isinstance(v, exp.Expression) else v for v in value]
        elif isinstance(value, exp.Expression):
            out[key] = _tree(value)
        elif isinstance(value, exp.DType):
            out[key] = {"DType": value.value}
        else:
            out[key] = value
    return out


def _node(value):
    if type(value) is dict:
        if CLASS in value:
            return getattr(exp, value[CLASS])(**{k: _node(v) for k, v in value.items() if k != CLASS})
        return exp.DType(value["DType"])
    if type(value) is list:
        return [_node(v) for v in value]
    return value


def _dump(value):
    if isinstance(value, exp.Expression):
        return {"tree": _tree(value)}
    if isinstance(value, S.Record):
        return {"record": {f.name: _dump(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return value


def _load(value):
    if isinstance(value, dict) and "tree" in value:
        return _node(value["tree"])
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
                       "derivations": program.derivations, "refills": refills}, separators=(",", ":"), ensure_ascii=False)


def targets(text: str) -> list[exp.Expression]:
    """The targets of a stored program's steps, loading no other tree (dropping a view needs only
    these, and a whole program of an outer-join view is slow to load)."""
    return [_node(raw["target"]["tree"]) for raw in json.loads(text)["steps"]
            if isinstance(raw.get("target"), dict) and "tree" in raw["target"]]


def _checked(data: dict) -> dict:
    if data.get("version") != FORMAT_VERSION:
        raise IdivmError(f"this view's stored program is of format {data.get('version')}, which this idivm "
                         f"does not read (it reads {FORMAT_VERSION}): register the view again")
    return data


def from_json(text: str) -> S.Program:
    data = _checked(json.loads(text))
    out = S.Program(strategy=data["strategy"], derivations=list(data["derivations"]))
    for raw in data["steps"]:
        cls = STEP_TYPES[raw.pop("step")]
        args = {k: _load(v) for k, v in raw.items()}
        if "assignments" in args:
            args["assignments"] = [tuple(a) for a in args["assignments"]]
        out.steps.append(cls(**args))
    out.refills = [S.Refill(**{k: _load(v) for k, v in raw.items()}) for raw in data["refills"]]
    return out
