"""What a view maintained often pays while another view over the same table is maintained rarely.

A captured table has one log, shared by every view over it, and a log row stays until every
deferred view over the table has consumed it. So a view maintained every second sits next to the
rows kept for a view maintained once an hour. This benchmark shows what those rows cost the busy
view: its maintenance (and `status`, which counts pending changes for the scheduler) should not
grow with them.

Table items(id, grp, val) (--rows rows, 100 groups). The busy view (SELECT grp, count(*),
sum(val) ... GROUP BY grp) is maintained after every batch; the idle view (SELECT id, val ...
WHERE val % 2 = 0) is never maintained while the busy one is timed, so the log keeps every change
since it was registered. For each size in --idle (log rows kept for the idle view, grown by bulk
updates that the busy view then consumes untimed), --rounds batches are timed: --batch single-row
updates in one transaction (the writer), then the busy view's `maintain`, then `status()`.
At the end both views are maintained and compared with recomputation; a difference fails the
benchmark.
"""
from __future__ import annotations

import time

import psycopg

from .. import api
from .common import machine, parser, print_table, pyplot, save, scratch_database, summary, write_json

BUSY = "SELECT grp, count(*) AS n, sum(val) AS total FROM items GROUP BY grp"
IDLE = "SELECT id, val FROM items WHERE val % 2 = 0"
GROW_CHUNK = 100_000  # rows updated per statement while growing the idle view's log


def load(db: psycopg.Connection, rows: int) -> None:
    db.execute("CREATE TABLE items (id int PRIMARY KEY, grp int NOT NULL, val bigint NOT NULL)")
    db.execute("INSERT INTO items SELECT g, g %% 100, g FROM generate_series(1, %s) g", (rows,))
    db.execute("VACUUM ANALYZE items")


def log_rows(db: psycopg.Connection) -> int:
    """Rows in the log of items (the only captured table)."""
    log = db.execute("SELECT log_table FROM idivm.captured_tables").fetchone()[0]
    return db.execute(f"SELECT count(*) FROM {log}").fetchone()[0]


def grow(db: psycopg.Connection, engine, rows: int, target: int) -> int:
    """Bulk-update items until the log holds at least `target` rows (kept for the idle view), let
    the busy view consume them (untimed), and return the log's size."""
    have = log_rows(db)
    start = 1
    while have < target:
        n = min(GROW_CHUNK, rows, target - have)
        db.execute("UPDATE items SET val = val + 1 WHERE id BETWEEN %s AND %s", (start, start + n - 1))
        start = start + n if start + n <= rows else 1
        have += n
    engine.maintain("busy")
    return log_rows(db)


def batch(db: psycopg.Connection, rows: int, size: int, seed: int) -> float:
    """One writer transaction of `size` single-row updates (pipelined); its seconds."""
    t0 = time.perf_counter()
    with db.transaction(), db.cursor() as cur:
        cur.executemany("UPDATE items SET val = val + 1 WHERE id = %s",
                        [(1 + (seed * 7919 + i * 104729) % rows,) for i in range(size)])
    return time.perf_counter() - t0


def run(dsn: str | None = None, rows: int = 100_000, idle: tuple[int, ...] = (0, 100_000, 1_000_000),
        size: int = 200, rounds: int = 10, out: str = "bench-results/bench_log_size.json",
        keep: bool = False) -> int:
    results = []
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            load(db, rows)
            engine = api.connect(bench_dsn)
            engine.init()
            engine.register_view("busy", BUSY)
            engine.register_view("idle", IDLE)
            seed = 0
            for target in sorted(idle):
                kept = grow(db, engine, rows, target)
                times: dict[str, list[float]] = {"writer": [], "maintain": [], "status": []}
                for _ in range(rounds):
                    seed += 1
                    times["writer"].append(batch(db, rows, size, seed))
                    t0 = time.perf_counter()
                    engine.maintain("busy")
                    times["maintain"].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    engine.status()
                    times["status"].append(time.perf_counter() - t0)
                results.append({"idle_log_rows": kept, **{k: summary(v) for k, v in times.items()}})
            engine.maintain("idle")
            ok = engine.verify("busy").ok and engine.verify("idle").ok
            engine.close()

    base = results[0]["maintain"]["median"]
    print(f"busy view's cost while the idle view keeps log rows: items of {rows} rows, batches of {size} "
          f"single-row updates, median of {rounds} rounds, PostgreSQL {version}")
    print_table(["log rows kept", "writer (ms)", "maintain (ms)", "status (ms)", "maintain / first"],
                [[r["idle_log_rows"], r["writer"]["median"] * 1000, r["maintain"]["median"] * 1000,
                  r["status"]["median"] * 1000, f"{r['maintain']['median'] / base:.2f}x"] for r in results])
    print(f"views equal recomputation: {ok}; json: {out}")
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "log_size", "machine": machine(), "postgresql": version,
                     "parameters": {"rows": rows, "idle": list(idle), "batch": size, "rounds": rounds,
                                    "busy": BUSY, "idle_view": IDLE},
                     "results": results, "views_equal_recomputation": ok, "plots": [plot_path]})
    return 0 if ok else 1


def plot(results: list[dict], path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [r["idle_log_rows"] for r in results]
    for key, color in (("maintain", "tab:blue"), ("status", "tab:green"), ("writer", "tab:gray")):
        ax.plot(xs, [r[key]["median"] * 1000 for r in results], marker="o", label=key, color=color)
    ax.set_xscale("symlog", linthresh=1000)
    ax.set_xlabel("log rows kept for the idle view")
    ax.set_ylabel("ms per batch (median)")
    ax.set_ylim(bottom=0)
    ax.set_title("busy view's cost vs. rows kept for another view")
    ax.legend(fontsize=8)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_log_size.json")
    ap.add_argument("--rows", type=int, default=100_000, help="rows of the items table")
    ap.add_argument("--idle", default="0,100000,1000000", help="comma-separated log sizes kept for the idle view")
    ap.add_argument("--batch", type=int, default=200, help="single-row updates per writer transaction")
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args(argv)
    return run(a.dsn, a.rows, tuple(int(x) for x in a.idle.split(",")), a.batch, a.rounds, a.out, a.keep)
