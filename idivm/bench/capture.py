"""What capture costs on the write path, per kind of statement, with no view, a deferred view and an
immediate view over the written tables.

Tables accounts(aid, bid, balance) (--rows) and branches(bid, name, total), where a user trigger on
accounts keeps branches.total (a nested write, as real schemas have). Each workload runs --count
statements, each its own transaction, from one client, timed from the client (round trips
included, alike for every configuration); bulk updates touch 2,000 rows per statement. The view
(a join with an aggregate) is registered deferred (capture triggers only: the cost every writer
pays) and then immediate (the view is maintained inside the writer's transaction); each is
verified against recomputation after its runs. Medians of --repeat runs.
"""
from __future__ import annotations

import time

import psycopg

from .. import api
from .common import machine, parser, print_table, pyplot, save, scratch_database, summary, write_json

VIEW = ("SELECT b.name, count(*) AS accounts, sum(a.balance) AS balance "
        "FROM accounts a JOIN branches b ON b.bid = a.bid GROUP BY b.name")
CONFIGS = ("no view", "deferred view", "immediate view")
TRIGGER = """
CREATE FUNCTION keep_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE branches SET total = total + NEW.balance - OLD.balance WHERE bid = NEW.bid;
  RETURN NULL;
END$$;
CREATE TRIGGER keep_total AFTER UPDATE OF balance ON accounts FOR EACH ROW
  WHEN (NEW.bid = OLD.bid AND NEW.balance <> OLD.balance) EXECUTE FUNCTION keep_total();
"""


def load(db: psycopg.Connection, rows: int) -> None:
    db.execute("CREATE TABLE branches (bid int PRIMARY KEY, name text NOT NULL, total bigint NOT NULL DEFAULT 0)")
    db.execute("INSERT INTO branches SELECT g, 'branch ' || g, 0 FROM generate_series(1, 100) g")
    db.execute("CREATE TABLE accounts (aid bigint PRIMARY KEY, bid int NOT NULL, balance int NOT NULL, "
               "note int NOT NULL DEFAULT 0)")
    db.execute("INSERT INTO accounts SELECT g, 1 + g %% 100, 0 FROM generate_series(1, %s) g", (rows,))
    db.execute(TRIGGER)
    db.execute("VACUUM ANALYZE")


def workloads(rows: int, count: int):
    """name -> (statement, parameters for the i-th run). Inserted rows are deleted again by 'delete'."""
    top = 10 * rows
    return {
        "insert": ("INSERT INTO accounts (aid, bid, balance) VALUES (%s, %s, 0)", lambda i: (top + i, 1 + i % 100)),
        "update": ("UPDATE accounts SET note = note + 1 WHERE aid = %s", lambda i: (1 + (i * 7919) % rows,)),
        "update, nested": ("UPDATE accounts SET balance = balance + 1 WHERE aid = %s",
                           lambda i: (1 + (i * 104729) % rows,)),
        "delete": ("DELETE FROM accounts WHERE aid = %s", lambda i: (top + i,)),
        "bulk update (2k rows)": ("UPDATE accounts SET balance = balance + 1 WHERE aid BETWEEN %s AND %s",
                                   lambda i: (1 + (i * 2_000) % rows, (i * 2_000) % rows + 2_000)),
    }


def measure(db: psycopg.Connection, statement: str, params, n: int) -> float:
    """Milliseconds per statement over n autocommitted statements; NaN if a statement failed (the
    error is printed: a write path that fails is a finding, not a crash of the benchmark)."""
    t0 = time.perf_counter()
    try:
        for i in range(n):
            db.execute(statement, params(i))
    except psycopg.Error as e:
        print(f"failed: {statement}: {str(e).splitlines()[0]}")
        return float("nan")
    return (time.perf_counter() - t0) * 1000 / n


def _summary(values: list[float]) -> dict:
    """summary() of the runs that did not fail (a NaN median when every run failed)."""
    done = [v for v in values if v == v]
    return {**summary(done), "failed_runs": len(values) - len(done)} if done else \
        {"median": float("nan"), "failed_runs": len(values)}


def run(dsn: str | None = None, rows: int = 100_000, count: int = 500, repeat: int = 3,
        out: str = "bench-results/bench_capture.json", keep: bool = False, label: str = "") -> int:
    times: dict[tuple[str, str], list[float]] = {}
    ok = True
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            load(db, rows)
            engine = api.connect(bench_dsn)
            engine.init()
            for config in CONFIGS:
                if config == "deferred view":
                    engine.register_view("balances", VIEW)
                elif config == "immediate view":
                    engine.set_mode("balances", "immediate")
                for _ in range(repeat):
                    for name, (statement, params) in workloads(rows, count).items():
                        n = max(1, count // 50) if name.startswith("bulk") else count
                        times.setdefault((name, config), []).append(measure(db, statement, params, n))
                    if config == "deferred view":
                        engine.maintain("balances")
                if config != "no view":
                    ok = ok and engine.verify("balances").ok
                    db.execute("DELETE FROM accounts WHERE aid > %s", (rows,))  # what a failed run left
            engine.close()

    results, table = [], []
    for name in workloads(rows, count):
        stats = {c: _summary(times[(name, c)]) for c in CONFIGS}
        base = stats["no view"]["median"]
        results.append({"workload": name, "ms_per_statement": stats,
                        "relative_to_no_view": {c: stats[c]["median"] / base for c in CONFIGS}})
        table.append([name] + [stats[c]["median"] for c in CONFIGS]
                     + [f"{stats[c]['median'] / base:.2f}x" for c in CONFIGS[1:]])
    print(f"write path {label}: ms per statement (one client, autocommit), accounts of {rows} rows, "
          f"{count} statements per run (bulk: {max(1, count // 50)}), median of {repeat}, PostgreSQL {version}")
    print_table(["workload"] + [f"{c} (ms)" for c in CONFIGS] + ["deferred/none", "immediate/none"],
                [[r[0]] + [f"{x:.3f}" for x in r[1:4]] + r[4:] for r in table])
    print(f"views equal recomputation: {ok}; json: {out}")
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path, label)
    write_json(out, {"benchmark": "capture", "label": label, "machine": machine(), "postgresql": version,
                     "parameters": {"rows": rows, "count": count, "repeat": repeat, "view": VIEW},
                     "results": results, "views_equal_recomputation": ok, "plots": [plot_path]})
    return 0 if ok else 1


def plot(results: list[dict], path: str, label: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = range(len(results))
    colors = {"no view": "tab:gray", "deferred view": "tab:blue", "immediate view": "tab:orange"}
    for k, config in enumerate(CONFIGS):
        ax.bar([x + (k - 1) * 0.27 for x in xs], [r["relative_to_no_view"][config] for r in results], 0.27,
               label=config, color=colors[config])
    ax.set_xticks(list(xs), [r["workload"] for r in results], fontsize=7)
    ax.set_ylabel("time per statement / no view")
    ax.set_title(f"write-path cost of capture {label}".strip())
    ax.legend(fontsize=8)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_capture.json")
    ap.add_argument("--rows", type=int, default=100_000, help="rows of the accounts table")
    ap.add_argument("--count", type=int, default=500, help="statements per run (bulk updates: count / 50)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per workload and configuration")
    ap.add_argument("--label", default="", help="a name for this run in the output (e.g. a commit)")
    a = ap.parse_args(argv)
    return run(a.dsn, a.rows, a.count, a.repeat, a.out, a.keep, a.label)
