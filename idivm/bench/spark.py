"""The Spark engine against the PostgreSQL engine, maintaining the same view from the same batches.

The paper's devices / parts / devices_parts (--scale 0.02 = 100k devices and parts, 1M links;
--scale 0.2 = 1M and 10M links; prices numeric(10,2), which Spark carries exactly) and its view
V (an SPJ join, phones only). One copy of V per engine and Spark master (--masters, e.g.
local[1],local[2] for the scaling from one core to two) is registered; each round applies one
batch, then maintains every copy, in alternating order. A batch of n changes updates the prices of
n/2 parts (at most every part) and inserts the rest as new links. Each Spark master's
session is started (and warmed by a first maintenance) before its timed runs: a scheduler keeps
it warm; the start is reported apart. Per run the breakdown is: building the i-diffs in
PostgreSQL, Spark (its reads inside the snapshot, its jobs, and of that the copy of its rows back
into PostgreSQL, and with --separate-reads the reads), and the apply (PostgreSQL's statements). Every copy is verified against
recomputation at the end, and the effective changes of each batch are counted by the reports.
"""
from __future__ import annotations

import os
import random
import sys
import time

import psycopg

from .. import api
from ..errors import IdivmError, first_line
from .common import batches_parser, machine, timed_load, print_table, pyplot, save, scratch_database, summary, write_json

VIEW = ("SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
        "WHERE category = 'phone'")


def load(db: psycopg.Connection, scale: float) -> dict:
    n = max(int(5_000_000 * scale), 100)
    db.execute("SELECT setseed(0.42)")
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric(10,2) NOT NULL)")
    db.execute("CREATE TABLE devices_parts (did int NOT NULL, pid int NOT NULL, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices SELECT g, CASE WHEN random() < 0.2 THEN 'phone' ELSE 'tablet' END "
               "FROM generate_series(1, %s) g", (n,))
    db.execute("INSERT INTO parts SELECT g, round((random() * 100)::numeric, 2) FROM generate_series(1, %s) g", (n,))
    db.execute("INSERT INTO devices_parts SELECT DISTINCT d, 1 + ((d::bigint * 7919 + k * 104729) %% %s) "
               "FROM generate_series(1, %s) d, generate_series(1, 10) k", (n, n))
    db.execute("CREATE INDEX ON devices_parts (pid)")
    db.execute("VACUUM ANALYZE")
    return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("devices", "parts", "devices_parts")}


def _batch(db, rng: random.Random, sizes: dict, n: int, done: int) -> None:
    """n changes: price updates of min(n // 2, parts) parts, the rest as new links (existing devices
    and parts, pairs neither the load nor the `done` earlier batches made). Half the batch is new
    links so that every batch gives Spark rows to join: the id strategy's price updates alone need
    no join, and Spark then computes nothing (program/kinds_needed.py, yields_nothing)."""
    parts = sizes["parts"]
    pids = rng.sample(range(1, parts + 1), min(n // 2, parts))
    db.execute("UPDATE parts SET price = price + 1 WHERE pid = ANY(%s)", (pids,))
    extra = n - len(pids)
    if extra > 0:
        devices = sizes["devices"]
        k0 = 11 + 10 * done
        per = -(-extra // devices)  # new links per device
        db.execute("INSERT INTO devices_parts SELECT d, 1 + ((d::bigint * 7919 + k * 104729) %% %s) "
                   "FROM generate_series(1, %s::int) d, generate_series(%s::int, %s::int) k LIMIT %s ON CONFLICT DO NOTHING",
                   (parts, devices, k0, k0 + per - 1, extra))


def _runs(masters: list[str]) -> list[tuple[str, str | None]]:
    """(view name, Spark master or None for the PostgreSQL engine)."""
    return [("v_postgres", None)] + [(f"v_spark_{i}", m) for i, m in enumerate(masters)]


def _session(dsn: str, master: str) -> None:
    """Make `master` the Spark master of the next runs, its session started (untimed)."""
    from ..engines.spark.session import spark_session
    from ..engines.spark.settings import SparkSettings

    os.environ["IDIVM_SPARK_MASTER"] = master
    spark_session(SparkSettings.from_env(dsn))


def _maintain(engine, dsn: str, view: str, master: str | None):
    """One maintenance of `view`, on Spark with `master` if given (its session started beforehand,
    untimed): (seconds, report)."""
    if master is not None:
        _session(dsn, master)
    t0 = time.perf_counter()
    report = engine.maintain(view, engine="spark" if master else "postgres")
    return time.perf_counter() - t0, report


def _parts(seconds: float, report) -> dict:
    b = report.breakdown
    spark = b.get("spark", 0.0)
    return {"total": seconds, "i-diffs": b["i-diffs"], "spark": spark, "spark reads": b.get("spark reads", 0.0),
            "spark copy": b.get("spark copy", 0.0),
            "apply": b["view"] + b["cache"], "other": seconds - b["i-diffs"] - spark - b["view"] - b["cache"]}


def run(dsn: str | None = None, scale: float = 0.02, batches: str = "200,10000", rounds: int = 3,
        out: str = "bench-results/bench_spark.json", keep: bool = False, masters: str = "local[2]",
        strategy: str = "id", separate_reads: bool = False) -> int:
    sizes_of_batches = [int(b) for b in batches.split(",") if b.strip()]
    spark_masters = [m.strip() for m in masters.split(",") if m.strip()]
    runs = _runs(spark_masters)
    saved = {k: os.environ.get(k) for k in ("IDIVM_SPARK_MASTER", "IDIVM_SPARK_SEPARATE_READS")}
    if separate_reads:  # every read materialized before Spark computes (engines/spark/executor.py)
        os.environ["IDIVM_SPARK_SEPARATE_READS"] = "1"
    starts: dict[str, float] = {}
    try:
        return _run(dsn, scale, sizes_of_batches, rounds, out, keep, runs, spark_masters, starts, strategy)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(dsn, scale, sizes_of_batches, rounds, out, keep, runs, spark_masters, starts, strategy) -> int:
    with scratch_database(dsn, keep) as (bench_dsn, version):
        from ..engines.spark.settings import SparkSettings

        SparkSettings.from_env(bench_dsn).check()  # before minutes of loading
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            sizes = timed_load(load, db, scale)
            engine = api.connect(bench_dsn)
            fills = {}
            for view, master in runs:  # the initial fill, on the engine that then maintains the copy
                if master is not None:
                    _session(bench_dsn, master)
                t0 = time.perf_counter()
                engine.register_view(view, VIEW, strategy=strategy, engine="spark" if master else "postgres")
                fills[master or "postgres"] = time.perf_counter() - t0
                engine.set_policy(view, recompute="never")  # the engines' Δ-scripts compared, never recomputed instead
            rng = random.Random(7)
            db.execute("UPDATE parts SET price = price + 1 WHERE pid = 1")
            for view, master in runs:  # each session started and warmed, untimed
                t0 = time.perf_counter()
                _maintain(engine, bench_dsn, view, master)
                starts[master or "postgres"] = time.perf_counter() - t0
            timings = {(v, n): [] for v, _ in runs for n in sizes_of_batches}
            failures: dict[tuple[str, int], str] = {}
            changes = {n: [] for n in sizes_of_batches}
            for n in sizes_of_batches:
                for r in range(rounds):
                    _batch(db, rng, sizes, n, sum(map(len, changes.values())))  # a new round of links each time
                    for view, master in (runs if r % 2 == 0 else runs[::-1]):
                        try:
                            seconds, report = _maintain(engine, bench_dsn, view, master)
                        except Exception as e:  # reported, and the sweep goes on (the run rolled back)
                            failures.setdefault((view, n), first_line(e))
                            continue
                        timings[(view, n)].append(_parts(seconds, report))
                        if master is None:
                            changes[n].append(report.changes)
                    print(f"  batch {n}: round {r + 1} of {rounds} done", flush=True)
            equal = {v: engine.verify(v).ok for v, _ in runs}
            engine.close()
    results, rows = [], []
    for n in sizes_of_batches:
        entry = {"batch": n, "effective_changes": changes[n], "runs": {}}
        for view, master in runs:
            t = timings[(view, n)]
            label = master or "postgres"
            if not t:
                entry["runs"][label] = {"failed": failures.get((view, n), "no run")}
                rows.append([n, label, "failed: " + entry["runs"][label]["failed"][:60], "", "", "", "", "", ""])
                continue
            entry["runs"][label] = {k: summary([x[k] for x in t]) for k in t[0]}
            med = {k: v["median"] for k, v in entry["runs"][label].items()}
            pg = entry["runs"]["postgres"].get("total", {}).get("median")
            rows.append([n, label, med["total"] * 1000, med["i-diffs"] * 1000, med["spark"] * 1000,
                         med["spark reads"] * 1000, med["spark copy"] * 1000, med["apply"] * 1000, f"{med['total'] / pg:.2f}x" if pg else ""])
        results.append(entry)
    ok = all(equal.values()) and not failures
    print(f"Spark engine vs PostgreSQL engine, view V ({strategy} strategy) at scale {scale} ({sizes}); "
          f"medians of {rounds} rounds; "
          f"PostgreSQL {version}; session start + first maintenance (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in starts.items()))
    print_table(["batch", "engine", "total ms", "i-diffs ms", "in Spark ms", "of which reads ms",
                 "of which copy ms", "apply ms",
                 "vs postgres"], rows)
    print("initial fill (register-view, s): " + ", ".join(f"{k} {v:.1f}" for k, v in fills.items()))
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "spark", "machine": machine(), "postgresql": version, "view": VIEW,
                     "parameters": {"scale": scale, "batches": sizes_of_batches, "rounds": rounds,
                                    "masters": spark_masters, "strategy": strategy,
                                    "separate_reads": os.environ.get("IDIVM_SPARK_SEPARATE_READS") == "1"},
                     "sizes": sizes, "session_start_seconds": starts, "fill_seconds": fills, "results": results,
                     "views_equal_recomputation": equal, "plots": [plot_path]})
    print(f"views equal recomputation: {ok}; json: {out}; plot: {plot_path}")
    return 0 if ok else 1


def plot(results: list[dict], path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    def series(label: str, key: str) -> tuple[list, list]:
        done = [r for r in results if key in r["runs"][label]]
        return [r["batch"] for r in done], [r["runs"][label][key]["median"] * 1000 for r in done]

    for label in results[0]["runs"]:
        name = "PostgreSQL engine" if label == "postgres" else f"Spark engine, {label}"
        ax.plot(*series(label, "total"), marker="o", label=name)
        if label != "postgres":
            ax.plot(*series(label, "spark"), linestyle=":", label=f"of which in Spark, {label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("changes per batch")
    ax.set_ylabel("maintenance ms (warm session)")
    ax.legend(fontsize=7)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = batches_parser(__doc__, "bench-results/bench_spark.json", 0.02,
                        "0.02 = 100k devices and parts, 1M links; 0.2 = 1M and 10M", "200,10000")
    ap.add_argument("--masters", default="local[2]",
                    help="comma-separated Spark masters, one view copy each (e.g. local[1],local[2])")
    ap.add_argument("--strategy", default="id", choices=["id", "tuple"], help="the strategy of every copy of V")
    ap.add_argument("--separate-reads", action="store_true",
                    help="materialize Spark's reads before its queries run, so that the breakdown tells reading "
                         "from computing (costs memory and one job per read)")
    a = ap.parse_args(argv)
    try:
        return run(a.dsn, a.scale, a.batches, a.rounds, a.out, a.keep, a.masters, a.strategy, a.separate_reads)
    except IdivmError as e:  # e.g. Spark cannot reach a server named by a socket: one line, not a traceback
        print(f"bench spark: {first_line(e)}", file=sys.stderr)
        return 2
