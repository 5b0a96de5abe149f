"""The `idivm` command line end to end, as a user runs it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cli_runner import run_cli


def cli(dsn, *args, timeout=180):
    return run_cli("--dsn", dsn, *args, timeout=timeout)


@pytest.mark.slow
def test_every_command(fresh_db, db, tmp_path):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric)")
    db.execute("INSERT INTO parts VALUES (1, 10), (2, 20)")
    from idivm.catalog.migrate import HEAD

    first = cli(fresh_db, "init")  # says what it installed (issue 33, item 5), then that nothing was needed
    assert first.returncode == 0 and "installed idivm in database" in first.stdout, first.stdout
    assert f"revision {HEAD}" in first.stdout and "event triggers that notice schema changes" in first.stdout
    again = cli(fresh_db, "init")  # idempotent
    assert again.returncode == 0 and f"is up to date (revision {HEAD})" in again.stdout, again.stdout

    assert db.execute("SELECT version_num FROM idivm.alembic_version").fetchone()[0] == HEAD
    f = tmp_path / "v.sql"
    f.write_text("SELECT pid, price * 2 AS double FROM parts WHERE price < 100\n")
    r = cli(fresh_db, "register-view", "public.cheap", "--file", str(f))
    assert r.returncode == 0, r.stderr
    db.execute("UPDATE parts SET price = 11 WHERE pid = 1")
    r = cli(fresh_db, "list")
    assert r.returncode == 0 and "public.cheap" in r.stdout and "never" in r.stdout
    r = cli(fresh_db, "maintain", "--engine", "spork")
    assert r.returncode != 0 and "unknown engine 'spork': choose postgres, spark or auto" in r.stderr + r.stdout
    r = cli(fresh_db, "--spark-jar", str(tmp_path / "none.jar"), "maintain", "--engine", "spark")
    assert r.returncode != 0 and f"{tmp_path / 'none.jar'} does not exist" in r.stderr + r.stdout  # the option is used
    assert "Traceback" not in r.stderr
    r = cli(fresh_db, "maintain")
    assert r.returncode == 0 and "public.cheap: 1 effective change, " in r.stdout
    r = cli(fresh_db, "verify", "cheap")
    assert r.returncode == 0 and "OK" in r.stdout
    storage = db.execute("SELECT 'idivm.view_' || id FROM idivm.views").fetchone()[0]
    db.execute(f"UPDATE {storage} SET double = 0")  # damage the view's storage behind idivm's back
    r = cli(fresh_db, "verify", "cheap")
    assert r.returncode == 1 and "DIFFERENT: 2 rows missing, 2 extra; rows as (" in r.stdout
    assert "  missing: (" in r.stdout and "  extra:   (" in r.stdout and ", 0)" in r.stdout  # SQL literals
    r = cli(fresh_db, "explain", "cheap")
    assert r.returncode == 0
    for part in ("plan (pass 1: IDs)", "base-table i-diff schemas", "rule DAG", "Δ-script", f"UPDATE \"idivm\".\"{storage.split('.')[1]}\""):
        assert part in r.stdout
    r = cli(fresh_db, "drop-view", "cheap")
    assert r.returncode == 0
    assert db.execute("SELECT to_regclass('public.cheap')").fetchone()[0] is None


def test_demo(fresh_db):
    r = cli(fresh_db, "demo")
    assert r.returncode == 0, r.stderr
    assert "verify: OK, equal to its query" in r.stdout
    sections = ["1. The tables", "2. The view", "3. The application writes", "4. idivm maintain applies them",
                "5. What changed in the view, and why", "6. Check"]
    assert [r.stdout.index(s) for s in sections] == sorted(r.stdout.index(s) for s in sections)
    assert "Figure" not in r.stdout and "Example 1" not in r.stdout  # plain words, not the paper's numbering
    assert "+ added   D3, P3" in r.stdout and "- removed D2, P1" in r.stdout
    assert cli(fresh_db, "demo").returncode == 0  # re-runnable


def test_register_view_says_what_auto_chose(fresh_db, db):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric)")
    db.execute("CREATE TABLE uses (did int, pid int, PRIMARY KEY (did, pid))")
    r = cli(fresh_db, "register-view", "pricey", "--strategy", "auto", "--sql",
            "SELECT pid FROM parts WHERE price > (SELECT avg(price) FROM parts p2)")
    assert r.returncode == 0 and "registered pricey (strategy auto: higher-order, deferred)" in r.stdout, r.stderr
    r = cli(fresh_db, "register-view", "plain", "--strategy", "auto", "--sql", "SELECT pid, price FROM parts")
    assert r.returncode == 0 and "registered plain (strategy auto: id, deferred)" in r.stdout, r.stderr
    r = cli(fresh_db, "explain", "pricey")
    assert "strategy auto: higher-order, because an uncorrelated nested aggregate" in r.stdout


def test_version_and_list_as_json(fresh_db, db):
    import json

    import idivm

    r = subprocess.run([sys.executable, "-m", "idivm.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"idivm {idivm.__version__}"
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric)")
    assert cli(fresh_db, "register-view", "cheap", "--sql", "SELECT pid FROM parts WHERE price < 10").returncode == 0
    assert cli(fresh_db, "maintain").returncode == 0
    r = cli(fresh_db, "list", "--json")
    assert r.returncode == 0, r.stderr
    [view] = json.loads(r.stdout)
    assert view["view"] == "public.cheap" and view["pending"] == 0 and view["last_maintained_at"].startswith("20")
    assert view["stale"] is None
    r = cli(fresh_db, "list")
    assert "s ago" in r.stdout and "stale" not in r.stdout, r.stdout  # an age, like status shows
    db.execute("ALTER TABLE parts RENAME COLUMN price TO cost")
    r = cli(fresh_db, "list", "--json")
    assert json.loads(r.stdout)[0]["stale"] == "column(s) price of base table public.parts were dropped, renamed or changed type"
    assert "stale: column(s) price" in cli(fresh_db, "list").stdout.replace("\n", "")


def test_help_shows_no_flag_types_and_benchmarks_list_their_own_options():
    def run(*args):
        return run_cli(*args, timeout=60)

    r = run("status", "--help")
    assert r.returncode == 0 and "--json" in r.stdout and "<bool>" not in r.stdout, r.stdout
    r = run("bench", "devices", "--help")
    assert r.returncode == 0 and "usage: idivm bench devices" in r.stdout and "--scale" in r.stdout, r.stdout + r.stderr


def test_verify_prints_differing_rows_as_sql_literals():
    import datetime
    import decimal

    from idivm.cli import _sql_literal
    from idivm.names import counted

    values = (None, True, 3, decimal.Decimal("2.50"), "O'Brien", datetime.date(2026, 1, 2), b"\x01\xff",
              {"a": 1}, float("nan"))
    assert [_sql_literal(v) for v in values] == [
        "NULL", "TRUE", "3", "2.50", "'O''Brien'", "'2026-01-02'", "'\\x01ff'", "'{\"a\": 1}'", "'nan'"]
    assert (counted(1, "row"), counted(2, "row"), counted(0, "statement")) == ("1 row", "2 rows", "0 statements")
