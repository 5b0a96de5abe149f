"""What keeping a view costs its writers, measured over bench_peers' tables (issue 36, item 3).

pgbench writes to one method's copy of the paper's parts table at a time: single-row UPDATEs of a
part's price, single-row INSERTs of new parts, and bulk UPDATEs of 1,000 consecutive parts' prices
(one statement), with 1 and 2 clients, for a few seconds each. The methods are the table without a
view (the baseline), idivm's deferred capture (its triggers only: the view is maintained, untimed,
after each run), idivm's immediate mode and pg_ivm (both maintain the view inside every statement),
and the hand-written floor's capture (a trigger that logs a part's id, old and new price, and only for
UPDATEs: it knows the workload), the least a trigger-based capture can cost.
The runs of one workload and client count follow each other method by method, so that the server's
background work (checkpoints, autovacuum) falls on all of them alike.
"""
from __future__ import annotations

from ..sqltext import ident
from .writes import pgbench

BULK = 1000  # rows per bulk statement
WORKLOADS = {  # name: pgbench script over {s} (the method's schema), {parts} parts
    "update": "\\set pid random(1, {parts})\nUPDATE {s}.parts SET price = price + 1 WHERE pid = :pid;\n",
    "insert": "INSERT INTO {s}.parts (pid, price) VALUES (nextval('{s}.new_pid'), 1);\n",
    "bulk update": (f"\\set first random(1, {{parts}} - {BULK})\n"
                    f"UPDATE {{s}}.parts SET price = price + 1 WHERE pid BETWEEN :first AND :first + {BULK - 1};\n"),
}
CLIENTS = (1, 2)


def prepare(db, schema: str, parts: int) -> None:
    """The sequence the INSERT workload takes new part ids from, past the loaded ones."""
    db.execute(f"CREATE SEQUENCE IF NOT EXISTS {ident(schema)}.new_pid START {int(parts) + 1}")


def measure(dsn: str, schemas: dict[str, str], parts: int, seconds: int, transactions: int | None,
            after_run) -> list[dict]:
    """Transactions per second of every workload and client count for each method ({label: schema});
    after_run(label) is called after each run (deferred maintenance, untimed)."""
    results = []
    labels = list(schemas)
    for k, (workload, template) in enumerate(WORKLOADS.items()):
        for clients in CLIENTS:
            tps = {}
            turn = (k * len(CLIENTS) + CLIENTS.index(clients)) % len(labels)
            for label in labels[turn:] + labels[:turn]:
                script = template.replace("{s}", ident(schemas[label])).replace("{parts}", str(int(parts)))
                tps[label] = pgbench(dsn, script, clients, seconds, transactions)
                after_run(label)
            results.append({"workload": workload, "clients": clients, "tps": tps})
    return results
