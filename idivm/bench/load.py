"""Sustained load under the scheduler: how far behind the writers maintained views stay.

Several writer threads commit single-row transactions for --seconds against two base tables
(events: inserts and updates; writers: occasional updates) while `idivm schedule` runs as a
child process. Two views are registered: per-writer counts and sums (specialized SUM rule) and
a join of events with writers (SPJ). Every writer numbers its inserts; a monitor polls the
per-writer counts view every --poll seconds, so each insert's **lag** is the time from its
commit returning to the first poll that sees it in the view. The script reports write
throughput, lag percentiles, the scheduler's maintenances, and fails if a view differs from
recomputation at the end or the scheduler did not exit 0 on SIGTERM.
"""
from __future__ import annotations

import random
import statistics
import sys
import time

import psycopg

from .. import api
from .common import Scheduler, Writers, machine, parser, print_table, scratch_database, write_json

VIEWS = {
    "per_writer": "SELECT writer, count(*) AS n, sum(amount) AS total FROM events GROUP BY writer",
    "big_events": ("SELECT e.id, e.amount, w.name FROM events e JOIN writers w ON w.id = e.writer "
                   "WHERE e.amount > 50"),
}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def run(dsn: str | None = None, seconds: float = 60.0, writers: int = 3, every: float = 1.0,
        max_pending: int = 500, poll: float = 0.02, keep: bool = False) -> dict:
    with scratch_database(dsn, keep) as (db_dsn, version):
        with psycopg.connect(db_dsn, autocommit=True) as db:
            db.execute("CREATE TABLE writers (id int PRIMARY KEY, name text NOT NULL)")
            db.execute("INSERT INTO writers SELECT g, 'writer ' || g FROM generate_series(1, %s) g", (writers,))
            db.execute("CREATE TABLE events (id bigint PRIMARY KEY, writer int NOT NULL, amount int NOT NULL)")
        engine = api.connect(db_dsn)
        for name, sql in VIEWS.items():
            engine.register_view(name, sql)
            engine.set_policy(name, every=every, max_pending=max_pending)
        scheduler = Scheduler(db_dsn, every)
        phase = Writers()
        commits: dict[int, list[float]] = {w: [] for w in range(1, writers + 1)}  # writer -> commit times
        writes = {w: 0 for w in commits}

        def write(w: int) -> None:
            rng = random.Random(w)
            with psycopg.connect(db_dsn, autocommit=True) as conn:
                while not phase.stop.is_set():
                    k = len(commits[w])
                    conn.execute("INSERT INTO events VALUES (%s, %s, %s)", (w * 10**9 + k, w, rng.randint(1, 100)))
                    commits[w].append(time.monotonic())
                    writes[w] += 1
                    if k and rng.random() < 0.3:
                        conn.execute("UPDATE events SET amount = %s WHERE id = %s",
                                     (rng.randint(1, 100), w * 10**9 + rng.randrange(k)))
                        writes[w] += 1
                    if rng.random() < 0.01:
                        conn.execute("UPDATE writers SET name = %s WHERE id = %s", (f"writer {w}.{k}", w))
                        writes[w] += 1

        lags: list[float] = []
        seen = {w: 0 for w in commits}

        def monitor() -> None:
            with psycopg.connect(db_dsn, autocommit=True) as conn:
                # until every writer has finished: one may commit its last insert after `stop` is set
                while not phase.written.is_set() or any(seen[w] < len(commits[w]) for w in commits):
                    now = time.monotonic()
                    for w, n in conn.execute("SELECT writer, n FROM per_writer").fetchall():
                        n = min(n, len(commits[w]))  # a row committed whose time its writer has yet to note: next poll
                        for k in range(seen[w], n):
                            lags.append(now - commits[w][k])
                        seen[w] = max(seen[w], n)
                    time.sleep(poll)
                    if phase.gave_up(120):
                        return  # the scheduler never caught up: reported below as unseen writes

        elapsed = phase.run([lambda w=w: write(w) for w in commits], seconds, monitor)
        exit_code = scheduler.stop(timeout=30)
        events = scheduler.events
        equal = {name: engine.verify(name).ok for name in VIEWS}
        engine.close()

    maintained = [e for e in events if e["event"] == "maintained"]
    inserts = sum(len(c) for c in commits.values())
    result = {
        "machine": machine(), "postgresql": version,
        "params": {"seconds": seconds, "writers": writers, "every": every, "max_pending": max_pending, "poll": poll},
        "write_transactions": sum(writes.values()), "inserts": inserts,
        "writes_per_second": sum(writes.values()) / elapsed,
        "unseen_inserts": inserts - len(lags),
        "lag_seconds": {f"p{p}": percentile(lags, p) for p in (50, 90, 95, 99)} | {
            "max": max(lags), "mean": statistics.fmean(lags)} if lags else {},
        "maintenances": len(maintained),
        "maintenance_ms": {"median": statistics.median(e["ms"] for e in maintained),
                           "max": max(e["ms"] for e in maintained)} if maintained else {},
        "failures": len([e for e in events if e["event"] == "failed"]),
        "scheduler_exit_code": exit_code,
        "views_equal_recomputation": equal,
    }
    result["ok"] = (all(equal.values()) and exit_code == 0 and result["unseen_inserts"] == 0
                    and result["failures"] == 0)
    return result


def report(result: dict) -> None:
    lag = result["lag_seconds"]
    p = result["params"]
    print(f"{p['writers']} writers for {p['seconds']:g} s, scheduler --every {p['every']:g} "
          f"(views: max pending {p['max_pending']}); PostgreSQL {result['postgresql']}")
    print_table(["write tx/s", "inserts", "maintenances", "maint. median ms", "lag p50 s", "lag p90 s",
                 "lag p99 s", "lag max s"],
                [[result["writes_per_second"], result["inserts"], result["maintenances"],
                  result["maintenance_ms"].get("median", 0.0), f"{lag.get('p50', 0):.3f}",
                  f"{lag.get('p90', 0):.3f}", f"{lag.get('p99', 0):.3f}", f"{lag.get('max', 0):.3f}"]])
    print(f"views equal recomputation: {result['views_equal_recomputation']}; scheduler exit code "
          f"{result['scheduler_exit_code']}; inserts never seen in the view: {result['unseen_inserts']}")


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/load.json")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the writers write")
    ap.add_argument("--writers", type=int, default=3, help="concurrent writer connections")
    ap.add_argument("--every", type=float, default=1.0, help="the views' policy: maintain at least every S seconds")
    ap.add_argument("--max-pending", type=int, default=500, help="the views' policy: maintain at N pending changes")
    args = ap.parse_args(argv)
    result = run(args.dsn, args.seconds, args.writers, args.every, args.max_pending, keep=args.keep)
    report(result)
    write_json(args.out, result)
    print(f"json: {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
