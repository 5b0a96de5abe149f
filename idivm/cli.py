"""The `idivm` command line (docs/cli.md). Errors print one line, never a traceback."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from .errors import EXIT_STALE, IdivmError, first_line

def _hide_flag_types() -> None:
    """Typer's help prints a type for every option, `<bool>` for flags, which take no value: drop it
    for flags (a presentation detail of the help screen only)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else shown(self, ctx)


_hide_flag_types()
app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Incremental maintenance of SQL views over PostgreSQL (ID-based IVM).")
out = Console(width=None if sys.stdout.isatty() else 200)  # piped output: never truncate cells
_state: dict = {}


def _show_version(value: bool) -> None:
    if value:
        from . import __version__

        print(f"idivm {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="print idivm's version and exit"),
          dsn: Optional[str] = typer.Option(None, "--dsn", help="PostgreSQL DSN; else IDIVM_DSN, DATABASE_URL, "
                                            "or the embedded default database"),
          spark_master: Optional[str] = typer.Option(None, "--spark-master", help="the Spark engine's master URL "
                                                     "(local[N], spark://..., yarn, k8s://...); else IDIVM_SPARK_MASTER, "
                                                     "else local[*]"),
          spark_jar: Optional[Path] = typer.Option(None, "--spark-jar", help="PostgreSQL's JDBC driver jar for the "
                                                   "Spark engine; else IDIVM_SPARK_JDBC_JAR, else Debian's "
                                                   "/usr/share/java/postgresql.jar")):
    import os

    _state["dsn"] = dsn
    # the Spark engine reads its settings from the environment (engines/spark/settings.py): the
    # options set it for this process only
    if spark_master:
        os.environ["IDIVM_SPARK_MASTER"] = spark_master
    if spark_jar:
        os.environ["IDIVM_SPARK_JDBC_JAR"] = str(spark_jar)


def _engine():
    from .api import connect

    if "engine" not in _state:
        _state["engine"] = connect(_state.get("dsn"), source="--dsn")
    return _state["engine"]


@app.command()
def init():
    """Install or upgrade idivm's catalog schema (idempotent)."""
    out.print(_engine().init())


ENGINE_HELP = ("where the diffs are computed: postgres, spark, or auto (a cost model chooses per view and batch; "
               "docs/spark.md); default: each view's engine policy, else IDIVM_ENGINE, else postgres")
FILL_ENGINE_HELP = ("where the view's contents are computed: postgres (default) or spark (docs/spark.md, for large "
                    "views); default from IDIVM_ENGINE")


@contextlib.contextmanager
def _spark_progress(engine: Optional[str]):
    """A progress bar of Spark's tasks (and the rows copied back) when the engine is Spark and the
    output is a terminal; else nothing."""
    from .api import resolve_engine

    if resolve_engine(engine) != "spark" or not out.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("Spark"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[rows]} rows copied"),
                  TimeElapsedColumn(), console=out, transient=True) as bar:
        task = bar.add_task("spark", total=None, rows=0)

        def report(done: int, total: int, rows: int) -> None:
            bar.update(task, completed=done, total=total or None, rows=f"{rows:,}")

        yield report


def _query_text(sql: str | None, file: Path | None) -> str | None:
    """The query of --sql, or the text of --file."""
    if file is None:
        return sql
    try:
        return file.read_text()
    except OSError as e:
        raise IdivmError(f"cannot read {file}: {e.strerror}") from None


@app.command("register-view")
def register_view(
    name: str = typer.Argument(..., help="view name, optionally SCHEMA.NAME"),
    sql: Optional[str] = typer.Option(None, "--sql", help="the defining SELECT"),
    file: Optional[Path] = typer.Option(None, "--file", help="file holding the defining SELECT"),
    strategy: str = typer.Option("id", "--strategy", help="id (ID-based, default), tuple (tuple-based baseline), higher-order (DBToaster maps) or auto (chosen per view; explain says which and why)"),
    mode: str = typer.Option("deferred", "--mode", help="deferred (maintain / schedule apply changes later) or "
                             "immediate (inside every writing transaction)"),
    engine: Optional[str] = typer.Option(None, "--engine", help=FILL_ENGINE_HELP),
    replace: bool = typer.Option(False, "--replace", help="if the view exists: do nothing when its query, strategy "
                                 "and mode are as given, else rebuild it and the views over it in one transaction"),
    if_not_exists: bool = typer.Option(False, "--if-not-exists", help="if the view exists, leave it as it is"),
):
    """Register a view: compile its Δ-program, create and fill its table, start capturing changes."""
    if (sql is None) == (file is None):
        raise IdivmError("give the view's SELECT with exactly one of --sql or --file")
    sql = _query_text(sql, file)
    idivm = _engine()
    with _spark_progress(engine) as progress:
        done = idivm.register_view(name, sql, strategy=strategy, mode=mode, engine=engine, progress=progress,
                                   replace=replace, if_not_exists=if_not_exists)
    if done == "exists":
        out.print(f"{name} is already registered; left as it is")
        return
    if done == "unchanged":
        out.print(f"{name} is registered with this query, strategy and mode; nothing to do")
        return
    if strategy == "auto":  # say what auto chose (explain says why)
        strategy = f"auto: {idivm.strategy_of(name)}"
    from .api import resolve_engine

    used = resolve_engine(engine)
    on = f", filled on {used}" if used != "postgres" else ""
    out.print(f"{'replaced' if done == 'replaced' else 'registered'} {name} (strategy {strategy}, {mode}{on})")


@app.command()
def maintain(names: List[str] = typer.Argument(None, help="views to maintain (default: all)"),
             engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP)):
    """Apply the changes logged since the last maintenance (one transaction per view, each view on its
    own: one that fails is rolled back and reported, the others go on). Exit status 1 if any view
    failed, else 3 if any was skipped because a schema change made it stale (`idivm refresh` it)."""
    reports = _engine().maintain(*(names or []), keep_going=True, engine=engine)
    reports = reports if isinstance(reports, list) else [reports]
    for r in reports:
        out.print(str(r), markup=False, highlight=False)
    if any(r.failed for r in reports):
        raise typer.Exit(1)
    if any(r.stale for r in reports):
        raise typer.Exit(EXIT_STALE)


SHOWN_ROWS = 20  # per kind; the rest are counted


def _sql_literal(value) -> str:
    """A value as a SQL literal, to paste into a query (`verify` prints differing rows so)."""
    import decimal
    import json

    from .sqltext import string_literal

    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, decimal.Decimal)) or (isinstance(value, float) and value == value
                                                     and abs(value) != float("inf")):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return string_literal("\\x" + bytes(value).hex())
    if isinstance(value, (dict, list)):
        return string_literal(json.dumps(value))
    return string_literal(str(value))  # text, dates and times (str gives PostgreSQL's input form), uuid, ...


@app.command()
def verify(name: str):
    """Maintain, then compare the view with its recomputed query; exit 1 on any difference."""
    r = _engine().verify(name)
    if r.ok:
        out.print(f"{r.view}: OK, equal to its query")
        return
    from .names import counted

    out.print(f"{r.view}: DIFFERENT: {counted(len(r.missing), 'row')} missing, {len(r.extra)} extra; "
              f"rows as ({', '.join(r.columns)}):", markup=False, highlight=False)
    for label, rows in (("missing:", r.missing), ("extra:  ", r.extra)):
        for row in rows[:SHOWN_ROWS]:
            out.print(f"  {label} ({', '.join(_sql_literal(v) for v in row)})", markup=False, highlight=False)
        if len(rows) > SHOWN_ROWS:
            out.print(f"  ... and {len(rows) - SHOWN_ROWS} more {label.strip(': ')}")
    raise typer.Exit(1)


@app.command()
def explain(name: Optional[str] = typer.Argument(None, help="a registered view (or --sql / --file instead)"),
            unminimized: bool = typer.Option(
                False, "--unminimized", help="show the rule DAG, Δ-program and its SQL before minimization (pass 4)"),
            sql: Optional[str] = typer.Option(None, "--sql", help="a query that is not registered: what registering it would create"),
            file: Optional[Path] = typer.Option(None, "--file", help="the query of --sql, read from a file"),
            strategy: str = typer.Option("id", "--strategy", help="the strategy of --sql / --file: id, tuple, higher-order or auto")):
    """Show the plan with IDs, the base-table i-diff schemas, the rule DAG, the Δ-program and its
    PostgreSQL rendering (the Δ-script) of a registered view, or, with --sql or --file, of a query
    that is not registered (a dry run: nothing is created or kept)."""
    if sql is not None and file is not None:
        raise IdivmError("give the query with --sql or with --file, not both")
    sql = _query_text(sql, file)
    if sql is not None:
        if name is not None or unminimized:
            raise IdivmError("explain --sql / --file explains a query that is not registered: give no view name "
                             "and no --unminimized")
        text = _engine().explain(sql=sql, strategy=strategy)
    elif name is None:
        raise IdivmError("explain needs a registered view's name, or a query with --sql or --file")
    else:
        text = _engine().explain(name, unminimized=unminimized)
    out.print(text, markup=False, highlight=False)


@app.command("list")
def list_views(as_json: bool = typer.Option(False, "--json", help="one JSON object per view, in a list")):
    """Registered views with strategy, pending changes and last maintenance; a stale one says why."""
    from datetime import datetime, timezone

    from .operate.storage import Storage

    rows = _engine().list()
    if as_json:
        import json

        print(json.dumps(rows, indent=2, default=lambda o: o.isoformat() if hasattr(o, "isoformat") else str(o)))
        return
    now = datetime.now(timezone.utc)
    t = Table("view", "strategy", "pending changes", "last maintained", "took (ms)", "changes applied", "storage")
    for r in rows:
        when = r["last_maintained_at"]
        size = r["storage"]
        t.add_row(r["view"] + (f" (stale: {r['stale']})" if r["stale"] else ""), r["strategy"], str(r["pending"]),
                  _age((now - when).total_seconds()) + " ago" if when else "never",
                  f"{r['last_duration_ms']:.1f}" if r["last_duration_ms"] is not None else "",
                  str(r["last_changes"] if r["last_changes"] is not None else ""),
                  str(Storage(size["view_bytes"], size["caches_bytes"], size["log_share_bytes"])))
    out.print(t)


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="one JSON object per view, in a list")):
    """Per view: mode, pending changes and the oldest one's age, last maintenance, failures, staleness."""
    from datetime import datetime, timezone

    statuses = _engine().status(storage=True)
    now = datetime.now(timezone.utc)
    if as_json:
        import json

        print(json.dumps([s.as_json(now) for s in statuses], indent=2, default=str))
        return
    t = Table("view", "strategy", "mode", "pending", "oldest pending", "last maintained", "took (ms)",
              "failures", "stale", "policy", "next", "storage")
    for s in statuses:
        j = s.as_json(now)
        age = j["oldest_pending_age_s"]
        t.add_row(s.view, s.strategy, s.mode, str(s.state.pending), _age(age) if age is not None else "",
                  _age((now - s.state.last_maintained_at).total_seconds()) + " ago" if s.state.last_maintained_at else "never",
                  f"{s.last_duration_ms:.1f}" if s.last_duration_ms is not None else "",
                  str(s.state.consecutive_failures) + (f" ({s.last_error})" if s.last_error else ""),
                  f"yes: {s.stale_reason}" if s.state.stale else "no", str(s.policy),
                  ("due: " if s.decision.due else "") + s.decision.reason, str(s.storage))
    out.print(t)
    if not _engine().watches_schema_changes():
        out.print("warning: schema changes of base tables are not detected (no event triggers: `idivm init` "
                  "installs them when run by a superuser)")


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@app.command("set-policy")
def set_policy(
    name: str = typer.Argument(..., help="view name, optionally SCHEMA.NAME"),
    every: Optional[float] = typer.Option(None, "--every", help="maintain at least every S seconds while changes wait"),
    max_pending: Optional[int] = typer.Option(None, "--max-pending", help="maintain once N changes wait (wakes the scheduler)"),
    max_staleness: Optional[float] = typer.Option(None, "--max-staleness", help="maintain before the oldest change is S seconds old"),
    reset: bool = typer.Option(False, "--reset", help="back to the defaults first"),
    engine: Optional[str] = typer.Option(None, "--engine", help="the engine that maintains it when a run names "
                                         "none: postgres, spark, or auto (a cost model chooses per batch; docs/spark.md)"),
    recompute: Optional[str] = typer.Option(None, "--recompute", help="when a maintenance recomputes the view instead "
                                            "of running its Δ-script: auto (when estimated cheaper), never, or always "
                                            "(docs/maintenance.md)"),
):
    """Set when the scheduler maintains a view, with which engine, and when it recomputes the view instead of
    running its Δ-script (settings not given keep their value)."""
    policy = _engine().set_policy(name, every=every, max_pending=max_pending, max_staleness=max_staleness, reset=reset,
                                  engine=engine, recompute=recompute)
    out.print(f"{name}: {policy}")


@app.command()
def schedule(
    every: float = typer.Option(60.0, "--every", help="default seconds between maintenances of a view with "
                                "pending changes (views without their own policy)"),
    once: bool = typer.Option(False, "--once", help="one pass over the due views, then exit (exit 1 if one failed, 3 if one is stale)"),
    grace: float = typer.Option(10.0, "--grace", help="on SIGTERM/SIGINT, seconds the running maintenance may "
                                "take before it is cancelled and rolled back"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
):
    """Run the scheduler: keep every view within its policy until SIGTERM/SIGINT (one JSON line per event)."""
    from .operate.policy import DEFAULT, with_every
    from .operate.scheduler import Worker

    if not every > 0:
        raise IdivmError(f"--every must be a positive number of seconds, got {every}")
    if engine is not None:
        from .api import resolve_engine

        resolve_engine(engine, maintenance=True)
    raise typer.Exit(Worker(_engine(), with_every(DEFAULT, every), once=once, grace=grace, run_engine=engine).run())


@app.command("set-mode")
def set_mode(name: str = typer.Argument(..., help="view name, optionally SCHEMA.NAME"),
             mode: str = typer.Argument(..., help="deferred or immediate")):
    """Switch a view between deferred and immediate maintenance (applies pending changes first)."""
    _engine().set_mode(name, mode)
    out.print(f"{name}: {mode}")


@app.command()
def grant(name: str = typer.Argument(..., help="view name, optionally SCHEMA.NAME"),
          role: str = typer.Argument(..., help="the role that may read it")):
    """Let a role read a maintained view (SELECT on its table; no access to idivm's schema)."""
    _engine().grant(name, role)
    out.print(f"{role} may read {name}")


@app.command()
def refresh(name: str = typer.Argument(..., help="view name, optionally SCHEMA.NAME"),
            engine: Optional[str] = typer.Option(None, "--engine", help=FILL_ENGINE_HELP)):
    """Rebuild a view (e.g. stale after a schema change) and the views that read it, from their definitions."""
    with _spark_progress(engine) as progress:
        rebuilt = _engine().refresh(name, engine=engine, progress=progress)
    for shown in rebuilt:
        out.print(f"rebuilt {shown}")


_DONE = {"create": "created", "replace": "replaced", "drop": "dropped"}


@app.command()
def apply(directory: Path = typer.Argument(..., help="folder of NAME.sql (or SCHEMA.NAME.sql) files, one SELECT "
                                           "each; a leading `-- idivm: strategy=tuple mode=immediate` line sets options"),
          prune: bool = typer.Option(False, "--prune", help="also drop registered views that no file declares"),
          yes: bool = typer.Option(False, "--yes", help="apply the plan (without it, only print it)"),
          engine: Optional[str] = typer.Option(None, "--engine", help=FILL_ENGINE_HELP)):
    """Make the registered views those of a folder: print the plan (create, replace, drop), and apply
    it with --yes. Applying is idempotent: a second run finds nothing to do."""
    idivm = _engine()
    changes = idivm.plan_apply(directory, prune=prune)
    table = Table("action", "view", "why")
    for c in changes:
        table.add_row(c.action, c.view, c.why)
    out.print(table)
    todo = [c for c in changes if c.action != "unchanged"]
    if not todo:
        out.print("nothing to do")
        return
    if not yes:
        out.print(f"{len(todo)} change(s) planned; run again with --yes to apply them")
        return
    with _spark_progress(engine) as progress:
        idivm.apply(changes, engine=engine, progress=progress,
                    done=lambda c: out.print(f"{_DONE[c.action]} {c.view}"))
    out.print(f"applied {len(todo)} change(s)")


@app.command("drop-view")
def drop_view(name: str):
    """Drop a maintained view and the capture no other view needs."""
    _engine().drop_view(name)
    out.print(f"dropped {name}")


@app.command()
def uninstall(yes: bool = typer.Option(False, "--yes", help="do not ask for confirmation")):
    """Remove idivm from the database: every maintained view's table, the capture triggers and logs on
    base tables, the event triggers and the idivm schema (base tables are not touched). Asks first,
    unless --yes; without a terminal to ask on, --yes is required."""
    idivm = _engine()
    if not idivm.installed():
        out.print("idivm is not installed in this database; nothing to do")
        return
    views = [s.view for s in idivm.status()]
    what = f"{len(views)} maintained view(s) ({', '.join(views)})" if views else "no maintained views"
    if not yes:
        if not sys.stdin.isatty():
            raise IdivmError(f"uninstall drops {what} and the idivm schema; run it again with --yes to confirm")
        if not typer.confirm(f"Drop {what}, their capture and the idivm schema?"):
            out.print("nothing was changed")
            raise typer.Exit(1)
    dropped = idivm.uninstall()
    for name in dropped:
        out.print(f"dropped {name}")
    out.print("idivm is uninstalled from this database (base tables untouched)")


server = typer.Typer(no_args_is_help=True, help="The embedded PostgreSQL that idivm runs when no DSN is configured.")
app.add_typer(server, name="server")


@server.command("status")
def server_status():
    """Where the embedded cluster lives, whether it runs, and its DSN. Exit status 1 when it does not run."""
    from .embedded import cluster_status, default_datadir

    state = cluster_status(default_datadir())
    out.print(f"data directory: {state.datadir}")
    out.print(f"state: {state.state}")
    if state.dsn:
        out.print(f"dsn: {state.dsn}")
    if not state.state.startswith("running"):
        raise typer.Exit(1)


@server.command("start")
def server_start():
    """Create (if needed) and start the embedded cluster."""
    from .embedded import default_datadir, start_cluster

    dsn = start_cluster(default_datadir(), quiet=True)
    out.print(f"running; dsn: {dsn}")


@server.command("stop")
def server_stop():
    """Stop the embedded cluster (fast shutdown: open sessions are disconnected, transactions rolled back)."""
    from .embedded import cluster_status, default_datadir, stop_cluster

    datadir = default_datadir()
    if not cluster_status(datadir).state.startswith("running"):
        out.print(f"the embedded cluster in {datadir} is not running")
        return
    stop_cluster(datadir)
    out.print(f"stopped the embedded cluster in {datadir}")


@app.command()
def demo():
    """The paper's devices/parts example (Figure 1), end to end."""
    from .demo import run_demo

    run_demo(_engine(), out)


bench = typer.Typer(no_args_is_help=True, help="Benchmarks reproducing the paper's experiments (Section 7).")
app.add_typer(bench, name="bench")


def _bench_args(ctx: typer.Context) -> list[str]:
    """The benchmark's own options, passed through, plus the global --dsn."""
    args = list(ctx.args)
    if _state.get("dsn") and "--dsn" not in args:
        args += ["--dsn", _state["dsn"]]
    return args


# every argument, --help included, goes to the benchmark's own parser, which documents its options
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


BENCHMARKS = {  # `idivm bench NAME` runs idivm.bench.NAME.main with the arguments after `--`
    "devices": "Figure 12: V and V' on devices/parts/devices_parts",
    "writes": "Single-row INSERT/UPDATE throughput with and without capture",
    "capture": "Write-path cost per statement kind: no view, deferred view, immediate view",
    "social": "Figures 9-10: eight social-analytics views, ID- vs tuple-based",
    "load": "Writers for 60 s under the scheduler: lag percentiles",
    "oltp": "A TPC-C write mix with nine analytical views: throughput kept and freshness, against pg_ivm",
    "higher-order": "The higher-order strategy vs id vs recomputation on Q3, Q4 and V'",
    "spark": "The Spark engine vs the PostgreSQL engine maintaining V",
    "peers": "idivm vs pg_ivm, REFRESH MATERIALIZED VIEW and a hand-written floor, per batch of changes",
    "profile": "One maintenance of V or V', statement by statement: where its time goes",
    "log-size": "A busy view's maintenance while an idle view over the same table keeps log rows",
    "reads": "Reading a maintained view through the relation under its name vs its storage table",
    "recompute": "--recompute auto vs the Δ-script, idivm's recomputation and REFRESH, from one row to every row",
    "dbtoaster": "Coverage: which of DBToaster's test queries each strategy maintains exactly, and why not the rest",
}


def _add_benchmark(name: str, summary: str) -> None:
    def command(ctx: typer.Context):
        from importlib import import_module

        sys.argv[0] = f"idivm bench {name}"  # what argparse prints as the benchmark's usage line
        raise typer.Exit(import_module(f"{__package__}.bench.{name.replace('-', '_')}").main(_bench_args(ctx)))

    bench.command(name, context_settings=PASS_THROUGH,
                  help=f"{summary} (options: `idivm bench {name} --help`).")(command)


for _name, _summary in BENCHMARKS.items():
    _add_benchmark(_name, _summary)


def main() -> None:
    try:
        code = app(standalone_mode=False)  # returns the exit code of typer.Exit instead of raising it
        sys.exit(code if isinstance(code, int) else 0)
    except IdivmError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as e:  # usage errors and database errors: one line
        import sqlalchemy

        if isinstance(e, sqlalchemy.exc.OperationalError):
            print(f"error: cannot reach the database: {first_line(e.orig)}", file=sys.stderr)
            sys.exit(2)
        if isinstance(e, sqlalchemy.exc.DBAPIError):
            print(f"error: database error: {first_line(e.orig)}", file=sys.stderr)
            sys.exit(2)
        if hasattr(e, "show") and hasattr(e, "exit_code"):  # the command-line parser's usage errors
            e.show()
            sys.exit(e.exit_code)
        raise




if __name__ == "__main__":
    main()
