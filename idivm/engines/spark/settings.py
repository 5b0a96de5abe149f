"""Where Spark runs and how its executors reach PostgreSQL (docs/spark.md, "Configuration").

Every setting has an environment variable; the CLI and the API pass explicit values over them:

- IDIVM_SPARK_MASTER: the master URL (default local[*]: every core of this machine; any URL Spark
  takes: spark://, yarn, k8s://);
- IDIVM_SPARK_JDBC_JAR: the PostgreSQL JDBC driver's jar (default Debian's, from
  libpostgresql-jdbc-java: no jar is downloaded at run time);
- IDIVM_SPARK_JDBC_URL: the database as Spark's executors must see it (default: idivm's own DSN as
  a JDBC URL; on a cluster the executors may need another host name);
- IDIVM_SPARK_CONF: extra Spark settings, "key=value" pairs separated by spaces, quoted as a shell
  quotes them where a value has spaces (`spark.driver.extraJavaOptions='-XX:+UseG1GC -verbose:gc'`);
- IDIVM_SPARK_CORES: the cores of a cluster whose master URL and conf do not say (the cost model
  of `--engine auto` divides Spark's work by them);
- IDIVM_SPARK_LOCAL_ROWS: inputs of at most this many rows reach Spark from the maintenance
  transaction itself, as local relations (engines/spark/local_inputs.py); 0 reads every input
  through JDBC.

Large results the executors write into PostgreSQL themselves (staging.py), with libpq, at the
database IDIVM_SPARK_JDBC_URL names (executor_conninfo).
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote

from psycopg.conninfo import conninfo_to_dict

from ...embedded import tcp_address
from ...errors import IdivmError

DEFAULT_JAR = "/usr/share/java/postgresql.jar"
LOCAL_ROWS = 20_000  # default of IDIVM_SPARK_LOCAL_ROWS
INSTALL = "pip install 'idivm[spark]'"
INSTALL_JAR = "apt-get install libpostgresql-jdbc-java (Debian, Ubuntu), or set IDIVM_SPARK_JDBC_JAR to the jar's path"


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[*]"
    jar: str = DEFAULT_JAR
    jdbc_url: str = ""
    conf: dict[str, str] = field(default_factory=dict)
    local_rows: int = field(default=LOCAL_ROWS, compare=False)  # not a setting of the session itself
    problem: str = ""  # why Spark cannot reach the database with these settings (check() raises it)

    @classmethod
    def from_env(cls, dsn: str, master: str | None = None, jar: str | None = None) -> "SparkSettings":
        try:
            pairs = shlex.split(os.environ.get("IDIVM_SPARK_CONF", ""))
        except ValueError as e:
            raise IdivmError(f"IDIVM_SPARK_CONF: {e} (key=value pairs, a value with spaces in quotes)") from None
        conf = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        url, problem = os.environ.get("IDIVM_SPARK_JDBC_URL"), ""
        if not url:
            try:
                url = jdbc_url(dsn)
            except IdivmError as e:
                url, problem = "", str(e)
        local = os.environ.get("IDIVM_SPARK_LOCAL_ROWS", "").strip() or str(LOCAL_ROWS)
        if not local.isdigit():
            raise IdivmError(f"IDIVM_SPARK_LOCAL_ROWS must be a number of rows (0 or more), not {local!r}")
        return cls(master=master or os.environ.get("IDIVM_SPARK_MASTER") or "local[*]",
                   jar=jar or os.environ.get("IDIVM_SPARK_JDBC_JAR") or DEFAULT_JAR, jdbc_url=url, conf=conf,
                   local_rows=int(local), problem=problem)

    def cores(self) -> int:
        """How many cores Spark computes with, as the cost model counts them (engine_choice.py): N of
        local[N] (every core of this machine for local[*]); on a cluster spark.cores.max, else
        spark.executor.instances x spark.executor.cores, else IDIVM_SPARK_CORES, else 2."""
        m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", self.master.strip())
        if m:
            n = m.group(1)
            return (os.cpu_count() or 1) if n == "*" else int(n or 1)
        conf = self.conf
        if conf.get("spark.cores.max", "").isdigit():
            return int(conf["spark.cores.max"])
        if conf.get("spark.executor.instances", "").isdigit():
            return int(conf["spark.executor.instances"]) * int(conf.get("spark.executor.cores", "1") or 1)
        env = os.environ.get("IDIVM_SPARK_CORES", "")
        return int(env) if env.isdigit() and int(env) > 0 else 2

    def check(self) -> None:
        """One line saying what is missing, and how to install it."""
        if self.problem:
            raise IdivmError(self.problem)
        for module in ("pyspark", "pyarrow", "pandas"):  # pandas: PySpark's mapInArrow (staging.py)
            if importlib.util.find_spec(module) is None:
                raise IdivmError(f"the Spark engine needs {module}, which is not installed: {INSTALL}")
        if not os.path.isfile(self.jar):
            raise IdivmError(f"the Spark engine needs PostgreSQL's JDBC driver, and {self.jar} does not exist: "
                             f"{INSTALL_JAR}")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise IdivmError("the Spark engine needs Java (17 or later), and no java is on PATH and JAVA_HOME is unset")

    def executor_conninfo(self) -> str | None:
        """The database as the executors reach it, as a libpq connection string (jdbc_url's
        inverse), for their writes; None when the JDBC URL has a parameter libpq has no counterpart
        for (large results then come back through the driver: staging.py)."""
        return libpq_conninfo(self.jdbc_url)


# JDBC URL parameters (PostgreSQL's JDBC driver) and the libpq keyword of each
LIBPQ_KEYWORDS = {"user": "user", "password": "password", "sslmode": "sslmode", "sslcert": "sslcert",
                  "sslkey": "sslkey", "sslrootcert": "sslrootcert", "sslpassword": "sslpassword",
                  "ApplicationName": "application_name", "connectTimeout": "connect_timeout", "options": "options"}


def libpq_conninfo(url: str) -> str | None:
    """A JDBC URL (jdbc:postgresql://host[:port][,host[:port]...]/database?key=value&...) as a libpq
    connection string; None if it is not one, or has a parameter libpq has no counterpart for
    (`ssl=true` is sslmode=require unless sslmode says otherwise)."""
    from psycopg.conninfo import make_conninfo

    m = re.fullmatch(r"jdbc:postgresql://([^/?]*)(?:/([^?]*))?(?:\?(.*))?", url or "")
    if m is None:
        return None
    hosts, ports = [], []
    for address in m.group(1).split(","):
        h = re.fullmatch(r"(\[[^\]]*\]|[^:]*)(?::(\d+))?", address)
        if h is None:
            return None
        hosts.append(h.group(1).strip("[]") or "localhost")
        ports.append(h.group(2) or "5432")
    params = {"host": ",".join(hosts), "port": ",".join(ports), "dbname": unquote(m.group(2) or "") or None}
    for key, value in parse_qsl(m.group(3) or "", keep_blank_values=True):
        if key == "ssl":
            if value.lower() in ("true", ""):
                params.setdefault("sslmode", "require")
            continue
        if key not in LIBPQ_KEYWORDS:
            return None
        params[LIBPQ_KEYWORDS[key]] = value
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})


def jdbc_url(dsn: str) -> str:
    """A libpq DSN as a JDBC URL (host, port, database, user, password, sslmode). A DSN that names
    the socket directory of idivm's embedded cluster becomes that cluster's TCP listener on
    127.0.0.1, with its password (embedded.py)."""
    parts = conninfo_to_dict(dsn)
    host = parts.get("host") or "localhost"
    if host.startswith("/"):
        tcp = tcp_address(host)
        if tcp is None:
            raise IdivmError(f"the Spark engine reaches PostgreSQL over TCP, but the DSN names a socket directory "
                             f"({host}); set IDIVM_SPARK_JDBC_URL, e.g. jdbc:postgresql://127.0.0.1:5432/db?user=...")
        parts.update(host=tcp.host, port=str(tcp.port), password=tcp.password)
        host = tcp.host
    port = parts.get("port") or "5432"
    params = [f"{k}={quote(str(parts[k]), safe='')}" for k in ("user", "password", "sslmode") if parts.get(k)]
    return f"jdbc:postgresql://{host}:{port}/{quote(parts.get('dbname') or parts.get('user') or 'postgres', safe='')}" + (
        "?" + "&".join(params) if params else "")
