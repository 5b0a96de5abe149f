"""Compared with the PostgreSQL peer (issue 16): the cost of one batch of changes as the user pays it.

The paper's devices / parts / devices_parts (Section 7.2; --scale 0.02 = 100k devices and parts,
1M links, 20% phones), the views V (Figure 1b, SPJ) and V' (Figure 5b, SUM of prices per phone),
and with --views L, every phone with its count of parts and their total price through two LEFT
JOINs (outer joins under an aggregate; pg_ivm refuses aggregates over outer joins).
Every method gets its own copy of the three tables, in a schema of its own, so that a writer's
transaction pays only that method's triggers:

- idivm `id`, `tuple`, `higher-order` and `auto`, deferred (the writer's transaction, then
  `maintain`) and immediate (maintained inside the writer's transaction); and `id` maintained from SQL
  (`SELECT idivm.maintain(...)` in a REPEATABLE READ transaction of one round trip, as an application
  or pg_cron calls it);
- pg_ivm (`pgivm.create_immv`: immediate, inside the writer's transaction), where the server has
  the extension (`CREATE EXTENSION pg_ivm` succeeds; skipped with a message otherwise). pg_ivm
  indexes V' itself (its GROUP BY) but not V (it lacks devices_parts' key), so V gets an index on
  pid, as pg_ivm's README advises; without it every statement scanned the whole view;
- REFRESH MATERIALIZED VIEW after the writer's transaction;
- the hand-written floor: a statement-level trigger logs (pid, old price, new price) through
  transition tables, and one round trip of two statements applies the logged batch to the view
  (V: the current prices of the logged parts; V': the per-device sum of price differences) and
  empties the log. It knows the workload (price updates only); nothing general can beat it by
  much, so it shows how far each method is from the first-order floor;
- no view at all: the writer's transaction alone, the baseline every incremental cost is
  measured against.

A batch of d changes is d single-row `UPDATE parts SET price = price + 1 WHERE pid = $1` in one
transaction (pipelined), or with --one-statement one UPDATE of the d parts; the same parts for
every method. Each round applies one batch per d to
every method, in an order that rotates between rounds. Per method the cost of a batch is the
writer's transaction plus the maintenance after it; its incremental cost is that minus the
no-view writer's (medians). Every view is compared with its query at the end; a difference
fails the benchmark.
"""
from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass

import psycopg

from .. import api
from ..errors import IdivmError, first_line
from .common import batches_parser, machine, pg_ivm_version, print_table, pyplot, save, scratch_database, summary, timed_load, write_json
from .devices import load as load_devices
from ..sqltext import ident, string_literal

JOINS = ("FROM {s}.parts AS p JOIN {s}.devices_parts AS dp ON dp.pid = p.pid "
         "JOIN {s}.devices AS d ON d.did = dp.did WHERE d.category = 'phone'")
VIEWS = {  # label: (SQL with {s} for the method's schema, the view's columns)
    "V": ("SELECT d.did, p.pid, p.price " + JOINS, ["did", "pid", "price"]),
    "V'": ("SELECT d.did, sum(p.price) AS cost " + JOINS + " GROUP BY d.did", ["did", "cost"]),
}
OUTER_JOINS = ("FROM {s}.devices AS d LEFT JOIN {s}.devices_parts AS dp ON dp.did = d.did "
               "LEFT JOIN {s}.parts AS p ON p.pid = dp.pid WHERE d.category = 'phone'")
VIEWS["L"] = ("SELECT d.did, count(p.pid) AS parts, sum(p.price) AS cost " + OUTER_JOINS + " GROUP BY d.did",
              ["did", "parts", "cost"])  # every phone, with its parts or none: outer joins under an aggregate
TABLES = ("devices", "parts", "devices_parts")


@dataclass(frozen=True)
class Method:
    label: str
    kind: str  # idivm, pg_ivm, recompute, floor, none
    strategy: str = ""
    mode: str = ""


METHODS = [Method(f"idivm {s}" + (" immediate" if m == "immediate" else ""), "idivm", s, m)
           for m in ("deferred", "immediate") for s in ("id", "tuple", "higher-order", "auto")
           if not (m == "immediate" and s == "auto")] + [
    Method("idivm id via SQL", "idivm", "id", "sql"), Method("pg_ivm", "pg_ivm"), Method("REFRESH MATERIALIZED VIEW", "recompute"),
    Method("hand-written floor", "floor"), Method("no view", "none")]
BASELINE = "no view"
PEER = "pg_ivm"


def _schema(i: int) -> str:
    return f"peer_{i}"


def _copy_tables(db, schema: str) -> None:
    """The loaded tables (public) copied into `schema`, with their keys, indexes and statistics."""
    s = ident(schema)
    db.execute(f"CREATE SCHEMA {s}")
    for t in map(ident, TABLES):
        db.execute(f"CREATE TABLE {s}.{t} (LIKE public.{t} INCLUDING ALL)")
        db.execute(f"INSERT INTO {s}.{t} SELECT * FROM public.{t}")
        db.execute(f"ANALYZE {s}.{t}")


def _view_sql(label: str, schema: str) -> str:
    return VIEWS[label][0].format(s=ident(schema))


FLOOR_LOG = ("CREATE TABLE {s}.price_log (pid int, old_price numeric, new_price numeric);"
             "CREATE FUNCTION {s}.log_prices() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
             "INSERT INTO {s}.price_log SELECT o.pid, o.price, n.price FROM old_rows o JOIN new_rows n USING (pid); "
             "RETURN NULL; END $$;"
             "CREATE TRIGGER log_prices AFTER UPDATE ON {s}.parts REFERENCING OLD TABLE AS old_rows "
             "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.log_prices()")
FLOOR_APPLY = {
    "V": ("UPDATE {s}.v SET price = p.price FROM (SELECT DISTINCT pid FROM {s}.price_log) AS l "
          "JOIN {s}.parts AS p ON p.pid = l.pid WHERE v.pid = l.pid; DELETE FROM {s}.price_log"),
    "V'": ("UPDATE {s}.v SET cost = v.cost + x.delta FROM (SELECT dp.did, sum(l.new_price - l.old_price) AS delta "
           "FROM {s}.price_log AS l JOIN {s}.devices_parts AS dp ON dp.pid = l.pid JOIN {s}.devices AS d "
           "ON d.did = dp.did WHERE d.category = 'phone' GROUP BY dp.did) AS x WHERE v.did = x.did; "
           "DELETE FROM {s}.price_log"),
}
FLOOR_APPLY["L"] = FLOOR_APPLY["V'"]  # a price change moves the sums of the devices with that part, padded or not
FLOOR_INDEX = {"V": "CREATE INDEX ON {s}.v (pid)", "V'": "CREATE UNIQUE INDEX ON {s}.v (did)",
               "L": "CREATE UNIQUE INDEX ON {s}.v (did)"}


def _create(db, engine, m: Method, label: str, schema: str) -> None:
    s = ident(schema)
    query = _view_sql(label, schema)
    if m.kind == "idivm":
        engine.register_view(f"{schema}.v", query, strategy=m.strategy, mode="deferred" if m.mode == "sql" else m.mode)
    elif m.kind == "pg_ivm":
        db.execute("SELECT pgivm.create_immv(%s, %s)", (f"{schema}.v", query))
        if label == "V":  # pg_ivm indexes V' (its GROUP BY) itself, V not (it lacks devices_parts' key)
            db.execute(FLOOR_INDEX[label].format(s=s))  # as its README advises; without it a batch took seconds
    elif m.kind == "recompute":
        db.execute(f"CREATE MATERIALIZED VIEW {s}.v AS {query}")
    elif m.kind == "floor":
        db.execute(f"CREATE TABLE {s}.v AS {query}")
        db.execute(FLOOR_INDEX[label].format(s=s))
        db.execute(FLOOR_LOG.format(s=s))
    if m.kind != "none":
        db.execute(f"ANALYZE {s}.v")


def _drop(db, engine, m: Method, schema: str) -> None:
    s = ident(schema)
    if m.kind == "idivm":
        engine.drop_view(f"{schema}.v")
    elif m.kind == "pg_ivm":
        db.execute(f"DROP TABLE {s}.v")
    elif m.kind == "recompute":
        db.execute(f"DROP MATERIALIZED VIEW {s}.v")
    elif m.kind == "floor":
        db.execute(f"DROP TRIGGER log_prices ON {s}.parts; DROP FUNCTION {s}.log_prices(); "
                   f"DROP TABLE {s}.price_log; DROP TABLE {s}.v")


def _batch(db, engine, m: Method, label: str, schema: str, pids: list[int], one_statement: bool = False) -> tuple[float, float]:
    """One batch on the method's tables: (seconds of the writer's transaction, of the maintenance after
    it). The batch is one single-row UPDATE per part, or with `one_statement` one UPDATE of them all."""
    s = ident(schema)
    t0 = time.perf_counter()
    with db.transaction(), db.cursor() as cur:
        if one_statement:
            cur.execute(f"UPDATE {s}.parts SET price = price + 1 WHERE pid = ANY(%s)", (pids,))
        else:
            cur.executemany(f"UPDATE {s}.parts SET price = price + 1 WHERE pid = %s", [(p,) for p in pids])
    t1 = time.perf_counter()
    if m.kind == "idivm" and m.mode == "deferred":
        engine.maintain(f"{schema}.v")
    elif m.kind == "idivm" and m.mode == "sql":  # one round trip: a name of ours, so a literal is safe
        db.execute(f"BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT idivm.maintain({string_literal(schema + '.v')}); COMMIT")
    elif m.kind == "recompute":
        db.execute(f"REFRESH MATERIALIZED VIEW {s}.v")
    elif m.kind == "floor":
        with db.transaction():
            db.execute(FLOOR_APPLY[label].format(s=s))
    return t1 - t0, time.perf_counter() - t1


def _differs(db, label: str, schema: str) -> int:
    """Rows by which the method's view and its query differ (as multisets of the view's columns)."""
    cols = ", ".join(ident(c) for c in VIEWS[label][1])
    s = ident(schema)
    query = _view_sql(label, schema)
    return db.execute(f"SELECT count(*) FROM ((SELECT {cols} FROM {s}.v EXCEPT ALL {query}) UNION ALL "
                      f"({query} EXCEPT ALL SELECT {cols} FROM {s}.v)) AS x").fetchone()[0]


def run(dsn: str | None = None, scale: float = 0.02, batches: str = "1,10,200", rounds: int = 5,
        out: str = "bench-results/bench_peers.json", keep: bool = False, views: str = "V,V'",
        one_statement: bool = False, only: str | None = None) -> int:
    sizes_of_batches = [int(b) for b in batches.split(",") if b.strip()]
    labels = [v.strip() for v in views.split(",") if v.strip()]
    unknown = [v for v in labels if v not in VIEWS]
    if unknown:
        print(f"bench peers: unknown view {unknown[0]!r}; choose from {', '.join(VIEWS)}", file=sys.stderr)
        return 2
    chosen = {m.strip() for m in only.split(",")} | {BASELINE} if only else {m.label for m in METHODS}
    unknown = sorted(chosen - {m.label for m in METHODS})
    if unknown:
        print(f"bench peers: unknown method {unknown[0]!r}; choose from {', '.join(m.label for m in METHODS)}",
              file=sys.stderr)
        return 2
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            pg_ivm = pg_ivm_version(db) if PEER in chosen else None
            methods = [m for m in METHODS if m.label in chosen and (m.kind != "pg_ivm" or pg_ivm)]
            sizes = timed_load(load_devices, db, scale, 0.2, 10, 2)
            t0 = time.perf_counter()
            for i, _ in enumerate(methods):
                _copy_tables(db, _schema(i))
            print(f"copied the tables for {len(methods)} methods in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            engine = api.connect(bench_dsn)
            rng = random.Random(16)
            results, rows, equal, refused = [], [], {}, {}
            for label in labels:
                active = []
                for i, m in enumerate(methods):
                    try:
                        _create(db, engine, m, label, _schema(i))
                        active.append((i, m))
                    except (IdivmError, psycopg.Error) as e:
                        refused[f"{label}/{m.label}"] = first_line(e)
                times = {(n, m.label): [] for n in sizes_of_batches for _, m in active}
                for r in range(rounds):
                    for n in sizes_of_batches:
                        pids = rng.sample(range(1, sizes["parts"] + 1), n)
                        k = (r * len(sizes_of_batches) + sizes_of_batches.index(n)) % len(active)
                        for i, m in active[k:] + active[:k]:
                            times[(n, m.label)].append(_batch(db, engine, m, label, _schema(i), pids, one_statement))
                    print(f"  {label}: round {r + 1} of {rounds} done", file=sys.stderr)
                for i, m in active:
                    if m.kind != "none":
                        equal[f"{label}/{m.label}"] = _differs(db, label, _schema(i)) == 0
                    _drop(db, engine, m, _schema(i))
                for n in sizes_of_batches:
                    entry = {"view": label, "batch": n, "methods": {}}
                    for _, m in active:
                        t = times[(n, m.label)]
                        entry["methods"][m.label] = {"writer": summary([w for w, _ in t]),
                                                     "maintenance": summary([x for _, x in t]),
                                                     "total": summary([w + x for w, x in t])}
                    base = entry["methods"].get(BASELINE, {}).get("total", {}).get("median", 0.0)
                    for stats in entry["methods"].values():
                        stats["incremental"] = stats["total"]["median"] - base
                    peer = entry["methods"].get(PEER, {}).get("incremental")
                    for name, stats in entry["methods"].items():
                        ratio = stats["incremental"] / peer if peer and name != BASELINE else None
                        stats["vs_pg_ivm"] = ratio
                        rows.append([label, n, name, stats["writer"]["median"] * 1000,
                                     stats["maintenance"]["median"] * 1000, stats["total"]["median"] * 1000,
                                     stats["incremental"] * 1000 if name != BASELINE else "",
                                     f"{ratio:.3g}x" if ratio is not None else ""])
                    results.append(entry)
            engine.close()
    ok = all(equal.values())
    writes = "one UPDATE of d parts' prices" if one_statement else "d single-row price updates (one transaction)"
    print(f"Cost of one batch of {writes} as the user pays it: the writer's "
          f"transaction plus the maintenance after it; incremental = that minus the writer alone ({BASELINE}). "
          f"Scale {scale} ({sizes}); medians of {rounds} rounds; PostgreSQL {version}; "
          f"pg_ivm {pg_ivm or 'not installed'}")
    print_table(["view", "d", "method", "writer ms", "maintain ms", "total ms", "incremental ms", "vs pg_ivm"], rows)
    for what, why in refused.items():
        print(f"refused: {what}: {why}")
    for line in targets(results):
        print(line)
    plot_path = out.replace(".json", ".png")
    plot(results, plot_path)
    write_json(out, {"benchmark": "peers", "machine": machine(), "postgresql": version, "pg_ivm": pg_ivm,
                     "views": {k: VIEWS[k][0] for k in labels},
                     "parameters": {"scale": scale, "batches": sizes_of_batches, "rounds": rounds,
                                    "one_statement": one_statement},
                     "sizes": sizes, "results": results, "refused": refused,
                     "views_equal_recomputation": equal, "plots": [plot_path]})
    print(f"views equal recomputation: {ok}; json: {out}; plot: {plot_path}")
    return 0 if ok else 1


# issue 36's targets that these runs measure, each (what, method, relative to, at most, batch sizes:
# None all, 1 the single change): the method's incremental cost over the other's
TARGETS = (
    ("one change, deferred through the API, at most pg_ivm's immediate cost", "idivm id", PEER, 1.0, 1),
    ("one change, deferred through SQL, at most pg_ivm's immediate cost", "idivm id via SQL", PEER, 1.0, 1),
    ("immediate mode, at most half pg_ivm's cost of a single-row UPDATE (2x its throughput)",
     "idivm id immediate", PEER, 0.5, 1),
    ("higher-order at least as fast as id", "idivm higher-order", "idivm id", 1.0, None),
    ("auto never slower than 1.2x recomputation where that is cheaper", "idivm auto", "REFRESH MATERIALIZED VIEW",
     None, None),
)


def targets(results: list[dict]) -> list[str]:
    """One line per target, view and batch size these results measure: the ratio, met or not."""
    lines = []
    for what, method, other, at_most, only in TARGETS:
        for entry in results:
            ms = entry["methods"]
            if method not in ms or other not in ms or (only is not None and entry["batch"] != only):
                continue
            mine, theirs = ms[method]["incremental"], ms[other]["incremental"]
            if at_most is None:  # against the cheaper of recomputing and the method itself
                ratio, bound = mine / min(mine, theirs) if min(mine, theirs) > 0 else 1.0, 1.2
            else:
                ratio, bound = (mine / theirs if theirs > 0 else float("inf")), at_most
            lines.append(f"target ({what}; {entry['view']}, d = {entry['batch']}): {ratio:.2f}x of {other}, "
                         f"{'met' if ratio <= bound else 'NOT met'}")
    return lines


def plot(results: list[dict], path: str) -> None:
    """Per view: the incremental cost of a batch by method, one group of bars per batch size."""
    plt = pyplot()
    labels = list(dict.fromkeys(e["view"] for e in results))
    fig, axes = plt.subplots(1, len(labels), figsize=(7 * len(labels), 5), squeeze=False)
    for ax, label in zip(axes[0], labels):
        entries = [e for e in results if e["view"] == label]
        names = [n for n in entries[0]["methods"] if n != BASELINE]
        width = 0.8 / max(1, len(names))
        for j, name in enumerate(names):
            xs = [k + j * width for k in range(len(entries))]
            ys = [max(e["methods"][name]["incremental"] * 1000, 0.01) if name in e["methods"] else 0 for e in entries]
            ax.bar(xs, ys, width, label=name)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(entries))], [str(e["batch"]) for e in entries])
        ax.set_yscale("log")
        ax.set_xlabel("changes per batch (d)")
        ax.set_ylabel("incremental cost per batch, ms (log)")
        ax.set_title(f"{label}: writer + maintenance beyond the bare write")
    axes[0][-1].legend(fontsize=7)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = batches_parser(__doc__, "bench-results/bench_peers.json", 0.02,
                        "0.02 = 100k devices and parts, 1M links", "1,10,200")
    ap.set_defaults(rounds=5)
    ap.add_argument("--views", default="V,V'", help="comma-separated: V (SPJ), V' (SUM per device), L (LEFT JOINs under count and sum)")
    ap.add_argument("--one-statement", action="store_true",
                    help="each batch is one UPDATE of d rows instead of d single-row UPDATEs (what immediate "
                         "methods pay once per statement)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated method labels as the table prints them (default: all; "
                         "'no view' is always measured, as the baseline)")
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.batches, a.rounds, a.out, a.keep, a.views, a.one_statement, a.methods)
