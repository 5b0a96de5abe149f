"""Where one maintenance's time goes, statement by statement (issue 16: profile-driven changes).

Loads the paper's devices / parts / devices_parts (--scale), registers V or V' (--view) with a
strategy, then for each of --repeat rounds applies a batch of d single-row price updates and
maintains the view, timing every SQL statement the maintenance sends (catalog queries, i-diff
instances, the Δ-script, the prune) on the client side, round trip included. Prints, per
statement text (numbers and identifiers of temporary tables folded so repeated shapes group), the
median milliseconds per maintenance and how many times it ran; and the rest of the wall time
(Python, commits, connection checkout) as "outside statements". Commit messages of performance
changes quote this table before and after.

On PostgreSQL a maintenance is one call of the view's compiled functions (the i-diffs and the
Δ-script run inside them): --statements instead fills the i-diff instances as maintenance does
(idivm.prepare_maintenance, the first half) and sends the Δ-script's statements from Python one by
one, each timed, skipping those the compiled function would skip (an i-diff without the change
kinds a statement reads), then rolls that back and maintains the view as usual, untimed. --plans
also prints each Δ-script statement's plan (its scans and
join methods: index lookups from the i-diffs for small batches, hash joins for large ones; issue
16, item 5), from EXPLAIN run just before the statement, in its transaction.

--decode measures what every change costs before any rule runs, per change and per input of the
view, in the maintenance's snapshot before each maintenance: reading the view's window of the log,
folding it into the typed i-diff instance (capture/fold.py, as maintenance does), and the
hand-written floor over the same window (each logged image decoded once into the columns the view
reads, nothing grouped: what a fold costs when it need not find a key's effective change, as here,
where every key changes once a round).
"""
from __future__ import annotations

import random
import re
import statistics
import sys
import time
from collections import defaultdict

import psycopg
import sqlalchemy as sa

from .. import api
from ..capture.fold import FOLD_BY_KEY_FROM, fold_log, fold_select, log_images, record_columns, window_count
from ..catalog import repository as catalog
from ..engines.postgres.render import delta_names, render
from ..engines.postgres.server_maintenance import input_arrays, input_changes, view_delta
from ..introspect.reflect import table_info
from ..program.kinds_needed import driving_masks
from ..program.serialize import from_json
from ..sqltext import run as run_sql
from .common import machine, parser, print_table, scratch_database, timed_load, write_json
from .peers import VIEWS as PEER_VIEWS
from .devices import load as load_devices, view_sql

_FOLD = [(re.compile(r"\b\d+\b"), "N"), (re.compile(r"'[^']*'"), "'…'"), (re.compile(r"\s+"), " ")]


def shape(sql: str) -> str:
    """A statement's text with numbers, string literals and runs of blanks folded."""
    for pattern, repl in _FOLD:
        sql = pattern.sub(repl, sql)
    return sql.strip()


# a longer node name before its prefix ("Nested Loop Anti Join" before "Nested Loop"): alternation takes the first match
_PLAN_NODE = re.compile(r"(Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan|Hash Right Anti Join|Hash Anti Join|"
                        r"Hash Semi Join|Hash Left Join|Hash Right Join|Hash Join|Merge Anti Join|Merge Join|"
                        r"Nested Loop Anti Join|Nested Loop Semi Join|Nested Loop Left Join|Nested Loop|HashAggregate|"
                        r"GroupAggregate|Sort)(?: using \S+)?(?: on (\S+))?")


def plan_summary(lines: list[str]) -> str:
    """The scans and join methods of an EXPLAIN (COSTS OFF), outermost first: e.g. `Hash Join,
    Seq Scan on devices_parts, Index Scan on parts`."""
    out = []
    for line in lines:
        m = _PLAN_NODE.search(line)
        if m and (line.lstrip().startswith("->") or not out):
            out.append(m.group(1) + (f" on {m.group(2)}" if m.group(2) else ""))
    return ", ".join(out)


_DML = ("INSERT", "UPDATE", "DELETE", "MERGE", "WITH")


class Recorder:
    """Times every statement executed through psycopg cursors of connections it is attached to; with
    `explain`, runs each statement of a batch on its own, after recording its EXPLAIN (the batch's
    results are then the last statement's: only for the Δ-script, whose counts only fill the report)."""

    def __init__(self):
        self.active = False
        self.explain = False
        self.times: list[tuple[str, float]] = []
        self.plans: list[tuple[str, str]] = []  # (statement, plan_summary)

    def cursor_class(self):
        recorder = self

        class TimedCursor(psycopg.Cursor):
            def execute(self, query, params=None, **kw):
                if recorder.explain and recorder.active and isinstance(query, str) and params is None \
                        and not query.startswith("EXPLAIN"):
                    parts = query.split(";\n")
                    if any(p.lstrip().upper().startswith(_DML) for p in parts):
                        for part in parts:
                            if part.lstrip().upper().startswith(_DML):
                                plan = [r[0] for r in self.connection.execute("EXPLAIN (COSTS OFF) " + part)]
                                recorder.plans.append((part, plan_summary(plan)))
                            super().execute(part)
                        return self
                if not recorder.active:
                    return super().execute(query, params, **kw)
                t0 = time.perf_counter()
                try:
                    return super().execute(query, params, **kw)
                finally:
                    text = query if isinstance(query, str) else query.as_string(self)
                    recorder.times.append((text, time.perf_counter() - t0))

        return TimedCursor

    def attach(self, engine: sa.Engine) -> None:
        cls = self.cursor_class()

        @sa.event.listens_for(engine, "connect")
        def _use_timed_cursors(dbapi_connection, _record):
            dbapi_connection.cursor_factory = cls


def _statements_timed(engine: "api.Engine", view_id: int, recorder: "Recorder", plans: bool) -> float:
    """The view's Δ-script sent statement by statement (recorded) over the i-diff instances its
    maintenance fills, in a transaction rolled back; then the view maintained as usual (unrecorded).
    Returns the seconds of the recorded part."""
    started = time.perf_counter()
    with engine.sa.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin() as tx:
        outcome, inputs, ids, _, _ = run_sql(
            conn, f"SELECT p.outcome, p.inputs, {input_arrays('%(v)s')} "
                  "FROM idivm.prepare_maintenance(%(v)s, true, 'v') AS p", {"v": view_id}).fetchone()
        assert outcome == "ready", outcome
        changes = input_changes(inputs, ids)
        with delta_names(lambda cid: view_delta(view_id, cid)):
            script = render(from_json(catalog.program_of(conn, view_id)))
        recorder.explain = plans
        for step, text in script:  # skipped as the compiled function's guards skip (kind_guards.py): a
            # driving i-diff's kind mask is 0 when it is empty, and in ANY_MASK whenever it is not
            if step.driven_by not in changes or changes[step.driven_by][1] in driving_masks(step):
                run_sql(conn, text)
        recorder.explain = False
        tx.rollback()
    recorder.active = False
    seconds = time.perf_counter() - started
    engine.maintain("v")
    return seconds


DECODE = ("window read", "fold", "floor")


def _fold_of(conn, info, log: str, window: str, compared: list[str]) -> str:
    """The fold maintenance runs for this window: by its size (capture/fold.FOLD_BY_KEY_FROM)."""
    if run_sql(conn, f"SELECT {window_count(log, window)}").fetchone()[0] < FOLD_BY_KEY_FROM:
        return fold_select(info, log_images(log, window), compared)
    return fold_log(info, log, window, compared)


def _decode_timed(engine: "api.Engine", view_id: int, rows: dict[str, int], repeat: int = 3) -> dict[str, float]:
    """Seconds (best of `repeat`) of reading, folding and decoding by the floor the view's window of
    each input's log, added up over its inputs (--decode), and the rows each gave, added to `rows`
    (as every key changes once a round here, the three are equal); the changes stay for the
    maintenance."""
    out = dict.fromkeys(DECODE, 0.0)
    with engine.sa.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin() as tx:
        snapshot = conn.exec_driver_sql("SELECT CAST(last_snapshot AS text) FROM idivm.views WHERE id = %(v)s",
                                        {"v": view_id}).scalar()
        for t in catalog.view_inputs(conn, view_id, reflect=True):
            info = table_info(t.schema_name, t.table_name, t.columns).reading(t.read_columns)
            window = catalog.unconsumed("l", view_id, snapshot)
            defs = record_columns(info, info.column_names)  # decoded as the fold decodes them
            queries = {
                "window read": f"SELECT count(*) FROM {t.log_table} AS l WHERE {window}",
                "fold": f"SELECT count(*) FROM ({_fold_of(conn, info, t.log_table, window, list(info.column_names))}) AS f",
                "floor": f"SELECT count(*) FROM {t.log_table} AS l "
                         f"LEFT JOIN LATERAL jsonb_to_record(l.old_row) AS pre({defs}) ON true "
                         f"LEFT JOIN LATERAL jsonb_to_record(l.new_row) AS post({defs}) ON true WHERE {window}"}
            for name, query in queries.items():
                best = float("inf")
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    found = run_sql(conn, query).fetchone()[0]
                    best = min(best, time.perf_counter() - t0)
                out[name] += best
                rows[name] = rows.get(name, 0) + found
        tx.rollback()
    return out


def run(dsn: str | None = None, scale: float = 0.02, view: str = "V'", strategy: str = "id", diff: int = 200,
        repeat: int = 5, out: str = "bench-results/profile_maintain.json", keep: bool = False, top: int = 25,
        statements: bool = False, plans: bool = False, decode: bool = False) -> int:
    with scratch_database(dsn, keep) as (bench_dsn, version):
        with psycopg.connect(bench_dsn, autocommit=True) as db:
            sizes = timed_load(load_devices, db, scale, 0.2, 10, 2)
            engine = api.connect(bench_dsn)
            recorder = Recorder()
            recorder.attach(engine.sa)
            engine.sa.dispose()  # connections opened from now on use timed cursors
            sql = PEER_VIEWS["L"][0].format(s="public") if view == "L" else view_sql(2, view == "V'")
            engine.register_view("v", sql, strategy=strategy)
            engine.set_policy("v", recompute="never")  # the Δ-script profiled, never recomputed instead
            view_id = db.execute("SELECT id FROM idivm.views WHERE view_name = 'v'").fetchone()[0]
            rng = random.Random(16)
            per_round: list[dict[str, list[float]]] = []
            walls, decoding, decoded_rows = [], [], {}
            for _ in range(repeat + 1):  # the first round warms caches and is not counted
                pids = rng.sample(range(1, sizes["parts"] + 1), diff)
                with db.transaction(), db.cursor() as cur:
                    cur.executemany("UPDATE parts SET price = price + 1 WHERE pid = %s", [(p,) for p in pids])
                if decode:
                    decoding.append(_decode_timed(engine, view_id, decoded_rows))
                recorder.times.clear()
                recorder.plans.clear()
                recorder.active = True
                t0 = time.perf_counter()
                if statements or plans:
                    walls.append(_statements_timed(engine, view_id, recorder, plans))
                else:
                    engine.maintain("v")
                    walls.append(time.perf_counter() - t0)
                recorder.active = recorder.explain = False
                last_plans = list(recorder.plans)
                grouped: dict[str, list[float]] = defaultdict(list)
                for text, secs in recorder.times:
                    grouped[shape(text)].append(secs)
                per_round.append(grouped)
            ok = engine.verify("v").ok
            engine.close()
    per_round, walls, decoding = per_round[1:], walls[1:], decoding[1:]
    shapes = list(dict.fromkeys(s for r in per_round for s in r))
    med = {s: statistics.median(sum(r.get(s, [])) for r in per_round) for s in shapes}
    count = {s: statistics.median(len(r.get(s, [])) for r in per_round) for s in shapes}
    wall = statistics.median(walls)
    inside = statistics.median(sum(sum(v) for v in r.values()) for r in per_round)
    ranked = sorted(shapes, key=lambda s: -med[s])
    rows = [[f"{med[s] * 1000:.2f}", int(count[s]), s[:110]] for s in ranked[:top]]
    rows.append([f"{sum(med[s] for s in ranked[top:]) * 1000:.2f}", int(sum(count[s] for s in ranked[top:])),
                 f"({len(ranked[top:])} other statement shapes)"])
    rows.append([f"{(wall - inside) * 1000:.2f}", "", "outside statements: Python, commits, connection checkout"])
    print(f"One maintenance of {view} ({strategy}) after {diff} single-row price updates, scale {scale} ({sizes}); "
          f"medians of {repeat}; PostgreSQL {version}; wall {wall * 1000:.1f} ms, of which statements "
          f"{inside * 1000:.1f} ms in {int(statistics.median(sum(len(v) for v in r.values()) for r in per_round))} round trips")
    print_table(["ms", "times", "statement"], rows)
    decoded = {k: statistics.median(d[k] for d in decoding) for k in DECODE} if decode else None
    if decoded:
        print(f"\nBefore any rule runs, {diff} changes (medians of {repeat} rounds, each the best of 3):")
        print_table(["step", "ms", "µs a change", "x floor"],
                    [[k, f"{v * 1000:.2f}", f"{v * 1e6 / diff:.1f}", f"{v / decoded['floor']:.2f}"]
                     for k, v in decoded.items()])
    write_json(out, {"benchmark": "profile_maintain", "machine": machine(), "postgresql": version,
                     "parameters": {"scale": scale, "view": view, "strategy": strategy, "diff": diff, "repeat": repeat,
                                    "statements": statements, "decode": decode},
                     "decode_ms": decoded and {k: v * 1000 for k, v in decoded.items()},
                     "decode_rows": decoded and decoded_rows,
                     "wall_ms": wall * 1000, "statements_ms": inside * 1000,
                     "statements": [{"shape": s, "ms": med[s] * 1000, "times": count[s]} for s in ranked],
                     "plans": [{"statement": q, "plan": p} for q, p in last_plans],
                     "view_equals_recomputation": ok})
    if plans:  # the last round's
        print(f"\nPlans of the Δ-script's statements (EXPLAIN before each ran, d = {diff}):")
        print_table(["statement", "plan: scans and joins, outermost first"],
                    [[shape(q)[:70], p] for q, p in last_plans])
    print(f"view equals recomputation: {ok}; json: {out}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/profile_maintain.json")
    ap.add_argument("--scale", type=float, default=0.02, help="0.02 = 100k devices and parts, 1M links")
    ap.add_argument("--view", default="V'", choices=["V", "V'", "L"], help="L: phones with their parts through LEFT JOINs")
    ap.add_argument("--strategy", default="id", choices=["id", "tuple", "higher-order", "auto"])
    ap.add_argument("--diff", type=int, default=200, help="single-row price updates before each maintenance")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=25, help="statement shapes listed")
    ap.add_argument("--statements", action="store_true",
                    help="send the Δ-script's statements from Python, each timed, over the i-diff instances "
                         "maintenance fills (then rolled back, and the view maintained as usual)")
    ap.add_argument("--plans", action="store_true",
                    help="also print the plan of every Δ-script statement (EXPLAIN before it runs; implies "
                         "--statements, and each statement is sent on its own, so times include more round trips)")
    ap.add_argument("--decode", action="store_true",
                    help="also time, before each maintenance, reading the view's window of the logs, folding it into "
                         "i-diff instances, and a hand-written floor that decodes each logged image once")
    a = ap.parse_args(argv)
    return run(a.dsn, a.scale, a.view, a.strategy, a.diff, a.repeat, a.out, a.keep, a.top, a.statements, a.plans,
               a.decode)


if __name__ == "__main__":
    sys.exit(main())
