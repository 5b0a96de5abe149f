"""Dropping the test run's databases: called by conftest's reaper, or run as a detached process
at the end of the run (`python drop_databases.py`, reading a JSON list of [server DSN, database]
from its standard input), so
that the run ends when its tests do. PostgreSQL 15 checkpoints for every DROP DATABASE and the
dropping session waits for it: the first drop at the end of a run waited for the spread checkpoint
in progress, and the rest shared checkpoints a pool at a time, 15-20 s of a run with its workers
idle (docs/benchmarks.md, "The test suite")."""
from __future__ import annotations

import json
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import psycopg

POOL = 8  # connections at once (a server's max_connections is 100 by default)


def drop_database(item: tuple[str, str], attempts: int = 6) -> None:
    """DROP ... WITH (FORCE) terminates the database's sessions, then fails if one is still
    there after 5 s: a session that connected after the termination, or a backend slow to exit
    (CI saw "being accessed by other users" once, in a batch drop after a Spark test). The drop
    is tried again, as is one the server refused a connection for (other workers' tests may
    hold most of its connections); a database still there after that is left to the server (and
    warned about): cleaning up is not what a test checks, and the throwaway cluster goes whole."""
    for attempt in range(attempts):
        try:
            with psycopg.connect(item[0], autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{item[1]}" WITH (FORCE)')
            return
        except psycopg.OperationalError as e:  # a refused connection carries no SQLSTATE: its message tells
            if not isinstance(e, psycopg.errors.ObjectInUse) and "too many clients" not in str(e):
                raise
            time.sleep(0.5 * (attempt + 1))
    warnings.warn(f"test database {item[1]} still in use after {attempts} drops; left in place")


def drop_databases(items: list[tuple[str, str]]) -> None:
    if items:
        with ThreadPoolExecutor(min(len(items), POOL)) as pool:
            list(pool.map(drop_database, items))


if __name__ == "__main__":
    drop_databases([tuple(i) for i in json.load(sys.stdin)])
