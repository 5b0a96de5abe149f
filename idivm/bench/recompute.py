"""Recomputing instead of running the Δ-script (docs/maintenance.md, "Recomputing instead"): at
every batch size, from a few rows to every row of the tables, what `--recompute auto` costs
against the cheaper of the Δ-script and recomputation.

The data and views of the higher-order benchmark (idivm/bench/higher_order.py: Q3, Q4, V' and
late over customer / orders / lineitem and devices / parts / devices_parts), each registered
three times with `--strategy id`: `--recompute never` (the Δ-script), `always` (idivm's
recomputation, which writes only the difference) and `auto` (the choice per batch), beside a
materialized view refreshed with REFRESH MATERIALIZED VIEW (PostgreSQL's recomputation, which
rewrites the whole view and locks its readers out meanwhile).

A batch changes the same share (--fractions) of lineitem (a price and a receipt date per line),
orders (the order date) and parts (the price) in one transaction; the batches go from the
smallest share to the largest, so `auto` has measured its Δ-script on the smaller ones before it
decides on the larger. Each round maintains every view in a rotated order and times its
maintenance alone. At the end every view is verified against its query.
"""
from __future__ import annotations

import time

import psycopg

from .. import api
from .common import machine, parser, print_table, pyplot, save, scratch_database, summary, timed_load, write_json
from .higher_order import VIEWS, load

METHODS = ("script", "recomputing", "auto", "refresh")  # --recompute never, always, auto; REFRESH MATERIALIZED VIEW
POLICY = {"script": "never", "recomputing": "always", "auto": "auto"}
SHOWN = {"script": "Δ-script", "recomputing": "idivm recompute", "auto": "auto", "refresh": "REFRESH"}


def batch(db: psycopg.Connection, sizes: dict, fraction: float, shift: int) -> int:
    """Change `fraction` of lineitem, orders and parts in one transaction (each row once, a
    different slice each round); returns the number of rows changed."""
    changed = 0
    with db.transaction():
        for table, position, sets in (
                ("lineitem", "(ok - 1) * 4 + ln - 1", "price = price + 1, receiptdate = (receiptdate + 300) %% 1000"),
                ("orders", "ok - 1", "odate = (odate + 97) %% 1000"),
                ("parts", "pid - 1", "price = price + 1")):
            n = sizes[table]
            k = max(int(round(n * fraction)), 1)
            changed += db.execute(f"UPDATE {table} SET {sets} WHERE ({position} + %s) %% %s < %s",
                                  (shift, n, k)).rowcount
    return changed


def run(dsn: str | None = None, scale: float = 0.1, fractions: str = "0.001,0.01,0.1,0.3,1", rounds: int = 3,
        out: str = "bench-results/bench_recompute.json", keep: bool = False) -> int:
    shares = [float(f) for f in fractions.split(",") if f.strip()]
    started = time.perf_counter()
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            sizes = timed_load(load, db, scale)
            engine = api.connect(bench_dsn)
            names = {}
            for k, (label, sql) in enumerate(VIEWS.items()):
                for method in METHODS:
                    name = names[(label, method)] = f"v{k}_{method}"
                    if method == "refresh":
                        db.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
                    else:
                        engine.register_view(name, sql, strategy="id")
                        engine.set_policy(name, recompute=POLICY[method])
            db.execute("ANALYZE")
            times = {(label, m, f): [] for label in VIEWS for m in METHODS for f in shares}
            recomputed = {(label, f): 0 for label in VIEWS for f in shares}
            changes = {}
            for f in shares:
                for r in range(rounds):
                    changes[f] = batch(db, sizes, f, r * 7919)
                    order = list(names)
                    k = (r * 5) % len(order)
                    for key in order[k:] + order[:k]:
                        t0 = time.perf_counter()
                        if key[1] == "refresh":
                            db.execute(f"REFRESH MATERIALIZED VIEW {names[key]}")
                        else:
                            report = engine.maintain(names[key])
                            if key[1] == "auto":
                                recomputed[(key[0], f)] += report.recomputed is not None
                        times[(key[0], key[1], f)].append(time.perf_counter() - t0)
            equal = {f"{label}/{m}": engine.verify(names[(label, m)]).ok for label in VIEWS for m in METHODS[:3]}
            engine.close()

    results, rows = [], []
    worst = 0.0
    for label in VIEWS:
        for f in shares:
            entry = {"view": label, "fraction": f, "rows_changed": changes[f], "auto_recomputed_rounds": recomputed[(label, f)],
                     **{m: summary(times[(label, m, f)]) for m in METHODS}}
            med = {m: entry[m]["median"] for m in METHODS}
            cheaper = min(med["script"], med["refresh"])
            entry["auto_over_cheaper"] = med["auto"] / cheaper
            worst = max(worst, entry["auto_over_cheaper"])
            results.append(entry)
            rows.append([label, f"{f:g}", changes[f]] + [med[m] * 1000 for m in METHODS]
                        + [f"{recomputed[(label, f)]}/{rounds}", f"{entry['auto_over_cheaper']:.2f}x"])
    ok = all(equal.values())
    print(f"--recompute auto against the Δ-script and recomputation at scale {scale} ({sizes}); medians of {rounds} "
          f"rounds; PostgreSQL {version}")
    print_table(["view", "share", "rows changed"] + [f"{SHOWN[m]} ms" for m in METHODS]
                + ["auto recomputed", "auto / cheaper of Δ-script and REFRESH"], rows)
    plot_path = out.replace(".json", ".png")
    plot(results, shares, plot_path)
    write_json(out, {"benchmark": "recompute", "machine": machine(), "postgresql": version,
                     "parameters": {"scale": scale, "fractions": shares, "rounds": rounds}, "sizes": sizes,
                     "views": VIEWS, "results": results, "worst_auto_over_cheaper": worst,
                     "views_equal_recomputation": equal, "plots": [plot_path], "seconds": time.perf_counter() - started})
    print(f"worst auto / cheaper: {worst:.2f}x; views equal recomputation: {ok}; json: {out}; plot: {plot_path}")
    return 0 if ok else 1


def plot(results: list[dict], shares: list[float], path: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(VIEWS), figsize=(4 * len(VIEWS), 3.5), squeeze=False)
    for ax, label in zip(axes[0], VIEWS):
        for m, style in zip(METHODS, ("o-", "s-", "^--", "x:")):
            ys = [next(r[m]["median"] for r in results if r["view"] == label and r["fraction"] == f) * 1000 for f in shares]
            ax.plot(shares, ys, style, label=SHOWN[m])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(label)
        ax.set_xlabel("share of the tables changed")
        ax.set_ylabel("maintenance ms")
    axes[0][0].legend(fontsize=7)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_recompute.json")
    ap.add_argument("--scale", type=float, default=0.1, help="1 = 10k customers, 100k orders, 100k parts")
    ap.add_argument("--fractions", default="0.001,0.01,0.1,0.3,1", help="comma-separated shares of the tables per batch")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.fractions, a.rounds, a.out, a.keep)
