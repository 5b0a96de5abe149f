"""What applications pay to read a maintained view through the relation under its name.

A maintained view's rows live in a storage table in idivm's schema, with the ID columns maintenance
needs; applications read a PostgreSQL view of exactly the output columns over it, which refuses
writes (engines/postgres/view_relation.py). Before that, applications read the storage table itself under the
view's name. This benchmark reads the same rows both ways, side by side in one run:

- "storage table": the table read directly, as applications read views before;
- "view": the relation under the view's name.

Queries, each the median of --rounds runs: a point lookup by an indexed output column (an index
the application added to the storage table; --lookups prepared lookups per run, time per lookup),
an aggregate over every row (`sum`), and fetching every row to the client. At the end the view is
verified against its query.
"""
from __future__ import annotations

import time

import psycopg

from .. import api
from .common import machine, parser, print_table, pyplot, save, scratch_database, summary, write_json

VIEW = "SELECT o.id, o.customer, o.amount FROM orders o WHERE o.amount >= 0"
WAYS = ("storage table", "view")


def load(db: psycopg.Connection, rows: int) -> None:
    db.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount int NOT NULL)")
    db.execute("INSERT INTO orders SELECT g, g %% 1000, g %% 97 FROM generate_series(1, %s) g", (rows,))
    db.execute("VACUUM ANALYZE orders")


def lookups(db: psycopg.Connection, relation: str, rows: int, n: int, seed: int) -> float:
    """Seconds per prepared point lookup by id, over n lookups."""
    keys = [1 + (seed * 7919 + i * 104729) % rows for i in range(n)]
    t0 = time.perf_counter()
    for k in keys:
        db.execute(f"SELECT id, customer, amount FROM {relation} WHERE id = %s", (k,), prepare=True).fetchone()
    return (time.perf_counter() - t0) / n


def timed(db: psycopg.Connection, sql: str) -> float:
    t0 = time.perf_counter()
    db.execute(sql).fetchall()
    return time.perf_counter() - t0


def run(dsn: str | None = None, rows: int = 200_000, rounds: int = 5, n: int = 2000,
        out: str = "bench-results/bench_reads.json", keep: bool = False) -> int:
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            load(db, rows)
            engine = api.connect(bench_dsn)
            engine.init()
            engine.register_view("big_orders", VIEW)
            storage = db.execute("SELECT 'idivm.view_' || id FROM idivm.views").fetchone()[0]
            db.execute(f"CREATE INDEX big_orders_by_id ON {storage} (id)")  # the application's own index
            db.execute(f"VACUUM ANALYZE {storage}")
            relations = {"storage table": storage, "view": "big_orders"}
            times: dict[str, dict[str, list[float]]] = {w: {"lookup": [], "sum": [], "fetch all": []} for w in WAYS}
            for r in range(rounds):
                for way in WAYS if r % 2 == 0 else reversed(WAYS):  # neither always goes first
                    rel = relations[way]
                    times[way]["lookup"].append(lookups(db, rel, rows, n, r))
                    times[way]["sum"].append(timed(db, f"SELECT sum(amount) FROM {rel}"))
                    times[way]["fetch all"].append(timed(db, f"SELECT id, customer, amount FROM {rel}"))
            plans = {way: "\n".join(p[0] for p in db.execute(
                f"EXPLAIN SELECT id, customer, amount FROM {relations[way]} WHERE id = 42").fetchall()) for way in WAYS}
            ok = engine.verify("big_orders").ok
            engine.close()
    results = {way: {q: summary(v) for q, v in qs.items()} for way, qs in times.items()}
    print(f"reading a maintained view of {rows} rows: its storage table vs the view under its name, "
          f"median of {rounds} rounds, PostgreSQL {version}")
    print_table(["query", *WAYS, "view / table"],
                [[q + (" (us)" if q == "lookup" else " (ms)"),
                  *(results[w][q]["median"] * (1e6 if q == "lookup" else 1e3) for w in WAYS),
                  f"{results['view'][q]['median'] / results['storage table'][q]['median']:.2f}x"]
                 for q in ("lookup", "sum", "fetch all")])
    print(f"view equals recomputation: {ok}; json: {out}")
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "reads", "machine": machine(), "postgresql": version,
                     "parameters": {"rows": rows, "rounds": rounds, "lookups": n, "view": VIEW},
                     "results": results, "plans": plans, "view_equals_recomputation": ok, "plots": [plot_path]})
    return 0 if ok else 1


def plot(results: dict, path: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax, (query, scale, unit) in zip(axes, (("lookup", 1e6, "us"), ("sum", 1e3, "ms"), ("fetch all", 1e3, "ms"))):
        ax.bar(list(WAYS), [results[w][query]["median"] * scale for w in WAYS], color=["tab:gray", "tab:blue"])
        ax.set_title(query)
        ax.set_ylabel(unit)
    fig.suptitle("reading a maintained view: storage table vs view")
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_reads.json")
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the view")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lookups", type=int, default=2000, help="point lookups per round")
    a = ap.parse_args(argv)
    return run(a.dsn, a.rows, a.rounds, a.lookups, a.out, a.keep)
