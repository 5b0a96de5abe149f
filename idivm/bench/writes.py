"""The cost users pay per write: single-row INSERT and UPDATE throughput with and without capture.

A base table accounts(aid, bid, balance) of 1M rows (scale 1.0) and branches(bid, name) are
loaded; pgbench runs single-row INSERT and UPDATE transactions with 1 and 2 clients for
--seconds each, first with no view, then with a join-aggregate view registered (its capture
triggers on), repeated --repeat times. After each run with the view, the maintenance that
follows is timed and the view verified against recomputation. Deferred maintenance should
keep most of the write throughput, unlike immediate maintenance, which does the view's work
inside every writing transaction.
"""
from __future__ import annotations

import os
import shutil
import re
import subprocess
import tempfile
import time

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import api
from ..embedded import bindir
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

VIEW = ("SELECT b.name, count(*) AS accounts, sum(a.balance) AS total "
        "FROM accounts a JOIN branches b ON b.bid = a.bid GROUP BY b.name")
WORKLOADS = {
    "insert": "\\set bid random(1, 100)\n"
              "INSERT INTO accounts (aid, bid, balance) VALUES (nextval('aid_seq'), :bid, 0);\n",
    "update": "\\set aid random(1, {rows})\n\\set delta random(-100, 100)\n"
              "UPDATE accounts SET balance = balance + :delta WHERE aid = :aid;\n",
}


def load(db: psycopg.Connection, rows: int) -> None:
    db.execute("CREATE TABLE branches (bid int PRIMARY KEY, name text NOT NULL)")
    db.execute("INSERT INTO branches SELECT g, 'branch ' || g FROM generate_series(1, 100) g")
    db.execute("CREATE TABLE accounts (aid bigint PRIMARY KEY, bid int NOT NULL, balance int NOT NULL)")
    db.execute("INSERT INTO accounts SELECT g, 1 + g %% 100, 0 FROM generate_series(1, %s) g", (rows,))
    db.execute(f"CREATE SEQUENCE aid_seq START {rows + 1}")
    db.execute("VACUUM ANALYZE")


def pgbench_path() -> str:
    """pgbench from PATH, else next to the server binaries (Debian keeps it there)."""
    found = shutil.which("pgbench") or (str(bindir() / "pgbench") if (bindir() / "pgbench").exists() else None)
    if found is None:
        raise SystemExit("pgbench not found (it ships with PostgreSQL's server or client packages)")
    return found


def pgbench(dsn: str, script: str, clients: int, seconds: int) -> float:
    """Transactions per second of one pgbench run (without initial connection time)."""
    params = conninfo_to_dict(dsn)
    env = dict(os.environ)
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE"),
                     ("password", "PGPASSWORD")):
        if params.get(key):
            env[var] = str(params[key])
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        done = subprocess.run([pgbench_path(), "-n", "-f", f.name, "-c", str(clients), "-j", str(clients),
                               "-T", str(seconds)], env=env, capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    found = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
    if found is None:
        raise RuntimeError(f"could not read pgbench's throughput from:\n{done.stdout}\n{done.stderr}")
    return float(found.group(1))


def run(dsn: str | None = None, scale: float = 1.0, seconds: int = 10, repeat: int = 3,
        out: str = "bench-results/bench_writes.json", keep: bool = False) -> int:
    rows = int(1_000_000 * scale)
    tps: dict[tuple[str, int, str], list[float]] = {}
    maintenance: dict[tuple[str, int], list[float]] = {}
    ok = True
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            load(db, rows)
            engine = api.connect(bench_dsn)
            engine.init()
            for mode in ("no view", "view, capture on"):
                if mode != "no view":
                    engine.register_view("balances", VIEW)
                for _ in range(repeat):
                    for workload, template in WORKLOADS.items():
                        for clients in (1, 2):
                            script = template.replace("{rows}", str(rows))
                            tps.setdefault((workload, clients, mode), []).append(
                                pgbench(bench_dsn, script, clients, seconds))
                            if mode != "no view":
                                t0 = time.perf_counter()
                                engine.maintain("balances")
                                maintenance.setdefault((workload, clients), []).append(time.perf_counter() - t0)
                ok = ok and (mode == "no view" or engine.verify("balances").ok)
            engine.close()

    results = []
    rows_out = []
    for workload in WORKLOADS:
        for clients in (1, 2):
            base, cap = (summary(tps[(workload, clients, m)]) for m in ("no view", "view, capture on"))
            maint = summary(maintenance[(workload, clients)])
            kept = cap["median"] / base["median"]
            results.append({"workload": workload, "clients": clients, "tps_no_view": base, "tps_capture": cap,
                            "throughput_kept": kept, "maintenance_seconds": maint})
            rows_out.append([workload, clients, base["median"], cap["median"], f"{kept * 100:.0f}%",
                             maint["median"] * 1000])
    print(f"single-row writes on accounts ({rows} rows), {seconds} s per run, {repeat} runs, "
          f"PostgreSQL {version}; view: {VIEW}")
    print_table(["workload", "clients", "tps, no view", "tps, capture on", "kept", "maintain after (ms)"], rows_out)
    target = all(r["throughput_kept"] >= 0.8 for r in results)
    print(f"target (capture keeps >= 80% of write throughput): {'met' if target else 'NOT met'}; "
          f"view equals recomputation: {ok}; json: {out}")
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "writes", "machine": machine(), "postgresql": version,
                     "parameters": {"rows": rows, "seconds": seconds, "repeat": repeat, "view": VIEW},
                     "results": results, "target_met": target, "views_equal_recomputation": ok,
                     "plots": [plot_path]})
    return 0 if ok else 1


def plot(results: list[dict], path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = [f"{r['workload']}, {r['clients']} client{'s' if r['clients'] > 1 else ''}" for r in results]
    xs = range(len(results))
    ax.bar([x - 0.2 for x in xs], [r["tps_no_view"]["median"] for r in results], 0.4, label="no view", color="tab:gray")
    ax.bar([x + 0.2 for x in xs], [r["tps_capture"]["median"] for r in results], 0.4, label="view, capture on",
           color="tab:blue")
    for x, r in zip(xs, results):
        ax.annotate(f"{r['throughput_kept'] * 100:.0f}%", (x + 0.2, r["tps_capture"]["median"]), ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylabel("transactions / s")
    ax.set_title("single-row write throughput with deferred capture")
    ax.legend(fontsize=8)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_writes.json")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 1M accounts rows")
    ap.add_argument("--seconds", type=int, default=10, help="duration of each pgbench run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per workload, client count and mode")
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.seconds, a.repeat, a.out, a.keep)
