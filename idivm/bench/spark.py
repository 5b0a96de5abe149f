"""The Spark engine against the PostgreSQL engine, maintaining the same view from the same batches.

The paper's devices / parts / devices_parts (--scale 0.02 = 100k devices and parts, 1M links;
prices numeric(10,2), which Spark carries exactly) and its view V (an SPJ join, phones only). Two
copies of V are registered; each round applies one batch of part price updates, then maintains
one copy with each engine, in alternating order. The first Spark maintenance starts the session
and is reported apart (a scheduler keeps it warm); every later one is a warm-session run. For the
Spark engine the time Spark took (reads in the snapshot, its jobs, the copy back) is broken out:
the rest is the same PostgreSQL transaction as the PostgreSQL engine's. Both views are verified
against recomputation at the end.

This is the first cut of issue 15's benchmark: one view shape, one machine, batches up to what the
machine holds comfortably; the sweeps to millions of changes and the crossover are to come.
"""
from __future__ import annotations

import random
import time

import psycopg

from .. import api
from .common import batches_parser, machine, timed_load, print_table, pyplot, save, scratch_database, summary, write_json

VIEW = ("SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
        "WHERE category = 'phone'")
ENGINES = ("postgres", "spark")


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


def run(dsn: str | None = None, scale: float = 0.02, batches: str = "200,10000", rounds: int = 3,
        out: str = "bench-results/bench_spark.json", keep: bool = False) -> int:
    sizes_of_batches = [int(b) for b in batches.split(",") if b.strip()]
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            sizes = timed_load(load, db, scale)
            engine = api.connect(bench_dsn)
            for e in ENGINES:
                engine.register_view(f"v_{e}", VIEW)
            rng = random.Random(7)
            db.execute("UPDATE parts SET price = price + 1 WHERE pid = 1")
            t0 = time.perf_counter()
            engine.maintain("v_spark", engine="spark")  # starts the session
            first = time.perf_counter() - t0
            engine.maintain("v_postgres")
            times = {(e, n): [] for e in ENGINES for n in sizes_of_batches}
            in_spark = {n: [] for n in sizes_of_batches}
            for n in sizes_of_batches:
                for r in range(rounds):
                    pids = rng.sample(range(1, sizes["parts"] + 1), min(n, sizes["parts"]))
                    db.execute("UPDATE parts SET price = price + 1 WHERE pid = ANY(%s)", (pids,))
                    for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
                        t0 = time.perf_counter()
                        report = engine.maintain(f"v_{e}", engine=e)
                        times[(e, n)].append(time.perf_counter() - t0)
                        if e == "spark":
                            in_spark[n].append(report.breakdown.get("spark", 0.0))
            equal = {e: engine.verify(f"v_{e}").ok for e in ENGINES}
            engine.close()
    results, rows = [], []
    for n in sizes_of_batches:
        entry = {"batch": n, **{e: summary(times[(e, n)]) for e in ENGINES}, "spark_part": summary(in_spark[n])}
        results.append(entry)
        pg, sp, part = entry["postgres"]["median"], entry["spark"]["median"], entry["spark_part"]["median"]
        rows.append([n, pg * 1000, sp * 1000, part * 1000, (sp - pg) * 1000, f"{sp / pg:.1f}x"])
    ok = all(equal.values())
    print(f"Spark engine vs PostgreSQL engine, view V at scale {scale} ({sizes}); medians of {rounds} rounds; "
          f"PostgreSQL {version}; Spark session start + first maintenance: {first:.1f} s")
    print_table(["batch", "postgres ms", "spark ms", "in Spark ms", "overhead ms", "spark/postgres"], rows)
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "spark", "machine": machine(), "postgresql": version, "view": VIEW,
                     "parameters": {"scale": scale, "batches": sizes_of_batches, "rounds": rounds},
                     "sizes": sizes, "first_spark_maintenance_seconds": first, "results": results,
                     "views_equal_recomputation": equal, "plots": [plot_path]})
    print(f"views equal recomputation: {ok}; json: {out}; plot: {plot_path}")
    return 0 if ok else 1


def plot(results: list[dict], path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    batches = [r["batch"] for r in results]
    for key, label, color in (("postgres", "PostgreSQL engine", "tab:blue"), ("spark", "Spark engine", "tab:orange"),
                              ("spark_part", "of which in Spark", "tab:red")):
        ax.plot(batches, [r[key]["median"] * 1000 for r in results], marker="o", label=label, color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("changes per batch")
    ax.set_ylabel("maintenance ms (warm session)")
    ax.legend(fontsize=7)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    a = batches_parser(__doc__, "bench-results/bench_spark.json", 0.02, "0.02 = 100k devices and parts, 1M links", "200,10000").parse_args(argv)
    return run(a.dsn, a.scale, a.batches, a.rounds, a.out, a.keep)
