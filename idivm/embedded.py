"""The embedded default database: a PostgreSQL cluster idivm runs itself.

Used when no DSN is configured, so that a fresh machine with only the
PostgreSQL binaries needs no server set-up (the test suite starts a throwaway
one the same way where no server answers). The cluster lives in a per-user
data directory and is reused by later calls. idivm reaches it on a Unix socket
inside that directory, where the data directory's own permissions keep other
users out (trust authentication). It also listens on 127.0.0.1, on a port that
was free when it was created, for what can only connect over TCP (the Spark
engine's JDBC reads): there with scram-sha-256 and a password generated at
creation and kept beside the data directory, readable by its owner alone, never
with trust.

PostgreSQL refuses to run as root; when idivm runs as root the cluster is
owned by the ``postgres`` system user and kept under /var/lib/idivm.
"""
from __future__ import annotations

import glob
import os
import re
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import IdivmError

START_ATTEMPTS = 3  # a port found free may be taken before the server binds it: another is tried


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


def password_file(datadir: Path) -> Path:
    """Where the password of the cluster's TCP listener is kept: beside the data directory."""
    return datadir.with_name(datadir.name + ".password")


def _port(datadir: Path) -> int:
    """The cluster's port (its socket's name has it too): the last `port` its configuration sets."""
    ports = re.findall(r"^\s*port\s*=\s*(\d+)", (datadir / "postgresql.conf").read_text(), re.MULTILINE)
    return int(ports[-1]) if ports else 5432


def dsn_for(datadir: Path, user: str) -> str:
    return f"host={datadir} port={_port(datadir)} user={user} dbname=postgres"


@dataclass(frozen=True)
class TcpAddress:
    host: str
    port: int
    password: str


def tcp_address(socket_dir: str) -> TcpAddress | None:
    """How a client that needs TCP reaches the embedded cluster whose socket is in `socket_dir`
    (None: that directory is not one, or its cluster has no TCP listener)."""
    datadir = Path(socket_dir)
    try:
        password = password_file(datadir).read_text().strip()
        port = _port(datadir)
    except OSError:
        return None
    return TcpAddress("127.0.0.1", port, password) if password else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _create(datadir: Path, run_as: str | None, owner: str, bins: Path) -> None:
    """initdb: trust on the socket, scram-sha-256 with a new password over TCP on 127.0.0.1."""
    secret = password_file(datadir)
    secret.write_text(secrets.token_urlsafe(24) + "\n")
    secret.chmod(0o600)
    if run_as:  # initdb reads it as that user; root reads it afterwards all the same
        info = pwd.getpwnam(run_as)
        os.chown(secret, info.pw_uid, info.pw_gid)
    res = subprocess.run(
        _cmd(run_as, [str(bins / "initdb"), "-D", str(datadir), "-U", owner, "--auth-local=trust",
                      "--auth-host=scram-sha-256", f"--pwfile={secret}", "--no-sync", "-E", "UTF8"]),
        capture_output=True, text=True,
    )
    if res.returncode != 0:
        said = (res.stderr.strip() or res.stdout.strip() or f"initdb exited with {res.returncode}").splitlines()
        raise IdivmError(f"could not create the embedded PostgreSQL cluster in {datadir}: {said[-1]}")
    with open(datadir / "postgresql.conf", "a") as f:
        f.write(f"\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{datadir}'\nport = {_free_port()}\n")


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
        _create(datadir, run_as, owner, bins)
    status = subprocess.run(_cmd(run_as, [str(bins / "pg_ctl"), "-D", str(datadir), "status"]), capture_output=True)
    if status.returncode != 0:
        if not quiet:
            print(f"idivm: starting embedded PostgreSQL in {datadir}", file=sys.stderr)
        for attempt in range(1, START_ATTEMPTS + 1):
            res = subprocess.run(
                _cmd(run_as, [str(bins / "pg_ctl"), "-D", str(datadir), "-l", str(datadir / "server.log"), "-w", "start"]),
                capture_output=True, text=True,
            )
            if res.returncode == 0:
                break
            log = (datadir / "server.log").read_text(errors="replace") if (datadir / "server.log").exists() else ""
            if attempt < START_ATTEMPTS and "Address already in use" in "\n".join(log.splitlines()[-5:]):
                with open(datadir / "postgresql.conf", "a") as f:  # the port was taken meanwhile: another one
                    f.write(f"port = {_free_port()}\n")
                continue
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
