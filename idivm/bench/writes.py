"""The cost users pay per write: single-row INSERT and UPDATE throughput with and without capture.

A base table accounts(aid, bid, balance) of 1M rows (scale 1.0) and branches(bid, name) are
loaded; pgbench runs single-row INSERT and UPDATE transactions with 1 and 2 clients for
--seconds each, repeated --repeat times: with no view; with a join-aggregate view registered
deferred (its capture triggers on; the maintenance after each run is timed); the same view in
immediate mode (maintained inside every writer's transaction); and, where the server has the
extension, pg_ivm's immediately maintained view of the same query instead. Each view is
verified against recomputation after its runs. Deferred capture should keep most of the write
throughput; immediate mode pays the view's work in every write, and is compared with pg_ivm,
which does the same.
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
    pg_ivm_version,
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


def pgbench(dsn: str, script: str, clients: int, seconds: int, transactions: int | None = None) -> float:
    """Transactions per second of one pgbench run (without initial connection time): for `seconds`,
    or `transactions` per client when given."""
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
                               *(["-t", str(transactions)] if transactions else ["-T", str(seconds)])],
                              env=env, capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    found = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
    if found is None:
        raise RuntimeError(f"could not read pgbench's throughput from:\n{done.stdout}\n{done.stderr}")
    return float(found.group(1))


MODES = ("no view", "deferred", "immediate", "pg_ivm")
PG_IVM_VIEW = "balances_pg_ivm"


def _apply_mode(db: psycopg.Connection, engine, mode: str) -> None:
    """Set up `mode` over the tables the previous mode left: idivm's view deferred (its capture
    triggers only), then immediate (maintained inside every writer's transaction), then dropped for
    pg_ivm's immediately maintained view of the same query."""
    if mode == "deferred":
        engine.register_view("balances", VIEW)
    elif mode == "immediate":
        engine.set_mode("balances", "immediate")
    elif mode == "pg_ivm":
        engine.drop_view("balances")
        db.execute("SELECT pgivm.create_immv(%s, %s)", (PG_IVM_VIEW, VIEW))
        db.execute(f"ANALYZE {PG_IVM_VIEW}")


def _equal(db: psycopg.Connection, engine, mode: str) -> bool:
    if mode in ("deferred", "immediate"):
        return engine.verify("balances").ok
    if mode == "pg_ivm":
        return db.execute(f"SELECT count(*) FROM ((SELECT name, accounts, total FROM {PG_IVM_VIEW} EXCEPT ALL {VIEW}) "
                          f"UNION ALL ({VIEW} EXCEPT ALL SELECT name, accounts, total FROM {PG_IVM_VIEW})) AS x"
                          ).fetchone()[0] == 0
    return True


def run(dsn: str | None = None, scale: float = 1.0, seconds: int = 10, repeat: int = 3,
        out: str = "bench-results/bench_writes.json", keep: bool = False, transactions: int | None = None) -> int:
    rows = int(1_000_000 * scale)
    tps: dict[tuple[str, int, str], list[float]] = {}
    maintenance: dict[tuple[str, int], list[float]] = {}
    ok = True
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            load(db, rows)
            pg_ivm = pg_ivm_version(db)
            modes = [m for m in MODES if m != "pg_ivm" or pg_ivm]
            engine = api.connect(bench_dsn)
            engine.init()
            for mode in modes:
                _apply_mode(db, engine, mode)
                for _ in range(repeat):
                    for workload, template in WORKLOADS.items():
                        for clients in (1, 2):
                            script = template.replace("{rows}", str(rows))
                            tps.setdefault((workload, clients, mode), []).append(
                                pgbench(bench_dsn, script, clients, seconds, transactions))
                            if mode == "deferred":
                                t0 = time.perf_counter()
                                engine.maintain("balances")
                                maintenance.setdefault((workload, clients), []).append(time.perf_counter() - t0)
                equal = _equal(db, engine, mode)
                if not equal:
                    print(f"{mode}: the view differs from its query")
                ok = ok and equal
            engine.close()

    results = []
    rows_out = []
    for workload in WORKLOADS:
        for clients in (1, 2):
            stats = {m: summary(tps[(workload, clients, m)]) for m in modes}
            base = stats["no view"]["median"]
            maint = summary(maintenance[(workload, clients)])
            r = {"workload": workload, "clients": clients, "tps_no_view": stats["no view"],
                 "tps_capture": stats["deferred"], "tps_immediate": stats["immediate"],
                 "tps_pg_ivm": stats.get("pg_ivm"), "throughput_kept": stats["deferred"]["median"] / base,
                 "immediate_kept": stats["immediate"]["median"] / base,
                 "immediate_vs_pg_ivm": stats["immediate"]["median"] / stats["pg_ivm"]["median"] if pg_ivm else None,
                 "maintenance_seconds": maint}
            results.append(r)
            rows_out.append([workload, clients] + [stats[m]["median"] for m in modes]
                            + [f"{r['throughput_kept'] * 100:.0f}%", f"{r['immediate_kept'] * 100:.0f}%"]
                            + ([f"{r['immediate_vs_pg_ivm']:.2f}x"] if pg_ivm else [])
                            + [maint["median"] * 1000])
    length = f"{transactions} transactions per client" if transactions else f"{seconds} s"
    print(f"single-row writes on accounts ({rows} rows), {length} per run, {repeat} runs, "
          f"PostgreSQL {version}, pg_ivm {pg_ivm or 'not installed'}; view: {VIEW}")
    print_table(["workload", "clients"] + [f"tps, {m}" for m in modes] + ["deferred kept", "immediate kept"]
                + (["immediate / pg_ivm"] if pg_ivm else []) + ["maintain after deferred (ms)"], rows_out)
    target = all(r["throughput_kept"] >= 0.85 for r in results)
    print(f"target (deferred capture keeps >= 85% of single-row write throughput): {'met' if target else 'NOT met'}")
    if pg_ivm:
        peer = all(r["immediate_vs_pg_ivm"] >= 2 for r in results)
        print(f"target (immediate mode >= 2x pg_ivm's throughput): {'met' if peer else 'NOT met'}")
    print(f"views equal recomputation: {ok}; json: {out}")
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path, modes)
    write_json(out, {"benchmark": "writes", "machine": machine(), "postgresql": version, "pg_ivm": pg_ivm,
                     "parameters": {"rows": rows, "seconds": seconds, "transactions": transactions, "repeat": repeat,
                                    "view": VIEW},
                     "results": results, "target_met": target, "views_equal_recomputation": ok,
                     "plots": [plot_path]})
    return 0 if ok else 1


def plot(results: list[dict], path: str, modes) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['workload']}, {r['clients']} client{'s' if r['clients'] > 1 else ''}" for r in results]
    xs = range(len(results))
    keys = {"no view": "tps_no_view", "deferred": "tps_capture", "immediate": "tps_immediate", "pg_ivm": "tps_pg_ivm"}
    colors = {"no view": "tab:gray", "deferred": "tab:blue", "immediate": "tab:orange", "pg_ivm": "tab:red"}
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        offset = (k - (len(modes) - 1) / 2) * width
        ax.bar([x + offset for x in xs], [r[keys[mode]]["median"] for r in results], width, label=mode,
               color=colors[mode])
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylabel("transactions / s")
    ax.set_title("single-row write throughput: no view, idivm deferred/immediate, pg_ivm", fontsize=10)
    ax.legend(fontsize=8)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/bench_writes.json")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 1M accounts rows")
    ap.add_argument("--seconds", type=int, default=10, help="duration of each pgbench run")
    ap.add_argument("--transactions", type=int, default=None,
                    help="transactions per client in each pgbench run instead of --seconds (a quick check that "
                         "the benchmark works: so few give no steady throughput)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per workload, client count and mode")
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.seconds, a.repeat, a.out, a.keep, a.transactions)
