"""Pass 4: semantic minimization of composed i-diffs.

Each rewrite is a pure function IDiff -> IDiff, applied in order (the shape
of sqlglot's optimizer RULES). Besides removing what composition repeats, it
applies Figure 8's semijoin rewrite under C3: ``R ⋉_I σ Δu -> σ Δu`` when the
i-diff carries the post-state of every attribute of R (ours always do: the
instance stores full pre- and post-images), which removes a base-table access.
"""
from __future__ import annotations

from sqlglot import exp

from ..rules.idiff import IDiff


def drop_true(d: IDiff) -> IDiff:
    """σ_TRUE R -> R."""
    kept = tuple(w for w in d.where if not (isinstance(w, exp.Boolean) and w.this is True))
    return d if kept == d.where else d.derive("minimize: drop TRUE", where=kept, trail=d.trail)


def dedupe_conditions(d: IDiff) -> IDiff:
    """σ_c σ_c R -> σ_c R: composition re-adds the conditions of re-derived inputs."""
    seen: set[str] = set()
    kept = []
    for w in d.where:
        key = w.sql("postgres")
        if key not in seen:
            seen.add(key)
            kept.append(w)
    return d if len(kept) == len(d.where) else d.derive("minimize: dedupe", where=tuple(kept), trail=d.trail)


def dedupe_joins(d: IDiff) -> IDiff:
    """R ⋈_I R -> R: a scan joined twice by the same IDs is one scan."""
    joined = tuple(dict.fromkeys(j for j in d.joined if j != d.origin))
    return d if joined == d.joined else d.derive("minimize: dedupe joins", joined=joined, trail=d.trail)


def semijoin_to_diff(d: IDiff) -> IDiff:
    """R^post ⋉_I Δ -> Δ (Figure 8, C3): the i-diff's post-images equal R's rows for its IDs."""
    if not d.semijoined:
        return d
    return d.derive(f"minimize: {d.origin}^post ⋉_I Δ -> Δ (C3)", semijoined=False)


RULES = (drop_true, dedupe_conditions, dedupe_joins, semijoin_to_diff)


def minimize(d: IDiff) -> IDiff:
    for rule in RULES:
        d = rule(d)
    return d
