"""What every benchmark shares: a throwaway database, timing statistics, machine facts, output files."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..dsn import resolve_dsn
from ..errors import first_line


@contextlib.contextmanager
def scratch_database(dsn: str | None, keep: bool = False):
    """Create a fresh database on the server (DSN, or idivm's default) and drop it afterwards.

    Yields (dsn of the new database, PostgreSQL version)."""
    server, _ = resolve_dsn(dsn)
    name = f"idivm_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
        version = c.execute("SHOW server_version").fetchone()[0]
    params = conninfo_to_dict(server)
    params["dbname"] = name
    try:
        yield make_conninfo(**params), version
    finally:
        if not keep:
            with psycopg.connect(server, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def timed_load(load, db, *args) -> dict:
    """load(db, *args), saying on stderr what it loaded and how long it took; its table sizes."""
    t0 = time.perf_counter()
    sizes = load(db, *args)
    print(f"loaded {sizes} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return sizes


def summary(values: list[float]) -> dict:
    """Median and spread of repeated measurements (seconds)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0, "runs": values}


def timed_round(db, engine, names: dict, start: int) -> dict:
    """Maintain every (view, method) once, in an order rotated by `start` (no method always goes
    first, after the batch's pages were just touched), and return the seconds each took. A method
    "recompute" is REFRESH MATERIALIZED VIEW; any other is idivm's maintain."""
    order = list(names)
    k = start % len(order)
    out = {}
    for key in order[k:] + order[:k]:
        t0 = time.perf_counter()
        if key[1] == "recompute":
            db.execute(f"REFRESH MATERIALIZED VIEW {names[key]}")
        else:
            engine.maintain(names[key])
        out[key] = time.perf_counter() - t0
    return out


def pg_ivm_version(db: psycopg.Connection) -> str | None:
    """The server's pg_ivm version once `CREATE EXTENSION pg_ivm` succeeded, or None (saying so on
    stderr) where the server does not have it: benchmarks compare with it only where it is installed."""
    try:
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_ivm")
    except psycopg.Error as e:
        print(f"pg_ivm is not installed on this server ({first_line(e)}): skipped; docs/benchmarks.md says "
              "how to install it", file=sys.stderr)
        return None
    return db.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_ivm'").fetchone()[0]


class Scheduler:
    """`idivm schedule --every S` as a child process beside a benchmark's writers, its JSON event
    lines collected in `events` (the benchmarks that measure views kept by the scheduler)."""

    def __init__(self, dsn: str, every: float):
        self.process = subprocess.Popen([sys.executable, "-m", "idivm.cli", "--dsn", dsn, "schedule", "--every",
                                         str(every)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._reader = threading.Thread(target=lambda: self.events.extend(json.loads(line) for line in self.process.stdout),
                                        daemon=True)
        self._reader.start()

    def stop(self, timeout: float) -> int | None:
        """SIGTERM, as a service manager stops it; its exit code, or None if it had to be killed after
        `timeout` seconds."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = None
        self._reader.join(timeout=5)
        return code


class Writers:
    """Writer threads for a fixed time, and a monitor beside them that goes on until it has seen
    their last writes (a writer may commit its last one after `stop` is set)."""

    def __init__(self):
        self.stop, self.written = threading.Event(), threading.Event()
        self._stopped_at = 0.0

    def run(self, writers: list[Callable[[], None]], seconds: float, monitor: Callable[[], None] | None = None) -> float:
        """Each writer (a loop that returns once `stop` is set) in a thread of its own for `seconds`;
        the writers' elapsed seconds, returned once the monitor has returned too."""
        threads = [threading.Thread(target=w) for w in writers]
        watcher = threading.Thread(target=monitor) if monitor is not None else None
        started = time.monotonic()
        for t in threads:
            t.start()
        if watcher is not None:
            watcher.start()
        time.sleep(seconds)
        self.stop.set()
        self._stopped_at = time.monotonic()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        self.written.set()
        if watcher is not None:
            watcher.join()
        return elapsed

    def gave_up(self, limit: float) -> bool:
        """For the monitor: the writers stopped more than `limit` seconds ago (what it has not seen
        by then is reported as never seen)."""
        return self.stop.is_set() and time.monotonic() - self._stopped_at > limit


def machine() -> dict:
    mem = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) // 1024 // 1024} GiB"
    return {"cpus": os.cpu_count(), "memory": mem, "platform": platform.platform(),
            "python": platform.python_version()}


def write_json(path: str, data: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, default=str))


def print_table(headers: list[str], rows: list[list]) -> None:
    """A plain aligned table on stdout (benchmarks run in CI logs and terminals alike)."""
    cells = [[str(h) for h in headers]] + [[f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for k, r in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def parser(doc: str, out: str) -> argparse.ArgumentParser:
    """The options every benchmark has: where to run, where to write, whether to keep the database."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", default=None, help="server to create the benchmark database on (default: idivm's)")
    ap.add_argument("--out", default=out, type=_out_file, help="JSON results (plots are written next to it)")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark database")
    return ap


def _out_file(path: str) -> str:
    """--out checked before a run of minutes, not after it: a file's path, ending in .json (the plots
    take its name with .png)."""
    if Path(path).is_dir() or not path.endswith(".json"):
        raise argparse.ArgumentTypeError(f"{path!r} is not a path to a .json file (the plots are written beside it)")
    return path


def batches_parser(doc: str, out: str, scale: float, scale_help: str, batches: str) -> argparse.ArgumentParser:
    """parser() plus the options of the benchmarks that sweep batch sizes: --scale, --batches, --rounds."""
    ap = parser(doc, out)
    ap.add_argument("--scale", type=float, default=scale, help=scale_help)
    ap.add_argument("--batches", default=batches, help="comma-separated changes per batch")
    ap.add_argument("--rounds", type=int, default=3)
    return ap


def pyplot():
    """matplotlib's pyplot, rendering to files only (benchmarks run headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
