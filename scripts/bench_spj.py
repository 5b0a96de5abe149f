#!/usr/bin/env python3
"""Benchmark: deferred maintenance of the paper's SPJ view V (Figure 1b) after d price updates.

Builds devices / parts / devices_parts at a scale factor of the paper's sizes
(5M / 5M / 50M rows at scale 1; default 0.02 -> 100k / 100k / 1M), registers V
under the `id` and `tuple` strategies, and per round applies d single-row
price updates, then times (in alternating order) ID-based maintenance,
tuple-based maintenance and full recomputation (REFRESH MATERIALIZED VIEW of
the same SELECT). Prints a table, writes JSON, and fails if a maintained view
differs from recomputation at the end.

    python scripts/bench_spj.py [--dsn DSN] [--scale 0.02] [--diff 200] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import idivm
from idivm.dsn import resolve_dsn

VIEW = ("SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices "
        "WHERE category = 'phone'")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", default=None, help="server to create the benchmark database on")
    ap.add_argument("--scale", type=float, default=0.02)
    ap.add_argument("--diff", type=int, default=200, help="price updates per round (d)")
    ap.add_argument("--selectivity", type=float, default=0.2, help="fraction of devices that are phones (s)")
    ap.add_argument("--fanout", type=int, default=10, help="parts per device (f)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="bench-results/bench_spj.json")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = ap.parse_args()

    server, _ = resolve_dsn(args.dsn)
    dbname = f"idivm_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{dbname}"')
        version = c.execute("SHOW server_version").fetchone()[0]
    params = conninfo_to_dict(server)
    params["dbname"] = dbname
    dsn = make_conninfo(**params)
    n_dev = n_parts = int(5_000_000 * args.scale)
    try:
        with psycopg.connect(dsn, autocommit=True) as db:
            t0 = time.perf_counter()
            db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL)")
            db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric NOT NULL)")
            db.execute("CREATE TABLE devices_parts (did int NOT NULL, pid int NOT NULL, PRIMARY KEY (did, pid))")
            db.execute("INSERT INTO devices SELECT g, CASE WHEN random() < %s THEN 'phone' ELSE 'tablet' END "
                       "FROM generate_series(1, %s) g", (args.selectivity, n_dev))
            db.execute("INSERT INTO parts SELECT g, (random() * 100)::int FROM generate_series(1, %s) g", (n_parts,))
            db.execute("INSERT INTO devices_parts SELECT DISTINCT d, 1 + ((d * 7919 + k * 104729) %% %s) "
                       "FROM generate_series(1, %s) d, generate_series(1, %s) k", (n_parts, n_dev, args.fanout))
            db.execute("CREATE INDEX ON devices_parts (pid)")  # what tuple-based IVM needs (Section 7)
            db.execute("ANALYZE")
            links = db.execute("SELECT count(*) FROM devices_parts").fetchone()[0]
            load_s = time.perf_counter() - t0
            engine = idivm.connect(dsn)
            t0 = time.perf_counter()
            engine.register_view("v_id", VIEW, strategy="id")
            register_s = time.perf_counter() - t0
            engine.register_view("v_tuple", VIEW, strategy="tuple")
            db.execute(f"CREATE MATERIALIZED VIEW v_recompute AS {VIEW}")
            db.execute("ANALYZE")
            view_rows = db.execute("SELECT count(*) FROM v_id").fetchone()[0]
            rng = random.Random(7)
            times = {"id": [], "tuple": [], "recompute": []}
            for r in range(args.rounds):
                for _ in range(args.diff):
                    db.execute("UPDATE parts SET price = price + 1 WHERE pid = %s", (rng.randint(1, n_parts),))
                order = ["id", "tuple", "recompute"]
                order = order[r % 3:] + order[: r % 3]
                for what in order:
                    t0 = time.perf_counter()
                    if what == "recompute":
                        db.execute("REFRESH MATERIALIZED VIEW v_recompute")
                    else:
                        engine.maintain(f"v_{what}")
                    times[what].append(time.perf_counter() - t0)
            ok = all(engine.verify(v).ok for v in ("v_id", "v_tuple"))
            engine.close()
    finally:
        if not args.keep:
            with psycopg.connect(server, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')

    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "benchmark": "spj_price_updates", "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "postgresql": version, "parameters": {**vars(args), "devices": n_dev, "parts": n_parts, "links": links,
                                              "view_rows": view_rows},
        "load_seconds": load_s, "register_seconds": register_s,
        "seconds": {k: {"median": med[k], "min": min(v), "max": max(v), "runs": v} for k, v in times.items()},
        "ratios": {"recompute_over_id": med["recompute"] / med["id"], "tuple_over_id": med["tuple"] / med["id"]},
        "views_equal_recomputation": ok,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str))
    print(f"V over {n_dev} devices, {n_parts} parts, {links} links ({view_rows} view rows); "
          f"d={args.diff} price updates per round, {args.rounds} rounds; PostgreSQL {version}")
    print(f"{'method':<24}{'median ms':>12}{'min ms':>10}{'max ms':>10}")
    for k, label in (("id", "ID-based maintain"), ("tuple", "tuple-based maintain"), ("recompute", "full recomputation")):
        v = times[k]
        print(f"{label:<24}{med[k] * 1000:>12.1f}{min(v) * 1000:>10.1f}{max(v) * 1000:>10.1f}")
    print(f"recompute / id = {result['ratios']['recompute_over_id']:.1f}x, "
          f"tuple / id = {result['ratios']['tuple_over_id']:.1f}x; views equal recomputation: {ok}; json: {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
