"""SCAN(R): a base-table i-diff enters the plan unchanged (IDs: key(R))."""
from __future__ import annotations

from ..algebra.plan import Scan
from .idiff import DiffSchema, IDiff


def rule(s: Scan, schema: DiffSchema) -> IDiff:
    return IDiff(kind=schema.kind, origin=s.alias, schema=schema, trail=(f"SCAN {s.alias}: {schema.label()}",))
