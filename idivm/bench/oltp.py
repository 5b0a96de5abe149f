"""An OLTP write mix with analytical views over it: what keeping the views fresh costs the writers,
and how fresh they are.

The data is TPC-C's (warehouse, district, customer, history, orders, new_order, order_line, item,
stock) plus a nation table and a nation per customer, as the CH-benCHmark joins TPC-H-style
questions to TPC-C data; one warehouse by default, --customers per district, --items items.
--clients writers run TPC-C's write transactions in its proportions for --seconds each: NewOrder
(45 of 92; 1% of them roll back on an unknown item, as TPC-C specifies), Payment (43) and
Delivery (4; a batch of the ten districts' oldest undelivered orders). A transaction that
deadlocks is retried.

VIEWS asks what such data is asked: revenue by nation (4 tables), by nation over stocked and
priced items (6 tables), orders by status, stock below a threshold, top customers, sales per
item, undelivered orders (EXISTS), customers owing far above their district's average (a nested
aggregate), orders per district. Each run measures, in a database of its own with the same data:

- **no views**: the writers alone, the baseline;
- **deferred**: every view registered with --strategy (auto by default) and maintained by
  `idivm schedule` (--every seconds) beside the writers; a monitor polls the orders-per-district
  view, so each NewOrder's **freshness** is the time from its commit returning to the first poll
  that shows it (a district's orders commit in order of their number: the district row is locked
  until commit);
- **immediate**: every view maintained inside the writers' transactions;
- **pg_ivm**: pg_ivm's immediately maintained views (`create_immv`) of the queries it accepts,
  where the server has the extension (the others are listed as refused).

At the end of each idivm run every view is compared with its query (`verify`). Targets printed:
deferred at least 0.85x the transactions per second without views, and p99 freshness under 2 s.
"""
from __future__ import annotations

import random
import statistics
import sys
import threading
import time
from decimal import Decimal

import psycopg

from .. import api
from ..errors import first_line
from .common import (Scheduler, Writers, machine, parser, pg_ivm_version, print_table, pyplot, save,
                     scratch_database, write_json)
from .load import percentile

DISTRICTS = 10
NATIONS = ("ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
           "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA")
ORDER_KEY = ("o.o_w_id = ol.ol_w_id AND o.o_d_id = ol.ol_d_id AND o.o_id = ol.ol_o_id")
CUSTOMER_KEY = "c.c_w_id = o.o_w_id AND c.c_d_id = o.o_d_id AND c.c_id = o.o_c_id"
VIEWS = {
    "orders_by_district": "SELECT o_w_id, o_d_id, count(*) AS orders FROM orders GROUP BY o_w_id, o_d_id",
    "orders_by_status": ("SELECT o_carrier_id IS NULL AS open, o_ol_cnt, count(*) AS n FROM orders "
                         "GROUP BY o_carrier_id IS NULL, o_ol_cnt"),
    "revenue_by_nation": (f"SELECT n.n_name, sum(ol.ol_amount) AS revenue, count(*) AS lines FROM order_line ol "
                          f"JOIN orders o ON {ORDER_KEY} JOIN customer c ON {CUSTOMER_KEY} "
                          "JOIN nation n ON n.n_nationkey = c.c_nationkey GROUP BY n.n_name"),
    "stocked_revenue_by_nation": (
        f"SELECT n.n_name, sum(ol.ol_amount) AS revenue FROM order_line ol JOIN orders o ON {ORDER_KEY} "
        f"JOIN customer c ON {CUSTOMER_KEY} JOIN nation n ON n.n_nationkey = c.c_nationkey "
        "JOIN stock s ON s.s_w_id = ol.ol_supply_w_id AND s.s_i_id = ol.ol_i_id JOIN item i ON i.i_id = ol.ol_i_id "
        "WHERE i.i_price > 50 AND s.s_quantity > 20 GROUP BY n.n_name"),
    "low_stock": ("SELECT s.s_w_id, s.s_i_id, i.i_name, s.s_quantity FROM stock s JOIN item i ON i.i_id = s.s_i_id "
                  "WHERE s.s_quantity < 15"),
    "top_customers": (f"SELECT c.c_w_id, c.c_d_id, c.c_id, c.c_last, sum(ol.ol_amount) AS spent FROM customer c "
                      f"JOIN orders o ON {CUSTOMER_KEY} JOIN order_line ol ON {ORDER_KEY} "
                      "GROUP BY c.c_w_id, c.c_d_id, c.c_id, c.c_last HAVING sum(ol.ol_amount) > 3000"),
    "item_sales": ("SELECT i.i_id, i.i_name, sum(ol.ol_quantity) AS sold, sum(ol.ol_amount) AS revenue "
                   "FROM order_line ol JOIN item i ON i.i_id = ol.ol_i_id GROUP BY i.i_id, i.i_name"),
    "undelivered": ("SELECT o.o_w_id, o.o_d_id, count(*) AS waiting FROM orders o WHERE EXISTS (SELECT 1 FROM "
                    "new_order no WHERE no.no_w_id = o.o_w_id AND no.no_d_id = o.o_d_id AND no.no_o_id = o.o_id) "
                    "GROUP BY o.o_w_id, o.o_d_id"),
    "owing_customers": ("SELECT c.c_w_id, c.c_d_id, c.c_id, c.c_balance FROM customer c WHERE c.c_balance > "
                        "(SELECT avg(c2.c_balance) + 500 FROM customer c2 WHERE c2.c_w_id = c.c_w_id "
                        "AND c2.c_d_id = c.c_d_id)"),
}
FRESHNESS_VIEW = "orders_by_district"
MODES = ("no views", "deferred", "immediate", "pg_ivm")


def load(db: psycopg.Connection, warehouses: int, customers: int, items: int) -> dict:
    """TPC-C's initial population at a small scale (TPC-C: 3,000 customers a district, 100,000
    items): one order a customer, 5-15 lines each, the newest 30% of a district's orders undelivered."""
    db.execute("SELECT setseed(0.17)")
    db.execute("CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name text NOT NULL)")
    db.execute("INSERT INTO nation SELECT i - 1, n FROM unnest(CAST(%s AS text[])) WITH ORDINALITY AS u(n, i)",
               (list(NATIONS),))
    db.execute("CREATE TABLE warehouse (w_id int PRIMARY KEY, w_name text NOT NULL, w_tax numeric(4,4) NOT NULL, "
               "w_ytd numeric(12,2) NOT NULL)")
    db.execute("INSERT INTO warehouse SELECT g, 'w' || g, 0.1, 300000 FROM generate_series(1, %s) g", (warehouses,))
    db.execute("CREATE TABLE district (d_w_id int, d_id int, d_name text NOT NULL, d_tax numeric(4,4) NOT NULL, "
               "d_ytd numeric(12,2) NOT NULL, d_next_o_id int NOT NULL, PRIMARY KEY (d_w_id, d_id))")
    db.execute("INSERT INTO district SELECT w, d, 'd' || d, 0.05, 30000, %s + 1 FROM generate_series(1, %s) w, "
               "generate_series(1, %s) d", (customers, warehouses, DISTRICTS))
    db.execute("CREATE TABLE customer (c_w_id int, c_d_id int, c_id int, c_last text NOT NULL, c_nationkey int NOT NULL, "
               "c_balance numeric(12,2) NOT NULL, c_ytd_payment numeric(12,2) NOT NULL, c_payment_cnt int NOT NULL, "
               "c_delivery_cnt int NOT NULL, PRIMARY KEY (c_w_id, c_d_id, c_id))")
    db.execute("INSERT INTO customer SELECT w, d, c, 'c' || (c %% 1000), (w * 7 + d * 3 + c) %% %s, -10, 10, 1, 0 "
               "FROM generate_series(1, %s) w, generate_series(1, %s) d, generate_series(1, %s) c",
               (len(NATIONS), warehouses, DISTRICTS, customers))
    db.execute("CREATE TABLE history (h_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, h_c_w_id int NOT NULL, "
               "h_c_d_id int NOT NULL, h_c_id int NOT NULL, h_date timestamp NOT NULL, h_amount numeric(6,2) NOT NULL)")
    db.execute("CREATE TABLE item (i_id int PRIMARY KEY, i_name text NOT NULL, i_price numeric(5,2) NOT NULL)")
    db.execute("INSERT INTO item SELECT g, 'item ' || g, round(CAST(1 + random() * 99 AS numeric), 2) "
               "FROM generate_series(1, %s) g", (items,))
    db.execute("CREATE TABLE stock (s_w_id int, s_i_id int, s_quantity int NOT NULL, s_ytd int NOT NULL, "
               "s_order_cnt int NOT NULL, PRIMARY KEY (s_w_id, s_i_id))")
    db.execute("INSERT INTO stock SELECT w, i, 10 + CAST(random() * 90 AS int), 0, 0 FROM generate_series(1, %s) w, "
               "generate_series(1, %s) i", (warehouses, items))
    db.execute("CREATE TABLE orders (o_w_id int, o_d_id int, o_id int, o_c_id int NOT NULL, o_entry_d timestamp NOT NULL, "
               "o_carrier_id int, o_ol_cnt int NOT NULL, PRIMARY KEY (o_w_id, o_d_id, o_id))")
    db.execute("INSERT INTO orders SELECT w, d, o, 1 + (o * 7919) %% %s, now(), "
               "CASE WHEN o <= %s THEN 1 + o %% 10 END, 5 + o %% 11 FROM generate_series(1, %s) w, "
               "generate_series(1, %s) d, generate_series(1, %s) o",
               (customers, int(customers * 0.7), warehouses, DISTRICTS, customers))
    db.execute("CREATE TABLE new_order (no_w_id int, no_d_id int, no_o_id int, PRIMARY KEY (no_w_id, no_d_id, no_o_id))")
    db.execute("INSERT INTO new_order SELECT o_w_id, o_d_id, o_id FROM orders WHERE o_carrier_id IS NULL")
    db.execute("CREATE TABLE order_line (ol_w_id int, ol_d_id int, ol_o_id int, ol_number int, ol_i_id int NOT NULL, "
               "ol_supply_w_id int NOT NULL, ol_delivery_d timestamp, ol_quantity int NOT NULL, "
               "ol_amount numeric(6,2) NOT NULL, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))")
    db.execute("INSERT INTO order_line SELECT o_w_id, o_d_id, o_id, n, 1 + (o_id * 31 + n * 977 + o_d_id) %% %s, o_w_id, "
               "CASE WHEN o_carrier_id IS NOT NULL THEN o_entry_d END, 5, "
               "CASE WHEN o_carrier_id IS NULL THEN round(CAST(random() * 9999 AS numeric), 2) / 100 ELSE 0 END "
               "FROM orders, generate_series(1, o_ol_cnt) n", (items,))
    db.execute("CREATE INDEX ON order_line (ol_i_id)")
    db.execute("ANALYZE")
    return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("customer", "orders", "order_line", "stock", "item")}


class Mix:
    """One writer's TPC-C transactions; commits[(w, d)][o_id] = when the NewOrder's commit returned."""

    def __init__(self, dsn: str, seed: int, warehouses: int, customers: int, items: int,
                 commits: dict, lock: threading.Lock):
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.rng = random.Random(seed)
        self.warehouses, self.customers, self.items = warehouses, customers, items
        self.commits, self.lock = commits, lock
        self.counts = {"new_order": 0, "payment": 0, "delivery": 0, "rolled_back": 0, "deadlocks": 0}

    def one(self) -> None:
        r = self.rng.random() * 92
        kind = "new_order" if r < 45 else "payment" if r < 88 else "delivery"
        while True:
            try:
                getattr(self, kind)()
                return
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                self.counts["deadlocks"] += 1  # retried, as TPC-C's drivers do

    def new_order(self) -> None:
        rng, w = self.rng, self.rng.randint(1, self.warehouses)
        d, c = rng.randint(1, DISTRICTS), rng.randint(1, self.customers)
        lines = [(rng.randint(1, self.items), rng.randint(1, 10)) for _ in range(rng.randint(5, 15))]
        if rng.random() < 0.01:
            lines[-1] = (self.items + 1, 1)  # an unknown item: the transaction rolls back
        with self.conn.transaction() as tx:
            o_id = self.conn.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %s AND d_id = %s "
                                     "RETURNING d_next_o_id - 1", (w, d)).fetchone()[0]
            self.conn.execute("INSERT INTO orders VALUES (%s, %s, %s, %s, now(), NULL, %s)", (w, d, o_id, c, len(lines)))
            self.conn.execute("INSERT INTO new_order VALUES (%s, %s, %s)", (w, d, o_id))
            prices = dict(self.conn.execute("SELECT i_id, i_price FROM item WHERE i_id = ANY(%s)",
                                            ([i for i, _ in lines],)).fetchall())
            if len(prices) < len({i for i, _ in lines}):
                self.counts["rolled_back"] += 1
                raise psycopg.Rollback(tx)
            self.conn.execute(
                "UPDATE stock SET s_quantity = CASE WHEN s_quantity - u.q >= 10 THEN s_quantity - u.q "
                "ELSE s_quantity - u.q + 91 END, s_ytd = s_ytd + u.q, s_order_cnt = s_order_cnt + 1 "
                "FROM (SELECT i, sum(q) AS q FROM unnest(CAST(%s AS int[]), CAST(%s AS int[])) AS x(i, q) GROUP BY i) u "
                "WHERE s_w_id = %s AND s_i_id = u.i", ([i for i, _ in lines], [q for _, q in lines], w))
            self.conn.execute(
                "INSERT INTO order_line SELECT %s, %s, %s, n, i, %s, NULL, q, q * CAST(p AS numeric) "
                "FROM unnest(CAST(%s AS int[]), CAST(%s AS int[]), CAST(%s AS numeric[])) WITH ORDINALITY AS x(i, q, p, n)",
                (w, d, o_id, w, [i for i, _ in lines], [q for _, q in lines], [prices[i] for i, _ in lines]))
        if o_id is not None and len(prices) == len({i for i, _ in lines}):
            with self.lock:
                self.commits.setdefault((w, d), {})[o_id] = time.monotonic()
            self.counts["new_order"] += 1

    def payment(self) -> None:
        rng, w = self.rng, self.rng.randint(1, self.warehouses)
        d, c, amount = rng.randint(1, DISTRICTS), rng.randint(1, self.customers), Decimal(rng.randint(100, 500000)) / 100
        with self.conn.transaction():
            self.conn.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", (amount, w))
            self.conn.execute("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s", (amount, w, d))
            self.conn.execute("UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
                              "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                              (amount, amount, w, d, c))
            self.conn.execute("INSERT INTO history (h_c_w_id, h_c_d_id, h_c_id, h_date, h_amount) "
                              "VALUES (%s, %s, %s, now(), %s)", (w, d, c, amount))
        self.counts["payment"] += 1

    def delivery(self) -> None:
        w, carrier = self.rng.randint(1, self.warehouses), self.rng.randint(1, 10)
        with self.conn.transaction():
            for d in range(1, DISTRICTS + 1):
                self.conn.execute(
                    "WITH o AS (DELETE FROM new_order WHERE (no_w_id, no_d_id, no_o_id) = (SELECT no_w_id, no_d_id, "
                    "no_o_id FROM new_order WHERE no_w_id = %(w)s AND no_d_id = %(d)s ORDER BY no_o_id LIMIT 1 "
                    "FOR UPDATE SKIP LOCKED) RETURNING no_o_id), "
                    "oo AS (UPDATE orders SET o_carrier_id = %(carrier)s FROM o WHERE o_w_id = %(w)s AND o_d_id = %(d)s "
                    "AND o_id = o.no_o_id RETURNING o_id, o_c_id), "
                    "ol AS (UPDATE order_line SET ol_delivery_d = now() FROM oo WHERE ol_w_id = %(w)s AND ol_d_id = %(d)s "
                    "AND ol_o_id = oo.o_id RETURNING ol_amount) "
                    "UPDATE customer SET c_balance = c_balance + (SELECT COALESCE(sum(ol_amount), 0) FROM ol), "
                    "c_delivery_cnt = c_delivery_cnt + 1 FROM oo WHERE c_w_id = %(w)s AND c_d_id = %(d)s AND c_id = oo.o_c_id",
                    {"w": w, "d": d, "carrier": carrier})
        self.counts["delivery"] += 1


def _views(db_dsn: str, mode: str, strategy: str, every: float) -> tuple[api.Engine | None, dict]:
    """Set up the views of `mode`; (idivm's engine, the views pg_ivm refused: name -> why)."""
    refused: dict[str, str] = {}
    if mode in ("deferred", "immediate"):
        engine = api.connect(db_dsn)
        for name, sql in VIEWS.items():
            engine.register_view(name, sql, strategy=strategy, mode=mode)
            if mode == "deferred":
                engine.set_policy(name, every=every)
        return engine, refused
    if mode == "pg_ivm":
        with psycopg.connect(db_dsn, autocommit=True) as db:
            db.execute("CREATE EXTENSION IF NOT EXISTS pg_ivm")
            for name, sql in VIEWS.items():
                try:
                    db.execute("SELECT pgivm.create_immv(%s, %s)", (name, sql))
                except psycopg.Error as e:
                    refused[name] = first_line(e)
    return None, refused


def run_mode(dsn: str | None, mode: str, seconds: float, clients: int, warehouses: int, customers: int, items: int,
             strategy: str, every: float, poll: float = 0.02) -> dict:
    """One measurement in a database of its own: the writers for `seconds` with `mode`'s views."""
    with scratch_database(dsn) as (db_dsn, version):
        with psycopg.connect(db_dsn, autocommit=True) as db:
            sizes = load(db, warehouses, customers, items)
        t0 = time.perf_counter()
        engine, refused = _views(db_dsn, mode, strategy, every)
        setup = time.perf_counter() - t0
        scheduler = Scheduler(db_dsn, every) if mode == "deferred" else None
        commits: dict = {}
        lock = threading.Lock()
        mixes = [Mix(db_dsn, 100 + k, warehouses, customers, items, commits, lock) for k in range(clients)]
        phase = Writers()
        lags: list[float] = []

        def write(mix: Mix) -> None:
            while not phase.stop.is_set():
                mix.one()

        def monitor() -> None:  # deferred: when each NewOrder shows in the orders-per-district view
            seen: dict = {}
            with psycopg.connect(db_dsn, autocommit=True) as conn:
                while not phase.written.is_set() or _unseen(commits, seen, customers, lock):
                    now = time.monotonic()
                    for w, d, n in conn.execute(f"SELECT o_w_id, o_d_id, orders FROM {FRESHNESS_VIEW}").fetchall():
                        with lock:
                            done = commits.get((w, d), {})
                            last = n  # orders 1..n are in the view: a district commits them in order
                            for o_id in range(seen.get((w, d), customers) + 1, last + 1):
                                if o_id not in done:
                                    last = o_id - 1  # committed, its commit time not noted yet: next poll
                                    break
                                lags.append(max(0.0, now - done[o_id]))  # noted after this poll began: 0
                        seen[(w, d)] = max(seen.get((w, d), customers), last)
                    time.sleep(poll)
                    if phase.gave_up(60):
                        return  # never caught up: reported as unseen orders

        elapsed = phase.run([lambda m=m: write(m) for m in mixes], seconds,
                            monitor if scheduler is not None else None)
        exit_code = scheduler.stop(timeout=60) if scheduler is not None else None
        events = scheduler.events if scheduler is not None else []
        for m in mixes:
            m.conn.close()
        equal, engine_strategies = {}, {}
        if engine is not None:
            engine_strategies = {name: engine.strategy_of(name) for name in VIEWS}
            if mode == "deferred":
                engine.maintain()
            equal = {name: engine.verify(name).ok for name in VIEWS}
            engine.close()
    counts = {k: sum(m.counts[k] for m in mixes) for k in mixes[0].counts}
    committed = counts["new_order"] + counts["payment"] + counts["delivery"]
    orders = sum(len(v) for v in commits.values())
    maintained = [e for e in events if e.get("event") == "maintained"]
    out = {"mode": mode, "postgresql": version, "sizes": sizes, "setup_seconds": setup, "transactions": counts,
           "tps": committed / elapsed, "views_equal_recomputation": equal, "refused": refused}
    if mode == "deferred":
        out |= {"freshness_seconds": {f"p{p}": percentile(lags, p) for p in (50, 90, 99)} | {"max": max(lags)}
                if lags else {}, "unseen_orders": orders - len(lags), "maintenances": len(maintained),
                "maintenance_ms_median": statistics.median(e["ms"] for e in maintained) if maintained else None,
                "maintenance_ms_by_view": {v: {"median": statistics.median(ms), "max": max(ms), "count": len(ms)}
                                           for v in VIEWS if (ms := [e["ms"] for e in maintained
                                                                     if e["view"].split(".")[-1] == v])},
                "strategies": {v: engine_strategies.get(v) for v in VIEWS},
                "failures": len([e for e in events if e.get("event") == "failed"]), "scheduler_exit_code": exit_code}
    return out


def _unseen(commits: dict, seen: dict, customers: int, lock: threading.Lock) -> bool:
    with lock:
        return any(max(done) > seen.get(key, customers) for key, done in commits.items() if done)


def run(dsn: str | None = None, seconds: float = 20.0, clients: int = 3, warehouses: int = 1, customers: int = 300,
        items: int = 10000, strategy: str = "auto", every: float = 1.0, modes=MODES) -> dict:
    with scratch_database(dsn) as (probe_dsn, version):
        with psycopg.connect(probe_dsn, autocommit=True) as db:
            pg_ivm = pg_ivm_version(db)
    results = [run_mode(dsn, m, seconds, clients, warehouses, customers, items, strategy, every)
               for m in modes if m != "pg_ivm" or pg_ivm]
    by_mode = {r["mode"]: r for r in results}
    base = by_mode.get("no views", {}).get("tps")
    for r in results:
        r["tps_vs_no_views"] = r["tps"] / base if base else None
    deferred = by_mode.get("deferred")
    ok = all(all(r["views_equal_recomputation"].values()) for r in results)
    if deferred is not None:
        ok = ok and deferred["unseen_orders"] == 0 and deferred["failures"] == 0 and deferred["scheduler_exit_code"] == 0
    return {"benchmark": "oltp", "machine": machine(), "postgresql": version, "pg_ivm": pg_ivm,
            "params": {"seconds": seconds, "clients": clients, "warehouses": warehouses, "customers": customers,
                       "items": items, "strategy": strategy, "every": every},
            "views": VIEWS, "results": results, "ok": ok}


def report(result: dict) -> None:
    p = result["params"]
    print(f"TPC-C write mix, {p['clients']} clients, {p['seconds']:g} s a mode, {p['warehouses']} warehouse(s), "
          f"{p['customers']} customers a district, {p['items']} items; {len(result['views'])} views "
          f"(--strategy {p['strategy']}; deferred: idivm schedule --every {p['every']:g}); PostgreSQL "
          f"{result['postgresql']}, pg_ivm {result['pg_ivm'] or 'not installed'}")
    rows = []
    for r in result["results"]:
        f = r.get("freshness_seconds", {})
        views = len(VIEWS) - len(r["refused"]) if r["mode"] != "no views" else 0
        rows.append([r["mode"], views, f"{r['tps']:.0f}", f"{r['tps_vs_no_views']:.2f}x" if r["tps_vs_no_views"] else "",
                     f"{f['p50']:.2f}" if f else "", f"{f['p99']:.2f}" if f else "", f"{r['setup_seconds']:.1f}",
                     r["transactions"]["rolled_back"], r["transactions"]["deadlocks"],
                     "" if not r["views_equal_recomputation"] else all(r["views_equal_recomputation"].values())])
    print_table(["mode", "views", "tx/s", "vs no views", "fresh p50 s", "fresh p99 s", "setup s", "rolled back",
                 "deadlocks", "exact"], rows)
    for r in result["results"]:
        for name, why in r["refused"].items():
            print(f"pg_ivm refused {name}: {why}")
    deferred = next((r for r in result["results"] if r["mode"] == "deferred"), None)
    if deferred is not None:
        print(f"deferred, the scheduler's maintenances ({deferred['maintenances']}) by view:")
        print_table(["view", "strategy", "maintenances", "median ms", "max ms"],
                    [[v, deferred["strategies"][v], m["count"], m["median"], m["max"]]
                     for v, m in deferred["maintenance_ms_by_view"].items()])
    if deferred is not None and deferred["tps_vs_no_views"] is not None and deferred["freshness_seconds"]:
        kept, p99 = deferred["tps_vs_no_views"], deferred["freshness_seconds"]["p99"]
        print(f"target (deferred >= 0.85x the transactions without views): {kept:.2f}x, "
              f"{'met' if kept >= 0.85 else 'NOT met'}")
        print(f"target (p99 freshness under 2 s): {p99:.2f} s, {'met' if p99 < 2 else 'NOT met'}")


def plot(result: dict, path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    modes = [r["mode"] for r in result["results"]]
    ax.bar(modes, [r["tps"] for r in result["results"]], color="#4c72b0")
    ax.set_ylabel("committed transactions / s")
    ax.set_title(f"TPC-C write mix with {len(result['views'])} views ({result['params']['clients']} clients)")
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "bench-results/oltp.json")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the writers write in each mode")
    ap.add_argument("--clients", type=int, default=3, help="concurrent writer connections")
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--customers", type=int, default=300, help="customers (and initial orders) a district")
    ap.add_argument("--items", type=int, default=10000)
    ap.add_argument("--strategy", default="auto", help="the views' strategy (idivm register-view --strategy)")
    ap.add_argument("--every", type=float, default=1.0, help="deferred: the scheduler's and the views' interval")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    args = ap.parse_args(argv)
    result = run(args.dsn, args.seconds, args.clients, args.warehouses, args.customers, args.items, args.strategy,
                 args.every, tuple(args.modes.split(",")))
    report(result)
    write_json(args.out, result)
    plot(result, args.out.removesuffix(".json") + ".png")
    print(f"json: {args.out}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
