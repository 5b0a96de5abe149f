"""`--engine auto`: which engine maintains a view's next batch, by a cost model (docs/spark.md,
"Choosing the engine").

Both estimates are for the batch waiting now (`pending` logged changes):

    PostgreSQL  pg_fixed + n * c
    Spark       [start, if no warm session] + spark_fixed + n * (c * apply_share + spark_per_change / cores)

c is the view's own cost per change in PostgreSQL, measured by its last maintenance when that
batch was large enough for fixed costs not to dominate (at least TRUSTED_BATCH changes), else a
default. Under the Spark engine, PostgreSQL still builds the i-diffs and applies the rows Spark
computed (apply_share of c); Spark computes the rest on `cores` cores at spark_per_change seconds
per change and core, after a fixed cost per maintenance (its jobs, JDBC connections, the copy's
round trips) and, in a process whose session is cold, the session's start. A view with nothing
Spark can compute (its program's diff sources all read the view, a cache or a map) always stays
on PostgreSQL. The constants were measured on this project's 2-core test machine
(scripts/bench_spark.py, docs/benchmarks.md) and can be set per deployment through
IDIVM_COST_MODEL ("name=value" pairs separated by spaces).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, fields, replace

from ..catalog import repository as catalog
from ..engines.spark.executor import computes_anything
from ..engines.spark.session import is_warm
from ..errors import IdivmError
from ..program.serialize import from_json
from .status import view_statuses

TRUSTED_BATCH = 1_000


@dataclass(frozen=True)
class CostModel:
    # measured with scripts/bench_spark.py on view V (docs/benchmarks.md, "The Spark engine")
    pg_fixed_s: float = 0.03  # a maintenance of a small batch (200 changes at scale 0.02: 36 ms)
    pg_per_change_s: float = 25e-6  # default c (10,000 changes at scale 0.02: 249 ms; 33-79 µs at scale 0.2)
    spark_start_s: float = 13.0  # a session's start (13.3 s measured)
    spark_fixed_s: float = 1.0  # per maintenance on a warm session (0.85-1.09 s measured)
    spark_per_change_s: float = 25e-6  # per change and core, Spark's part (17 µs on 1 core, 29 on 2, at 5M changes)
    apply_share: float = 0.9  # of c, still paid in PostgreSQL (i-diffs, apply): 78% at 5M changes, 108% at 1M

    @classmethod
    def from_env(cls) -> "CostModel":
        model = cls()
        names = {f.name for f in fields(cls)}
        for pair in os.environ.get("IDIVM_COST_MODEL", "").split():
            name, _, value = pair.partition("=")
            try:
                if name not in names:
                    raise ValueError
                model = replace(model, **{name: float(value)})
            except ValueError:
                raise IdivmError(f"IDIVM_COST_MODEL: {pair!r} is not name=number with one of: {', '.join(sorted(names))}") \
                    from None
        return model


@dataclass(frozen=True)
class EngineChoice:
    engine: str
    postgres_s: float
    spark_s: float | None  # None: Spark can compute nothing of this view
    why: str

    def __str__(self) -> str:
        spark = f"{self.spark_s:.2f} s" if self.spark_s is not None else "n/a"
        return f"{self.engine} (estimated postgres {self.postgres_s:.2f} s, spark {spark}: {self.why})"


def per_change_cost(last_duration_ms: float | None, last_changes: int | None, model: CostModel) -> tuple[float, str]:
    """The view's cost per change in PostgreSQL, and where it comes from."""
    if last_duration_ms is not None and last_changes and last_changes >= TRUSTED_BATCH:
        c = max(last_duration_ms / 1000 - model.pg_fixed_s, 0.0) / last_changes
        return c, f"measured {c * 1e6:.1f} µs/change over its last {last_changes} changes"
    return model.pg_per_change_s, f"default {model.pg_per_change_s * 1e6:.1f} µs/change"


def postgres_estimate(pending: int, per_change: float, model: CostModel) -> float:
    return model.pg_fixed_s + pending * per_change


def choose_engine(pending: int, per_change: float, offloadable: bool, cores: int, warm: bool,
                  model: CostModel) -> EngineChoice:
    """The cheaper engine for a batch of `pending` changes (module docstring)."""
    pg = postgres_estimate(pending, per_change, model)
    if not offloadable:
        return EngineChoice("postgres", pg, None, "Spark can compute none of its diff sources")
    spark = ((0.0 if warm else model.spark_start_s) + model.spark_fixed_s
             + pending * (per_change * model.apply_share + model.spark_per_change_s / max(cores, 1)))
    session = "warm session" if warm else "cold session"
    if spark < pg:
        return EngineChoice("spark", pg, spark, f"{pending} changes, {cores} Spark cores, {session}")
    return EngineChoice("postgres", pg, spark, f"{pending} changes, {cores} Spark cores, {session}")


def break_even(per_change: float, cores: int, warm: bool, model: CostModel) -> int | None:
    """The smallest batch for which Spark is estimated cheaper (None: never, at this many cores)."""
    saving = per_change * (1 - model.apply_share) - model.spark_per_change_s / max(cores, 1)
    if saving <= 0:
        return None
    fixed = (0.0 if warm else model.spark_start_s) + model.spark_fixed_s - model.pg_fixed_s
    return max(int(fixed / saving) + 1, 0)


@functools.lru_cache(maxsize=256)
def _offloadable(program_json: str) -> bool:
    """Whether Spark computes any part of a stored program (parsed once per program text: a
    scheduler asks before every maintenance)."""
    return computes_anything(from_json(program_json))


def choice_for(conn, row, settings, model: CostModel | None = None) -> EngineChoice:
    """The choice for a view's waiting batch (`row`: its catalog row; `settings`: the Spark
    settings in effect). Where Spark cannot run here (pyspark, Java or the JDBC jar missing) the
    choice is PostgreSQL, saying why."""
    model = model or CostModel.from_env()
    [status] = view_statuses(conn, view_ids={row.id})
    c, _ = per_change_cost(row.last_duration_ms, row.last_changes, model)
    try:
        settings.check()
    except IdivmError as missing:
        return EngineChoice("postgres", postgres_estimate(status.state.pending, c, model), None,
                            f"Spark is not available here ({missing})")
    text = catalog.program_of(conn, row.id)
    offloadable = text is not None and _offloadable(text)
    return choose_engine(status.state.pending, c, offloadable, settings.cores(), is_warm(settings), model)


def engine_summary(conn, row, settings, model: CostModel | None = None) -> str:
    """What explain prints of a view's engine: its policy, the cost model's inputs and choice for the
    batch waiting now, and from which batch size on Spark would be cheaper."""
    model = model or CostModel.from_env()
    policy = row.policy_engine or f"none (IDIVM_ENGINE, else postgres: now {os.environ.get('IDIVM_ENGINE') or 'postgres'})"
    choice = choice_for(conn, row, settings, model)
    c, source = per_change_cost(row.last_duration_ms, row.last_changes, model)
    lines = [f"engine policy: {policy}",
             f"--engine auto for the waiting batch: {choice}",
             f"cost per change in PostgreSQL: {source}"]
    if choice.spark_s is not None:
        cores = settings.cores()
        for warm in (True, False):
            n = break_even(c, cores, warm, model)
            session = "a warm Spark session" if warm else "a cold one (a new process)"
            lines.append(f"Spark is estimated cheaper with {session} from {n:,} changes" if n is not None else
                         f"Spark is never estimated cheaper with {session} at {cores} cores (its cost per change "
                         "exceeds what it saves PostgreSQL)")
    return "\n".join(lines)
