"""The higher-order strategy against the ID-based one and recomputation, on fixed query shapes.

A TPC-H-like schema (customer, orders, lineitem; --scale 1 = 10k customers, 100k orders, 400k
lines) and the paper's devices / parts / devices_parts (100k parts at scale 1). Three views:

- Q3: a three-way join aggregated per order (TPC-H Q3's shape: segment, date filters, SUM of prices);
- Q4: orders counted per priority WHERE EXISTS a late line (TPC-H Q4's correlated EXISTS);
- V': the paper's Figure 5b, SUM(price) per phone device over devices ⋈ devices_parts ⋈ parts;
- late: the lines that alone made their order late, per customer segment (TPC-H Q21's shape: a
  three-way join and a NOT EXISTS correlated by an equality and an inequality);
- small: lines priced under 60% of their order's average line, per order priority (TPC-H Q17's
  shape: a nested aggregate correlated by an equality, groups of four lines);
- recent: orders dated well after their customer's average order, per segment (TPC-H Q22's kind
  of comparison with an average: correlated by an equality, groups of about ten orders);
- late_orders: orders dated well after the average of all orders, per priority (an uncorrelated
  nested aggregate: one value for every row).

For each batch size (--batches, default 100 and 10,000 changes: line prices and dates, order
dates, part prices), each round applies one batch to the base tables, then maintains every view
under each method in a rotating order and times that maintenance alone (the writers' capture cost
is the same for both strategies). Recomputation is REFRESH MATERIALIZED VIEW. At the end every
maintained view is verified against its query.
"""
from __future__ import annotations

import random
import time

import psycopg

from .. import api
from .common import batches_parser, machine, timed_load, print_table, pyplot, save, scratch_database, summary, timed_round, write_json

VIEWS = {
    "Q3": "SELECT o.ok, o.odate, sum(l.price) AS revenue FROM customer c JOIN orders o ON o.ck = c.ck "
          "JOIN lineitem l ON l.ok = o.ok WHERE c.segment = 'BUILDING' AND o.odate < 500 AND l.shipdate > 400 "
          "GROUP BY o.ok, o.odate",
    "Q4": "SELECT o.priority, count(*) AS orders FROM orders o WHERE o.odate BETWEEN 200 AND 600 AND EXISTS "
          "(SELECT 1 FROM lineitem l WHERE l.ok = o.ok AND l.commitdate < l.receiptdate) GROUP BY o.priority",
    "V'": "SELECT dp.did, sum(p.price) AS cost FROM devices_parts dp JOIN parts p ON p.pid = dp.pid "
          "JOIN devices d ON d.did = dp.did WHERE d.category = 'phone' GROUP BY dp.did",
    "late": "SELECT c.segment, count(*) AS late_lines FROM customer c JOIN orders o ON o.ck = c.ck "
            "JOIN lineitem l ON l.ok = o.ok WHERE l.receiptdate > l.commitdate AND NOT EXISTS (SELECT 1 FROM lineitem l2 "
            "WHERE l2.ok = l.ok AND l2.ln <> l.ln AND l2.receiptdate > l2.commitdate) GROUP BY c.segment",
    "small": "SELECT o.priority, count(*) AS small_lines, sum(l.price) AS value FROM orders o JOIN lineitem l "
             "ON l.ok = o.ok WHERE l.price < (SELECT 0.6 * avg(l2.price) FROM lineitem l2 WHERE l2.ok = l.ok) "
             "GROUP BY o.priority",
    "recent": "SELECT c.segment, count(*) AS recent_orders FROM customer c JOIN orders o ON o.ck = c.ck "
              "WHERE o.odate > (SELECT avg(o2.odate) + 200 FROM orders o2 WHERE o2.ck = c.ck) GROUP BY c.segment",
    "late_orders": "SELECT o.priority, count(*) AS n FROM orders o WHERE o.odate > (SELECT avg(o2.odate) + 300 "
                   "FROM orders o2) GROUP BY o.priority",
}
METHODS = ("higher-order", "id", "recompute")


def load(db: psycopg.Connection, scale: float) -> dict:
    customers, parts = max(int(10_000 * scale), 10), max(int(100_000 * scale), 10)
    db.execute("SELECT setseed(0.17)")
    db.execute("CREATE TABLE customer (ck int PRIMARY KEY, segment text NOT NULL)")
    db.execute("INSERT INTO customer SELECT g, (ARRAY['BUILDING','MACHINERY','AUTOMOBILE','HOUSEHOLD'])[1 + g %% 4] "
               "FROM generate_series(1, %s) g", (customers,))
    db.execute("CREATE TABLE orders (ok int PRIMARY KEY, ck int NOT NULL, odate int NOT NULL, priority int NOT NULL)")
    db.execute("INSERT INTO orders SELECT g, 1 + (random() * (%s - 1))::int, (random() * 1000)::int, "
               "(random() * 4)::int FROM generate_series(1, %s) g", (customers, customers * 10))
    db.execute("CREATE TABLE lineitem (ok int NOT NULL, ln int NOT NULL, price numeric NOT NULL, shipdate int NOT NULL, "
               "commitdate int NOT NULL, receiptdate int NOT NULL, PRIMARY KEY (ok, ln))")
    db.execute("INSERT INTO lineitem SELECT o, n, round((random() * 1000)::numeric, 2), (random() * 1000)::int, "
               "(random() * 1000)::int, (random() * 1000)::int FROM generate_series(1, %s) o, generate_series(1, 4) n",
               (customers * 10,))
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL)")
    db.execute("INSERT INTO devices SELECT g, (ARRAY['phone','tablet','watch'])[1 + g %% 3] FROM generate_series(1, %s) g",
               (parts,))
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric NOT NULL)")
    db.execute("INSERT INTO parts SELECT g, round((random() * 100)::numeric, 2) FROM generate_series(1, %s) g", (parts,))
    db.execute("CREATE TABLE devices_parts (did int NOT NULL, pid int NOT NULL, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices_parts SELECT DISTINCT 1 + (random() * (%s - 1))::int, g "
               "FROM generate_series(1, %s) g, generate_series(1, 10) k", (parts, parts))
    for t, c in (("orders", "ck"), ("devices_parts", "pid")):  # what the id strategy joins from a changed row
        db.execute(f"CREATE INDEX ON {t} ({c})")
    db.execute("VACUUM ANALYZE")
    return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("customer", "orders", "lineitem", "devices", "parts", "devices_parts")}


def batch(db: psycopg.Connection, rng: random.Random, sizes: dict, n: int) -> None:
    """n changes in one transaction: a quarter each of line prices, line dates, order dates, part prices."""
    q = max(n // 4, 1)
    lines = [(rng.randint(1, sizes["orders"]), rng.randint(1, 4)) for _ in range(2 * q)]
    with db.transaction():
        db.execute("UPDATE lineitem l SET price = l.price + 1 FROM unnest(%s::int[], %s::int[]) AS c(ok, ln) "
                   "WHERE l.ok = c.ok AND l.ln = c.ln", ([o for o, _ in lines[:q]], [n_ for _, n_ in lines[:q]]))
        db.execute("UPDATE lineitem l SET receiptdate = (l.receiptdate + 300) %% 1000 FROM unnest(%s::int[], %s::int[]) "
                   "AS c(ok, ln) WHERE l.ok = c.ok AND l.ln = c.ln", ([o for o, _ in lines[q:]], [n_ for _, n_ in lines[q:]]))
        db.execute("UPDATE orders SET odate = (odate + 97) %% 1000 WHERE ok = ANY(%s)",
                   (rng.sample(range(1, sizes["orders"] + 1), min(q, sizes["orders"])),))
        db.execute("UPDATE parts SET price = price + 1 WHERE pid = ANY(%s)",
                   (rng.sample(range(1, sizes["parts"] + 1), min(q, sizes["parts"])),))


def run(dsn: str | None = None, scale: float = 0.1, batches: str = "100,10000", rounds: int = 3,
        out: str = "bench-results/bench_higher_order.json", keep: bool = False) -> int:
    sizes_of_batches = [int(b) for b in batches.split(",") if b.strip()]
    started = time.perf_counter()
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            sizes = timed_load(load, db, scale)
            engine = api.connect(bench_dsn)
            names, registration = {}, {}
            for k, (label, sql) in enumerate(VIEWS.items()):
                for method in METHODS:
                    name = names[(label, method)] = f"v{k}_{method.replace('-', '_')}"
                    t0 = time.perf_counter()
                    if method == "recompute":
                        db.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
                    else:  # the strategies' programs compared: never recomputed instead (bench_recompute.py is that)
                        engine.register_view(name, sql, strategy=method)
                        engine.set_policy(name, recompute="never")
                    registration[f"{label}/{method}"] = time.perf_counter() - t0
            chosen = {}
            for label, sql in VIEWS.items():  # what --strategy auto takes for each, against the measurements
                engine.register_view("auto_choice", sql, strategy="auto")
                chosen[label] = engine.strategy_of("auto_choice")
                engine.drop_view("auto_choice")
            db.execute("ANALYZE")
            maps = db.execute("SELECT count(*), coalesce(sum(n_live_tup), 0) FROM pg_stat_user_tables "
                              "WHERE schemaname = 'idivm' AND relname LIKE 'map%'").fetchone()
            rng = random.Random(11)
            times = {(label, m, n): [] for label in VIEWS for m in METHODS for n in sizes_of_batches}
            for n in sizes_of_batches:
                for r in range(rounds):
                    batch(db, rng, sizes, n)
                    for (label, m), seconds in timed_round(db, engine, names, r * 5).items():
                        times[(label, m, n)].append(seconds)
            equal = {f"{label}/{m}": engine.verify(names[(label, m)]).ok for label in VIEWS for m in METHODS[:2]}
            engine.close()

    results, rows = [], []
    for label in VIEWS:
        for n in sizes_of_batches:
            entry = {"view": label, "batch": n, **{m: summary(times[(label, m, n)]) for m in METHODS}}
            med = {m: entry[m]["median"] for m in METHODS}
            results.append(entry)
            rows.append([label, n, med["higher-order"] * 1000, med["id"] * 1000, med["recompute"] * 1000,
                         f"{med['id'] / med['higher-order']:.2f}x", f"{med['recompute'] / med['higher-order']:.1f}x",
                         f"{registration[f'{label}/higher-order']:.2f} / {registration[f'{label}/id']:.2f}",
                         chosen[label], min(("higher-order", "id"), key=med.get)])
    ok = all(equal.values())
    print(f"higher-order vs id vs recomputation at scale {scale} ({sizes}); medians of {rounds} rounds per batch "
          f"size; PostgreSQL {version}; {maps[0]} map tables, {maps[1]} map rows")
    print_table(["view", "batch", "higher-order ms", "id ms", "recompute ms", "id/ho", "recompute/ho",
                 "registration s (ho / id)", "auto chose", "faster"], rows)
    plot_path = out.replace(".json", ".png")
    plot(results, sizes_of_batches, plot_path)
    write_json(out, {"benchmark": "higher_order", "machine": machine(), "postgresql": version,
                     "parameters": {"scale": scale, "batches": sizes_of_batches, "rounds": rounds},
                     "sizes": sizes, "views": VIEWS, "map_tables": maps[0], "map_rows": maps[1],
                     "registration_seconds": registration, "auto_chose": chosen, "results": results,
                     "views_equal_recomputation": equal, "plots": [plot_path],
                     "seconds": time.perf_counter() - started})
    print(f"views equal recomputation: {ok}; json: {out}; plot: {plot_path}")
    return 0 if ok else 1


def plot(results: list[dict], batches: list[int], path: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(VIEWS), figsize=(4 * len(VIEWS), 3.5), squeeze=False)
    for ax, label in zip(axes[0], VIEWS):
        for m, color in zip(METHODS, ("tab:green", "tab:blue", "tab:gray")):
            ys = [next(r[m]["median"] for r in results if r["view"] == label and r["batch"] == n) * 1000 for n in batches]
            ax.plot(batches, ys, marker="o", label=m, color=color)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(label)
        ax.set_xlabel("changes per batch")
        ax.set_ylabel("maintenance ms")
    axes[0][0].legend(fontsize=7)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    a = batches_parser(__doc__, "bench-results/bench_higher_order.json", 0.1, "1 = 10k customers, 100k orders, 100k parts", "100,10000").parse_args(argv)
    return run(a.dsn, a.scale, a.batches, a.rounds, a.out, a.keep)
