"""`idivm demo`: the paper's running example (Figure 1) on the configured database.

Creates devices/parts/devices_parts in a schema of its own (``idivm_demo``,
recreated each run), registers V (Figure 1b), changes prices, categories and
links, maintains, and shows the view before and after with a verify.
"""
from __future__ import annotations

import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

VIEW = "idivm_demo.phone_parts"
SQL = ("SELECT did, pid, price FROM idivm_demo.parts NATURAL JOIN idivm_demo.devices_parts "
       "NATURAL JOIN idivm_demo.devices WHERE category = 'phone'")


def _show(engine, out: Console, title: str) -> None:
    with engine.sa.connect() as conn:
        rows = conn.execute(sa.text("SELECT did, pid, price FROM idivm_demo.phone_parts ORDER BY did, pid")).all()
    t = Table("did", "pid", "price", title=title)
    for r in rows:
        t.add_row(*(str(x) for x in r))
    out.print(t)


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
    out.print(f"\nregister-view {VIEW} --sql \"{SQL}\"")
    engine.register_view(VIEW, SQL)
    _show(engine, out, "V after registration (Figure 2)")
    out.print("\nExplain, the Δ-script for a price update (Example 1.2: no base-table join):")
    script = engine.explain(VIEW)
    for block in script.split("-- ["):
        if "non-conditional" in block and "UPDATE" in block:
            out.print("-- [" + block.strip(), markup=False, highlight=False)
    with engine.sa.begin() as conn:
        for stmt in [
            "UPDATE idivm_demo.parts SET price = 11 WHERE pid = 'P1'",
            "UPDATE idivm_demo.devices SET category = 'phone' WHERE did = 'D3'",
            "UPDATE idivm_demo.devices SET category = 'tablet' WHERE did = 'D2'",
            "INSERT INTO idivm_demo.parts VALUES ('P4', 40)",
            "INSERT INTO idivm_demo.devices_parts VALUES ('D1', 'P4')",
            "DELETE FROM idivm_demo.devices_parts WHERE did = 'D1' AND pid = 'P2'",
        ]:
            out.print(f"  {stmt}")
            conn.execute(sa.text(stmt))
    out.print(f"\npending changes: {[r['pending'] for r in engine.list() if r['view'] == VIEW][0]}")
    out.print(f"maintain: {engine.maintain(VIEW)}")
    _show(engine, out, "V after maintenance")
    r = engine.verify(VIEW)
    out.print(f"verify: {'OK, equal to its query' if r.ok else 'DIFFERENT'}")
