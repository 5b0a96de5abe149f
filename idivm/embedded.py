"""The embedded default database: a PostgreSQL cluster idivm runs itself.

Used when no DSN is configured, so that a fresh machine with only the
PostgreSQL binaries needs no server set-up. The cluster lives in a per-user
data directory, listens only on a Unix socket inside that directory (no port
conflicts with a system server), and is reused by later calls.

PostgreSQL refuses to run as root; when idivm runs as root the cluster is
owned by the ``postgres`` system user and kept under /var/lib/idivm.
"""
from __future__ import annotations

import glob
import os
import re
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import IdivmError

PORT = 5432


def bindir() -> Path:
    """Directory with initdb/pg_ctl: $IDIVM_PG_BINDIR, pg_config --bindir, or Debian's layout."""
    candidates: list[str] = []
    if os.environ.get("IDIVM_PG_BINDIR"):
        candidates.append(os.environ["IDIVM_PG_BINDIR"])
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    raise IdivmError(
        "no PostgreSQL server binaries found (initdb, pg_ctl); install PostgreSQL, "
        "set IDIVM_PG_BINDIR, or point idivm at a server with --dsn / IDIVM_DSN"
    )


def _run_as() -> str | None:
    """The system user to run the server as (None: the current user)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError as e:
        raise IdivmError("running as root and no 'postgres' system user exists to own the embedded cluster") from e
    return "postgres"


def default_datadir() -> Path:
    if os.environ.get("IDIVM_DATA_DIR"):
        return Path(os.environ["IDIVM_DATA_DIR"])
    if os.geteuid() == 0:
        return Path("/var/lib/idivm/pgdata")
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "idivm" / "pgdata"


def _cmd(user: str | None, args: list[str]) -> list[str]:
    return ["runuser", "-u", user, "--", *args] if user else args


def dsn_for(datadir: Path, user: str) -> str:
    return f"host={datadir} port={PORT} user={user} dbname=postgres"


def start_cluster(datadir: Path, quiet: bool = False) -> str:
    """Initialise (if needed) and start a cluster in datadir; return its DSN."""
    run_as = _run_as()
    owner = run_as or pwd.getpwuid(os.geteuid()).pw_name
    bins = bindir()
    datadir.parent.mkdir(parents=True, exist_ok=True)
    if run_as:
        info = pwd.getpwnam(run_as)
        os.chown(datadir.parent, info.pw_uid, info.pw_gid)
    if not (datadir / "PG_VERSION").exists():
        if not quiet:
            print(f"idivm: creating embedded PostgreSQL cluster in {datadir}", file=sys.stderr)
        subprocess.run(
            _cmd(run_as, [str(bins / "initdb"), "-D", str(datadir), "-U", owner, "-A", "trust", "--no-sync", "-E", "UTF8"]),
            check=True, capture_output=True,
        )
        with open(datadir / "postgresql.conf", "a") as f:
            f.write(f"\nlisten_addresses = ''\nunix_socket_directories = '{datadir}'\nport = {PORT}\n")
    status = subprocess.run(_cmd(run_as, [str(bins / "pg_ctl"), "-D", str(datadir), "status"]), capture_output=True)
    if status.returncode != 0:
        if not quiet:
            print(f"idivm: starting embedded PostgreSQL in {datadir}", file=sys.stderr)
        res = subprocess.run(
            _cmd(run_as, [str(bins / "pg_ctl"), "-D", str(datadir), "-l", str(datadir / "server.log"), "-w", "start"]),
            capture_output=True, text=True,
        )
        if res.returncode != 0:
            raise IdivmError(f"could not start the embedded PostgreSQL in {datadir}: {res.stderr.strip() or res.stdout.strip()}")
    return dsn_for(datadir, owner)


@dataclass(frozen=True)
class ClusterStatus:
    datadir: Path
    state: str  # "not created", "stopped" or "running (PID n)"
    dsn: str | None  # when running


def cluster_status(datadir: Path) -> ClusterStatus:
    """What `idivm server status` prints: whether the cluster exists and runs (pg_ctl status)."""
    if not (datadir / "PG_VERSION").exists():
        return ClusterStatus(datadir, "not created", None)
    res = subprocess.run(_cmd(_run_as(), [str(bindir() / "pg_ctl"), "-D", str(datadir), "status"]),
                         capture_output=True, text=True)
    if res.returncode != 0:
        return ClusterStatus(datadir, "stopped", None)
    pid = re.search(r"PID: (\d+)", res.stdout)
    owner = _run_as() or pwd.getpwuid(os.geteuid()).pw_name
    return ClusterStatus(datadir, "running" + (f" (PID {pid.group(1)})" if pid else ""), dsn_for(datadir, owner))


def stop_cluster(datadir: Path) -> None:
    subprocess.run(_cmd(_run_as(), [str(bindir() / "pg_ctl"), "-D", str(datadir), "-m", "fast", "stop"]), capture_output=True)


def ensure_embedded() -> str:
    return start_cluster(default_datadir())
