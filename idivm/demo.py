"""`idivm demo`: the paper's running example (Figure 1) on the configured database, in plain words.

Creates devices/parts/devices_parts in a schema of its own (``idivm_demo``,
recreated each run), registers the view of every part a phone uses, makes six
writes, maintains, and shows what each write changed in the view and why, then
verifies the view against its query.
"""
from __future__ import annotations

import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

VIEW = "idivm_demo.phone_parts"
SQL = ("SELECT did, pid, price FROM idivm_demo.parts NATURAL JOIN idivm_demo.devices_parts "
       "NATURAL JOIN idivm_demo.devices WHERE category = 'phone'")


WRITES = [  # each write, and what it does to the view, in plain words
    ("UPDATE idivm_demo.parts SET price = 11 WHERE pid = 'P1'",
     "P1 now costs 11: its rows in the view get the new price in place, found by their IDs, without "
     "joining the other tables"),
    ("UPDATE idivm_demo.devices SET category = 'phone' WHERE did = 'D3'",
     "D3 becomes a phone: its part P3 enters the view"),
    ("UPDATE idivm_demo.devices SET category = 'tablet' WHERE did = 'D2'",
     "D2 is no longer a phone: its row leaves the view"),
    ("INSERT INTO idivm_demo.parts VALUES ('P4', 40)",
     "a new part P4: no phone uses it yet, so the view does not change"),
    ("INSERT INTO idivm_demo.devices_parts VALUES ('D1', 'P4')",
     "phone D1 now uses P4: a new row"),
    ("DELETE FROM idivm_demo.devices_parts WHERE did = 'D1' AND pid = 'P2'",
     "D1 no longer uses P2: its row leaves the view"),
]


def _rows(engine) -> dict:
    with engine.sa.connect() as conn:
        return {(r.did, r.pid): r.price for r in conn.execute(
            sa.text("SELECT did, pid, price FROM idivm_demo.phone_parts ORDER BY did, pid")).all()}


def _show(out: Console, rows: dict, title: str) -> None:
    out.print(title)
    t = Table("device", "part", "price")
    for (did, pid), price in sorted(rows.items()):
        t.add_row(did, pid, str(price))
    out.print(t)


def _section(out: Console, title: str) -> None:
    out.print(f"\n[bold]{title}[/bold]")


def run_demo(engine, out: Console) -> None:
    out.print(f"database: {engine.dsn} ({engine.dsn_source})")
    engine.init()
    with engine.sa.begin() as conn:
        exists = conn.execute(sa.text(
            "SELECT 1 FROM idivm.views WHERE schema_name = 'idivm_demo' AND view_name = 'phone_parts'")).first()
    if exists:
        engine.drop_view(VIEW)
    with engine.sa.begin() as conn:
        for stmt in [
            "DROP SCHEMA IF EXISTS idivm_demo CASCADE",
            "CREATE SCHEMA idivm_demo",
            "CREATE TABLE idivm_demo.devices (did text PRIMARY KEY, category text)",
            "CREATE TABLE idivm_demo.parts (pid text PRIMARY KEY, price numeric)",
            "CREATE TABLE idivm_demo.devices_parts (did text REFERENCES idivm_demo.devices, "
            "pid text REFERENCES idivm_demo.parts, PRIMARY KEY (did, pid))",
            "INSERT INTO idivm_demo.devices VALUES ('D1', 'phone'), ('D2', 'phone'), ('D3', 'tablet')",
            "INSERT INTO idivm_demo.parts VALUES ('P1', 10), ('P2', 20), ('P3', 30)",
            "INSERT INTO idivm_demo.devices_parts VALUES ('D1', 'P1'), ('D2', 'P1'), ('D1', 'P2'), ('D3', 'P3')",
        ]:
            conn.execute(sa.text(stmt))
    _section(out, "1. The tables")
    out.print("Schema idivm_demo: devices (D1 and D2 are phones, D3 a tablet), parts P1-P3 with their prices, "
              "and devices_parts, which parts each device uses.")
    _section(out, "2. The view: every part used by a phone, with its price")
    out.print(f"idivm register-view {VIEW} --sql \"{SQL}\"", markup=False, highlight=False)
    engine.register_view(VIEW, SQL)
    before = _rows(engine)
    _show(out, before, "phone_parts, as registered")
    _section(out, "3. The application writes to the tables")
    out.print("idivm's triggers log each change; the view is not touched yet.")
    with engine.sa.begin() as conn:
        for stmt, _ in WRITES:
            out.print(f"  {stmt}", markup=False, highlight=False)
            conn.execute(sa.text(stmt))
    pending = [r["pending"] for r in engine.list() if r["view"] == VIEW][0]
    out.print(f"{pending} changes wait for the view.")
    _section(out, "4. idivm maintain applies them")
    out.print(str(engine.maintain(VIEW)), markup=False, highlight=False)
    after = _rows(engine)
    _show(out, after, "phone_parts, after maintenance")
    _section(out, "5. What changed in the view, and why")
    for stmt, why in WRITES:
        out.print(f"  {stmt}\n      -> {why}", markup=False, highlight=False)
    out.print("In the view:")
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.print(f"  - removed {key[0]}, {key[1]}")
        elif key not in before:
            out.print(f"  + added   {key[0]}, {key[1]} ({after[key]})")
        elif before[key] != after[key]:
            out.print(f"  ~ changed {key[0]}, {key[1]}: price {before[key]} -> {after[key]}")
    _section(out, "6. Check: the view equals its query, recomputed")
    r = engine.verify(VIEW)
    out.print(f"verify: {'OK, equal to its query' if r.ok else 'DIFFERENT'}")
    out.print("\nNext: `idivm explain idivm_demo.phone_parts` shows how each kind of change is applied.")
