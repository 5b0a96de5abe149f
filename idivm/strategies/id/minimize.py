"""Pass 4: semantic minimization of composed i-diffs.

Each rewrite is a pure function ``IDiff -> IDiff | None`` applied in order (the
shape of sqlglot's optimizer RULES); ``None`` means the i-diff is provably empty
and its statement is dropped. Here live the rewrites that remove what
composition repeats; id/constraint_rewrites.py holds the paper's semantic rewrites
under the i-diff constraints C1–C3.
"""
from __future__ import annotations

from sqlglot import exp

from ...rules.idiff import IDiff
from . import constraint_rewrites


def drop_true(d: IDiff) -> IDiff:
    """σ_TRUE R -> R."""
    kept = tuple(w for w in d.where if not (isinstance(w, exp.Boolean) and w.this is True))
    return d if kept == d.where else d.derive("minimize: drop TRUE", where=kept, trail=d.trail)


def dedupe_conditions(d: IDiff) -> IDiff:
    """σ_c σ_c R -> σ_c R: composition re-adds the conditions of re-derived inputs."""
    kept = list(dict.fromkeys(d.where))  # equal trees are one condition
    return d if len(kept) == len(d.where) else d.derive("minimize: dedupe", where=tuple(kept), trail=d.trail)


def dedupe_joins(d: IDiff) -> IDiff:
    """R ⋈_I R -> R: a scan joined twice by the same IDs is one scan."""
    joined = tuple(dict.fromkeys(j for j in d.joined if j != d.origin))
    return d if joined == d.joined else d.derive("minimize: dedupe joins", joined=joined, trail=d.trail)


RULES = (dedupe_conditions, dedupe_joins, *constraint_rewrites.RULES, drop_true)


def minimize(d: IDiff) -> IDiff | None:
    for rule in RULES:
        d = rule(d)
        if d is None:
            return None
    return d
