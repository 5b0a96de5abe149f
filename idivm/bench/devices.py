"""The paper's controlled experiment (Section 7.2, Figures 11 and 12): devices, parts, devices_parts.

At scale 1 the tables have 5M / 5M / 50M rows (Figure 11a); the default scale
0.02 gives 100k / 100k / 1M. Parameters (Figure 11b): d price updates per
maintenance (200), selectivity s of category = 'phone' (20%), fanout f parts per
device (10), joins j (2; each further join is a table R_i joined 1-to-1 on
(did, pid), with the selection disabled, as in Section 7.2). Base tables get the
index tuple-based IVM needs (devices_parts(pid)); the keys index the rest.

For V (Figure 1b, SPJ) and V' (Figure 5b, SUM per device) each round applies d
price updates, then times, in an order that rotates between rounds: ID-based
maintenance, tuple-based maintenance, and full recomputation (REFRESH
MATERIALIZED VIEW of the same SELECT). Maintenance times are broken down into
building the i-diffs, maintaining the intermediate cache, and the view (Figure
12). At the end every maintained view is compared with recomputation; a
difference fails the benchmark.
"""
from __future__ import annotations

import random
import sys
import time

import psycopg

from .. import api
from .common import (
    machine,
    parser,
    print_table,
    pyplot,
    save,
    scratch_database,
    summary,
    write_json,
)

DEFAULTS = {"diff": 200, "selectivity": 0.2, "fanout": 10, "joins": 2}
SWEEPS = {  # Figure 12a-d
    "diff": [100, 200, 300, 400, 500],
    "joins": [2, 3, 4, 5, 6],
    "selectivity": [0.0625, 0.125, 0.25, 0.5, 1.0],
    "fanout": [5, 10, 15, 20, 25],
}
METHODS = ("id", "tuple", "recompute")
VP = "V'"  # the grouped view V' of Figure 5b


def view_sql(joins: int, grouped: bool) -> str:
    extra = "".join(f" NATURAL JOIN r{i}" for i in range(1, joins - 1))
    where = " WHERE category = 'phone'" if joins <= 2 else ""  # Section 7.2 disables it for extra joins
    if grouped:
        return f"SELECT did, sum(price) AS cost FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices{extra}{where} GROUP BY did"
    return f"SELECT did, pid, price FROM parts NATURAL JOIN devices_parts NATURAL JOIN devices{extra}{where}"


def load(db: psycopg.Connection, scale: float, selectivity: float, fanout: int, joins: int) -> dict:
    n = int(5_000_000 * scale)
    for t in ["devices", "parts", "devices_parts"] + [f"r{i}" for i in range(1, 8)]:
        db.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
    db.execute("SELECT setseed(0.42)")
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL)")
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric NOT NULL)")
    db.execute("CREATE TABLE devices_parts (did int NOT NULL, pid int NOT NULL, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices SELECT g, CASE WHEN random() < %s THEN 'phone' ELSE 'tablet' END "
               "FROM generate_series(1, %s) g", (selectivity, n))
    db.execute("INSERT INTO parts SELECT g, (random() * 100)::int FROM generate_series(1, %s) g", (n,))
    db.execute("INSERT INTO devices_parts SELECT DISTINCT d, 1 + ((d::bigint * 7919 + k * 104729) %% %s) "
               "FROM generate_series(1, %s) d, generate_series(1, %s) k", (n, n, fanout))
    db.execute("CREATE INDEX ON devices_parts (pid)")  # what tuple-based IVM needs (Section 7)
    for i in range(1, joins - 1):  # vertically decomposed: 1-to-1 with devices_parts on (did, pid)
        db.execute(f"CREATE TABLE r{i} (did int NOT NULL, pid int NOT NULL, a{i} int, PRIMARY KEY (did, pid))")
        db.execute(f"INSERT INTO r{i} SELECT did, pid, (did + pid * {i}) % 97 FROM devices_parts")
    db.execute("VACUUM ANALYZE")
    links = db.execute("SELECT count(*) FROM devices_parts").fetchone()[0]
    return {"devices": n, "parts": n, "devices_parts": links}


def measure(dsn: str, db: psycopg.Connection, params: dict, rounds: int, seed: int) -> dict:
    """Register V and V' under both strategies, run the rounds, verify; per-view timings."""
    engine = api.connect(dsn)
    views = {"V": view_sql(params["joins"], False), "V'": view_sql(params["joins"], True)}
    names = {}
    registration = {}
    for label, sql in views.items():
        base = "v" if label == "V" else "vp"
        for strategy in ("id", "tuple"):
            name = f"{base}_{strategy}"
            t0 = time.perf_counter()
            engine.register_view(name, sql, strategy=strategy)
            registration[f"{label}/{strategy}"] = time.perf_counter() - t0
            engine.set_policy(name, recompute="never")  # the paper's Δ-scripts compared, never recomputed instead
            names[(label, strategy)] = name
        db.execute(f"CREATE MATERIALIZED VIEW {base}_recompute AS {sql}")
        names[(label, "recompute")] = f"{base}_recompute"
    db.execute("ANALYZE")
    view_rows = {label: db.execute(f"SELECT count(*) FROM {names[(label, 'id')]}").fetchone()[0] for label in views}
    n_parts = db.execute("SELECT count(*) FROM parts").fetchone()[0]
    rng = random.Random(seed)
    times = {(label, m): [] for label in views for m in METHODS}
    parts = {(label, m): {"i-diffs": [], "cache": [], "view": []} for label in views for m in ("id", "tuple")}
    order = [(label, m) for label in views for m in METHODS]
    for r in range(rounds):
        pids = rng.sample(range(1, n_parts + 1), params["diff"])
        db.execute("UPDATE parts SET price = price + 1 + (pid %% 7) WHERE pid = ANY(%s)", (pids,))
        k = r % len(order)
        for label, m in order[k:] + order[:k]:
            t0 = time.perf_counter()
            if m == "recompute":
                db.execute(f"REFRESH MATERIALIZED VIEW {names[(label, m)]}")
            else:
                report = engine.maintain(names[(label, m)])
                for part, secs in report.breakdown.items():
                    parts[(label, m)][part].append(secs)
            times[(label, m)].append(time.perf_counter() - t0)
    equal = {names[(label, m)]: engine.verify(names[(label, m)]).ok for label in views for m in ("id", "tuple")}
    for (label, m), name in names.items():
        if m == "recompute":
            db.execute(f"DROP MATERIALIZED VIEW {name}")
        else:
            engine.drop_view(name)
    engine.close()
    out = {"params": params, "view_rows": view_rows, "registration_seconds": registration,
           "views_equal_recomputation": equal, "views": {}}
    for label in views:
        entry = {m: summary(times[(label, m)]) for m in METHODS}
        for m in ("id", "tuple"):
            entry[m]["breakdown_median"] = {p: summary(v)["median"] for p, v in parts[(label, m)].items()}
        med = {m: entry[m]["median"] for m in METHODS}
        entry["ratios"] = {"tuple_over_id": med["tuple"] / med["id"], "recompute_over_id": med["recompute"] / med["id"]}
        out["views"][label] = entry
    return out


def plot(results: list[dict], swept: str, path: str) -> None:
    """Figure 12's style: per parameter value, stacked bars (i-diffs / cache / view) for ID-based (A)
    and tuple-based (B) maintenance, the speedup B/A above them; V and V' side by side. Full
    recomputation, an order of magnitude above, is in the tables and the JSON, not on this scale."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    xs = [r["params"][swept] for r in results]
    width = 0.38
    for ax, label in zip(axes, ("V", VP)):
        tops = []
        for k, m in enumerate(("id", "tuple")):
            bottom = [0.0] * len(xs)
            for part, hatch in (("i-diffs", ""), ("cache", "//"), ("view", "..")):
                vals = [r["views"][label][m]["breakdown_median"][part] * 1000 for r in results]
                ax.bar([i + (k - 0.5) * width for i in range(len(xs))], vals, width, bottom=bottom, hatch=hatch,
                       color=("tab:blue", "tab:orange")[k], edgecolor="black", linewidth=0.4,
                       label=f"{('A: ID-based', 'B: tuple-based')[k]}, {part}")
                bottom = [b + v for b, v in zip(bottom, vals)]
            tops.append(bottom)
        for i, r in enumerate(results):
            ax.annotate(f"{r['views'][label]['ratios']['tuple_over_id']:.1f}x", (i, max(tops[0][i], tops[1][i])),
                        xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_xlabel(swept)
        ax.set_ylabel("maintenance time (ms)")
        ax.set_title(f"{label}: ID-based (A) vs tuple-based (B), speedup B/A")
    axes[0].legend(fontsize=6)
    save(fig, path)


def run(dsn: str | None = None, scale: float = 0.02, diff: int = 200, selectivity: float = 0.2, fanout: int = 10,
        joins: int = 2, rounds: int = 5, sweep: str = "", out: str = "bench-results/bench_devices.json",
        keep: bool = False) -> int:
    base = {"diff": diff, "selectivity": selectivity, "fanout": fanout, "joins": joins}
    swept = [p.strip() for p in sweep.split(",") if p.strip()] if sweep != "all" else list(SWEEPS)
    for p in swept:
        if p not in SWEEPS:
            raise SystemExit(f"unknown sweep parameter {p!r}; choose from {', '.join(SWEEPS)} or all")
    configs = [("default", dict(base))] + [(p, {**base, p: v}) for p in swept for v in SWEEPS[p]]
    results: dict[str, list[dict]] = {}
    started = time.perf_counter()
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            loaded = None
            for k, (group, params) in enumerate(configs):
                shape = (params["selectivity"], params["fanout"], params["joins"])
                if shape != loaded:
                    t0 = time.perf_counter()
                    sizes = load(db, scale, *shape)
                    print(f"loaded s={shape[0]} f={shape[1]} j={shape[2]}: {sizes} in {time.perf_counter() - t0:.0f} s",
                          file=sys.stderr)
                    loaded = shape
                res = measure(bench_dsn, db, params, rounds, seed=k)
                res["sizes"] = sizes
                results.setdefault(group, []).append(res)
                v = res["views"]
                print(f"  {group} {params}: V' id {v[VP]['id']['median'] * 1000:.1f} ms, "
                      f"tuple {v[VP]['tuple']['median'] * 1000:.1f} ms", file=sys.stderr)

    default = results["default"][0]
    rows = []
    for label in ("V", "V'"):
        e = default["views"][label]
        for m, name in (("id", "ID-based"), ("tuple", "tuple-based"), ("recompute", "full recomputation")):
            b = e[m].get("breakdown_median", {})
            rows.append([label, name, e[m]["median"] * 1000, e[m]["min"] * 1000, e[m]["max"] * 1000,
                         b.get("cache", 0) * 1000 if b else "", b.get("view", 0) * 1000 if b else ""])
    print(f"devices/parts at scale {scale} ({default['sizes']}); d={diff}, s={selectivity}, f={fanout}, j={joins}; "
          f"{rounds} rounds; PostgreSQL {version}")
    print_table(["view", "method", "median ms", "min ms", "max ms", "cache ms", "view ms"], rows)
    vp = default["views"]["V'"]["ratios"]
    targets = {"V' id >= 4x faster than tuple": vp["tuple_over_id"] >= 4,
               "V' id >= 10x faster than recomputation": vp["recompute_over_id"] >= 10}
    for label in ("V", "V'"):
        r = default["views"][label]["ratios"]
        print(f"{label}: tuple / id = {r['tuple_over_id']:.1f}x, recompute / id = {r['recompute_over_id']:.1f}x")
    for p in swept:
        print(f"\nsweep of {p}:")
        print_table([p, "V id ms", "V tuple ms", "V recompute ms", "V' id ms", "V' tuple ms", "V' recompute ms",
                     "V' tuple/id"],
                    [[str(r["params"][p])] + [r["views"][lab][m]["median"] * 1000 for lab in ("V", "V'") for m in METHODS]
                     + [f"{r['views'][VP]['ratios']['tuple_over_id']:.1f}x"] for r in results[p]])
    ok = all(all(r["views_equal_recomputation"].values()) for rs in results.values() for r in rs)
    plots = []
    for p in swept:
        path = out.replace(".json", f"_{p}.png")
        plot(results[p], p, path)
        plots.append(path)
    write_json(out, {"benchmark": "devices", "machine": machine(), "postgresql": version,
                     "parameters": {"scale": scale, "rounds": rounds, "defaults": base, "sweeps": swept},
                     "results": results, "targets_met": targets, "views_equal_recomputation": ok,
                     "plots": plots, "seconds": time.perf_counter() - started})
    print("targets: " + "; ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in targets.items()))
    print(f"views equal recomputation: {ok}; json: {out}" + (f"; plots: {', '.join(plots)}" if plots else ""))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_devices.json")
    ap.add_argument("--scale", type=float, default=0.02, help="fraction of the paper's 5M/5M/50M rows")
    ap.add_argument("--diff", type=int, default=DEFAULTS["diff"], help="d: price updates per maintenance")
    ap.add_argument("--selectivity", type=float, default=DEFAULTS["selectivity"], help="s: share of phones")
    ap.add_argument("--fanout", type=int, default=DEFAULTS["fanout"], help="f: parts per device")
    ap.add_argument("--joins", type=int, default=DEFAULTS["joins"], help="j: joins (2 = the paper's view)")
    ap.add_argument("--rounds", type=int, default=5, help="measured maintenances per configuration")
    ap.add_argument("--sweep", default="", help="parameters to sweep as in Figure 12: diff,joins,selectivity,fanout or all")
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.diff, a.selectivity, a.fanout, a.joins, a.rounds, a.sweep, a.out, a.keep)
