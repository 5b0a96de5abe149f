"""Housekeeping commands (issue 18 item 6): `idivm uninstall` removes everything idivm created and
nothing else, or nothing at all; `idivm server status|start|stop` manage the embedded cluster."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

import idivm
from cli_runner import run_cli


def cli(*args, dsn=None, env=None):
    prefix = ["--dsn", dsn] if dsn else []
    return run_cli(*prefix, *args, env=env)


def _leftovers(db):
    return db.execute(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'idivm'), "
        "(SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'idivm%'), "
        "(SELECT count(*) FROM pg_event_trigger WHERE evtname LIKE 'idivm%'), "
        "(SELECT count(*) FROM pg_class WHERE relname IN ('cheap', 'per_sid', 'hot'))").fetchone()


def test_uninstall_removes_what_idivm_created_and_keeps_the_base_tables(engine, db, fresh_db):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int NOT NULL)")
    db.execute("INSERT INTO parts SELECT g, g % 4, g * 3 FROM generate_series(1, 40) g")
    engine.register_view("cheap", "SELECT pid, sid, price FROM parts WHERE price < 60")
    engine.register_view("per_sid", "SELECT sid, count(*) AS n, sum(price) AS total FROM cheap GROUP BY sid")
    engine.register_view("hot", "SELECT pid, price FROM parts WHERE price > 100", mode="immediate")
    assert _leftovers(db)[:2] != (0, 0)
    # a PostgreSQL view of the user's over a maintained view: uninstall names it and changes nothing
    db.execute("CREATE VIEW report AS SELECT * FROM per_sid")
    blocked = cli("uninstall", "--yes", dsn=fresh_db)
    assert blocked.returncode == 2 and "nothing was changed" in blocked.stderr and "report" in blocked.stderr
    assert len(blocked.stderr.strip().splitlines()) == 1
    assert sorted(s.view for s in engine.status()) == ["public.cheap", "public.hot", "public.per_sid"]
    db.execute("DROP VIEW report")
    asked = cli("uninstall", dsn=fresh_db)  # no terminal to ask on: --yes is required
    assert asked.returncode == 2 and "--yes" in asked.stderr and "3 maintained view(s)" in asked.stderr
    done = cli("uninstall", "--yes", dsn=fresh_db)
    assert done.returncode == 0, done.stderr
    assert "dropped public.per_sid" in done.stdout
    assert _leftovers(db) == (0, 0, 0, 0)
    db.execute("INSERT INTO parts VALUES (100, 1, 5)")  # the base table works without idivm
    assert db.execute("SELECT count(*) FROM parts").fetchone()[0] == 41
    assert "nothing to do" in cli("uninstall", "--yes", dsn=fresh_db).stdout
    again = idivm.connect(fresh_db)  # and idivm installs again from scratch
    try:
        again.init()
        again.register_view("cheap", "SELECT pid, sid, price FROM parts WHERE price < 60")
        assert again.verify("cheap").ok
    finally:
        again.close()


@pytest.fixture
def data_dir():
    tmp = Path(tempfile.mkdtemp(prefix="idivm-server-"))
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
    yield tmp / "pgdata"
    from idivm.embedded import stop_cluster

    if (tmp / "pgdata" / "PG_VERSION").exists():
        stop_cluster(tmp / "pgdata")
    shutil.rmtree(tmp, ignore_errors=True)


def test_server_status_start_and_stop(data_dir):
    try:
        from idivm.embedded import bindir

        bindir()
    except idivm.IdivmError as e:
        pytest.skip(f"no PostgreSQL binaries for an embedded cluster: {e}")
    env = {"IDIVM_DATA_DIR": str(data_dir)}
    before = cli("server", "status", env=env)
    assert before.returncode == 1 and "not created" in before.stdout
    started = cli("server", "start", env=env)
    assert started.returncode == 0, started.stderr
    running = cli("server", "status", env=env)
    assert running.returncode == 0 and "running (PID" in running.stdout and f"host={data_dir}" in running.stdout
    assert cli("list", env=env).returncode in (0, 2)  # the embedded default is what commands without a DSN use
    stopped = cli("server", "stop", env=env)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    after = cli("server", "status", env=env)
    assert after.returncode == 1 and "stopped" in after.stdout
    assert "not running" in cli("server", "stop", env=env).stdout


def test_the_embedded_cluster_listens_on_localhost_with_a_password_only(data_dir):
    """Issue 33, item 4: what needs TCP (the Spark engine's JDBC reads) reaches the embedded cluster
    on 127.0.0.1, with scram-sha-256 and a password only its owner can read; never with trust."""
    try:
        from idivm.embedded import bindir, password_file, start_cluster, tcp_address

        bindir()
    except idivm.IdivmError as e:
        pytest.skip(f"no PostgreSQL binaries for an embedded cluster: {e}")
    dsn = start_cluster(data_dir, quiet=True)
    assert f"host={data_dir}" in dsn  # idivm itself goes through the socket
    tcp = tcp_address(str(data_dir))
    assert tcp is not None and tcp.host == "127.0.0.1" and f"port={tcp.port}" in dsn
    assert password_file(data_dir).stat().st_mode & 0o077 == 0
    user = psycopg.conninfo.conninfo_to_dict(dsn)["user"]
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(host=tcp.host, port=tcp.port, user=user, dbname="postgres", connect_timeout=5)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(host=tcp.host, port=tcp.port, user=user, dbname="postgres", password="guess", connect_timeout=5)
    with psycopg.connect(host=tcp.host, port=tcp.port, user=user, dbname="postgres", password=tcp.password) as c:
        rules = c.execute("SELECT type, auth_method FROM pg_hba_file_rules WHERE type LIKE 'host%'").fetchall()
    assert rules and all(method == "scram-sha-256" for _, method in rules), rules
