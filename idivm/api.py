"""The Python API: ``idivm.connect(dsn) -> Engine`` (README.md, docs/architecture.md)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .capture.schema_changes import event_triggers_installed
from .capture.triggers import reinstall_functions
from .catalog import repository as catalog
from .catalog.migrate import HEAD, catalog_installed, catalog_revision
from .dsn import resolve_dsn, sqlalchemy_url
from .errors import DatabaseUnavailable, IdivmError, Stale, UnknownObject, first_line
from .frontend.driver import parse_one
from .engines import AUTO, ENGINES
from .engines.postgres.grants import grant_select
from .engines.postgres.materialize import create_as, differences
from .engines.postgres.executor import MaintenanceReport, maintain_view
from .introspect.session import current_database, role_exists
from .operate.engine_choice import EngineChoice, choice_for
from .operate.dependencies import dependency_order, edges
from .operate.explain import explain_query, explain_unminimized, explain_view
from .operate.policy import DEFAULT, RECOMPUTE, Policy, notify_threshold, policy_of
from .operate.view_files import Change, plan_folder
from .operate.install import install_or_upgrade, uninstall
from .operate.mode_switch import switch_mode
from .operate.rebuild import query_errors, rebuild
from .operate.registration import Request, check_mode, drop, register
from .operate.transactions import OwnTransactions
from .operate.status import ViewStatus, view_statuses
from .names import display_name, parse_name

@dataclass
class VerifyResult:
    view: str
    ok: bool
    missing: list[tuple] = field(default_factory=list)  # rows the query has and the view lacks
    extra: list[tuple] = field(default_factory=list)  # rows the view has and the query lacks
    columns: list[str] = field(default_factory=list)  # what the rows' values are

    def __bool__(self) -> bool:
        return self.ok


def _sql_text(query: Any) -> str:
    """SQL text from a string or a SQLAlchemy Select (compiled for PostgreSQL with literal values)."""
    if isinstance(query, str):
        return query
    if hasattr(query, "compile"):
        from sqlalchemy.dialects import postgresql

        return str(query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    raise IdivmError(f"a view is defined by SQL text or a SQLAlchemy Select, got {type(query).__name__}")


class Engine:
    """A connection to one database holding base tables, maintained views and idivm's catalog."""

    def __init__(self, dsn: str, source: str = "--dsn"):
        self.dsn = dsn
        self.dsn_source = source
        # LIFO: the connection just returned serves the next call, so a loop over views (or a lookup
        # then the maintenance) stays on one session, whose kept plans and i-diff tables each
        # maintenance reuses (docs/maintenance.md); first-in-first-out handed every call the pool's
        # least recently used session, which planned again (bench_peers, docs/benchmarks.md)
        self.sa = sa.create_engine(sqlalchemy_url(dsn), pool_pre_ping=True, pool_use_lifo=True)
        sa.event.listen(self.sa, "handle_error", self._unreachable)
        self._catalog_ok = False  # checked once per Engine: installed and at this idivm's revision

    def _unreachable(self, context) -> None:
        """A failure to connect becomes one IdivmError naming the database and where its DSN came from."""
        if context.connection is None and isinstance(context.original_exception, psycopg.OperationalError):
            raise DatabaseUnavailable(f"cannot reach the database ({self.dsn_source}): "
                                      f"{first_line(context.original_exception)}") from context.original_exception

    def close(self) -> None:
        self.sa.dispose()

    # -- catalog ---------------------------------------------------------------------------
    def init(self) -> str:
        """Install or upgrade the catalog schema (idempotent); returns what it did, in a line."""
        with self.sa.begin() as conn:
            before = install_or_upgrade(conn)
            database = current_database(conn)
            watching = event_triggers_installed(conn)
        self._catalog_ok = True
        if before is None:
            return (f'installed idivm in database "{database}": its catalog (schema idivm, revision {HEAD}) and the '
                    "functions that maintain views from SQL" + (
                        ", and event triggers that notice schema changes" if watching else
                        "; schema changes of base tables go unnoticed: installing the event triggers that notice "
                        "them needs a superuser (run `idivm init` as one)"))
        if before != HEAD:
            return f'upgraded idivm in database "{database}" from catalog revision {before} to {HEAD}'
        return f'idivm\'s catalog in database "{database}" is up to date (revision {HEAD})'


    def installed(self) -> bool:
        """Whether idivm's catalog is in this database."""
        with self.sa.connect() as conn:
            return catalog_installed(conn)

    def uninstall(self) -> list[str]:
        """Remove idivm from the database in one transaction (operate/install.py): every maintained
        view's table, caches and maps, the capture and immediate triggers and logs, the event
        triggers, the `idivm` schema; base tables are not touched. Returns the dropped views. If
        something of the user's depends on a view's table, the error names it and nothing changes."""
        try:
            with self.sa.begin() as conn:
                dropped = uninstall(conn)
        except (sa.exc.DBAPIError, psycopg.Error) as e:
            cause = getattr(e, "orig", e)
            if isinstance(cause, psycopg.errors.DependentObjectsStillExist):
                raise IdivmError(f"cannot uninstall, nothing was changed: {first_line(cause)} "
                                 f"({first_line(cause.diag.message_detail or '')})") from None
            raise
        self._catalog_ok = False
        return dropped

    def _installed(self) -> None:
        """idivm installed (or upgraded) here unless this engine saw it up to date already."""
        if not self._catalog_ok:
            self.init()

    def _require_catalog(self, conn: Connection) -> None:
        if self._catalog_ok:
            return
        if not catalog_installed(conn):
            raise IdivmError("idivm's catalog is not installed in this database; run `idivm init` first")
        revision = catalog_revision(conn)
        if revision != HEAD:
            raise IdivmError(f"idivm's catalog is at revision {revision}, this idivm needs {HEAD}; "
                             "run `idivm init` to upgrade it")
        self._catalog_ok = True

    def _view(self, conn: Connection, name: str, columns: str = "*") -> sa.Row:
        self._require_catalog(conn)
        schema, view = parse_name(name)
        row = catalog.view_by_name(conn, schema, view, columns)  # schema None: the current schema
        if row is None:
            raise UnknownObject(f'no maintained view named "{name}"; `idivm list` shows the registered views')
        return row

    # -- registration ----------------------------------------------------------------------
    def register_view(self, name: str, query: Any, strategy: str = "id", minimized: bool = True,
                      mode: str = "deferred", engine: str | None = None, progress=None,
                      replace: bool = False, if_not_exists: bool = False) -> str:
        """Compile, create and materialize a maintained view; install capture on its base tables.
        Returns what was done: "created", or, for a name already registered, "exists"
        (if_not_exists: left as it is), "unchanged" (replace: same query, strategy and mode) or
        "replaced" (replace: rebuilt with the views over it, in one transaction; see `replace`).

        mode="immediate" maintains it inside every writing transaction (engines/postgres/immediate.py).
        minimized=False skips pass 4 (only useful to test that minimization preserves results).
        engine="spark" computes the initial contents on Spark (docs/spark.md); `progress(tasks done,
        tasks known, rows copied)` then hears of Spark's progress."""
        return register(self._transactions(), Request(name, _sql_text(query), strategy, mode, minimized, replace,
                                                      if_not_exists), self._fill(engine, progress))

    def _transactions(self) -> OwnTransactions:
        self._installed()
        return OwnTransactions(self.sa)

    def plan_apply(self, directory, prune: bool = False) -> list[Change]:
        """What `apply` would do to make the registered views those of a folder of NAME.sql files
        (operate/view_files.py), in order; nothing is changed."""
        from pathlib import Path

        self._installed()
        with self.sa.connect() as conn:
            return plan_folder(conn, Path(directory), prune)

    def apply(self, changes: list[Change], engine: str | None = None, progress=None,
              done=None) -> None:
        """Carry out a plan from plan_apply. Each view is created, replaced (with the views over it,
        the declared ones as their files say) or dropped in its own transaction; the first failure
        stops the run with an error naming the view, and what was applied before it stays (applying
        the folder again goes on from there). `done(change)` hears of each change once made."""
        declared = {c.view: c.file for c in changes if c.file is not None}
        rebuilt: set[str] = set()
        for change in changes:
            try:
                if change.action == "create":
                    f = change.file
                    self.register_view(change.view, f.sql, strategy=f.strategy, mode=f.mode, engine=engine,
                                       progress=progress)
                elif change.action == "replace" and change.view not in rebuilt:
                    rebuilt |= set(self._apply_replace(change.view, declared, engine, progress))
                elif change.action == "drop":
                    self.drop_view(change.view)
            except IdivmError as e:
                raise IdivmError(f"{change.action} {change.view}: {e}") from None
            if done is not None and change.action != "unchanged":
                done(change)

    def _apply_replace(self, name: str, declared: dict, engine: str | None, progress) -> list[str]:
        """Rebuild a view and the views over it, each declared one as its file says."""
        with self.sa.connect() as conn:
            row = self._view(conn, name)
            new = {}
            for r in catalog.all_views(conn):
                f = declared.get(display_name(r.schema_name, r.view_name))
                if f is not None:
                    new[r.id] = (f.sql, f.strategy, f.mode, True)
        return self._rebuild(row, engine, progress, f'replace "{name}"', new=new)

    # -- maintenance -----------------------------------------------------------------------
    def _view_names(self, names: tuple[str, ...] | list[str]) -> list[tuple[int, str]]:
        return [(vid, shown) for vid, shown, _ in self._views_to_maintain(names)[0]]

    def _views_to_maintain(self, names: tuple[str, ...] | list[str]) -> tuple[list[tuple[int, str, str | None]], list[int]]:
        """The named views (all if none) as (id, display name, engine policy), and their ids in
        maintenance order (a view after the views it reads; one view needs no order). Read outside
        a transaction: no BEGIN and ROLLBACK around a lookup that every maintenance makes."""
        with self.sa.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if names:
                rows = [self._view(conn, n, catalog.NAMES_AND_ENGINE) for n in names]
            else:
                self._require_catalog(conn)
                rows = catalog.all_views(conn, columns=catalog.NAMES_AND_ENGINE)
            ids = list(dict.fromkeys(r.id for r in rows))
            order = dependency_order(ids, edges(conn)) if len(ids) > 1 else ids
        return [(r.id, display_name(r.schema_name, r.view_name), r.policy_engine) for r in rows], order

    def maintain(self, *names: str, keep_going: bool | None = None,
                 engine: str | None = None) -> list[MaintenanceReport] | MaintenanceReport:
        """Bring the named views (all if none) up to date; one transaction per view, a view after the
        maintained views it reads (so a change reaches the top of a chain in one call).

        Each view is maintained independently: with keep_going (the default when maintaining all
        views, as `idivm maintain` always does) a view that fails is rolled back and reported
        (report.failed names the cause in one line) and the others go on; without it (the default
        for named views) the first failure is raised. A database that cannot be reached is always
        raised.

        `engine` computes the diffs: "postgres" (the default), or "spark" (docs/spark.md); the
        environment variable IDIVM_ENGINE sets the default. Every report names the engine it used."""
        if engine is not None:
            resolve_engine(engine, maintenance=True)  # a wrong name fails before any view is touched
        found, order = self._views_to_maintain(names)
        views = {vid: shown for vid, shown, _ in found}
        policies = {vid: policy for vid, _, policy in found}
        if keep_going is None:
            keep_going = not names
        reports = []
        stages: dict[str, Any] = {}
        for vid in order:
            try:
                used, chosen = self.maintenance_engine(vid, engine or policies.get(vid))
                if used not in stages:
                    stages[used] = self.maintenance_stage(used)
                report = maintain_view(self.sa, vid, views[vid], stage=stages[used])
                report.chosen = chosen
                reports.append(report)
            except DatabaseUnavailable:
                raise
            except Stale as e:
                if not keep_going:
                    raise
                reports.append(MaintenanceReport(view=views[vid], skipped=str(e), stale=True))  # the others go on
            except Exception as e:
                if not keep_going:
                    raise
                cause = first_line(e.orig) if isinstance(e, sa.exc.DBAPIError) else first_line(e)
                reports.append(MaintenanceReport(view=views[vid], failed=cause))
        return reports[0] if len(names) == 1 else reports

    def maintenance_engine(self, view_id: int, engine: str | None) -> tuple[str, str | None]:
        """The engine that maintains a view now: `engine` (the one the run names, else the view's
        engine policy: callers know both), else IDIVM_ENGINE, else postgres; `auto` is resolved by
        the cost model (operate/engine_choice.py), whose choice is returned as the second item."""
        name = resolve_engine(engine, maintenance=True)
        if name != AUTO:
            return name, None
        with self.sa.connect() as conn:
            choice = choice_for(conn, catalog.view_by_id(conn, view_id), self._spark_settings(check=False))
        return choice.engine, f"auto: {choice}"

    def engine_choice(self, name: str) -> EngineChoice:
        """What `--engine auto` would choose for the view's waiting batch, with its estimates."""
        with self.sa.connect() as conn:
            return choice_for(conn, self._view(conn, name), self._spark_settings(check=False))

    def maintenance_stage(self, engine: str | None):
        """What an engine computes of a maintenance between its two halves (engines/postgres/executor.Stage):
        None for PostgreSQL, which computes it all."""
        if resolve_engine(engine) == "postgres":
            return None
        from .engines.spark.executor import spark_stage

        return spark_stage(self._spark_settings())

    def _fill(self, engine: str | None, progress=None):
        """How an engine creates and fills a view's tables (engines/postgres/materialize.py)."""
        if resolve_engine(engine) == "postgres":
            return create_as
        from .engines.spark.materialize import SparkFill

        return SparkFill(self._spark_settings(), progress)

    def _spark_settings(self, check: bool = True):
        from .engines.spark.settings import SparkSettings

        settings = SparkSettings.from_env(self.dsn)
        if check:
            settings.check()
        return settings

    def verify(self, name: str) -> VerifyResult:
        """Maintain, then compare the view with its recomputed query in the same snapshot."""
        [(vid, shown)] = self._view_names([name])
        result = VerifyResult(view=shown, ok=True)

        def compare(conn: Connection) -> None:
            row = catalog.view_by_id(conn, vid)
            result.columns = list(row.output_columns)
            result.missing, result.extra = differences(conn, row.schema_name, row.view_name, row.output_columns,
                                                       parse_one(row.definition))
            result.ok = not result.missing and not result.extra

        maintain_view(self.sa, vid, shown, before_commit=compare)
        return result

    # -- inspection ------------------------------------------------------------------------
    def explain(self, name: str | None = None, unminimized: bool = False, sql: Any = None,
                strategy: str = "id") -> str:
        """The plan, i-diff schemas, rule DAG and Δ-script of a view.

        unminimized=True shows the rule DAG and script as they are before pass 4, compiled afresh
        from the stored definition (the stored, minimized script is what maintenance runs).
        sql=... (SQL text or a SQLAlchemy Select) instead of a name: a dry run, what registering
        that query with `strategy` would create; nothing is created or kept."""
        if (name is None) == (sql is None):
            raise IdivmError("explain a registered view by its name, or a query that is not registered with sql=...")
        if sql is not None:
            Request("(the view)", _sql_text(sql), strategy).check()
            with self.sa.connect() as conn, query_errors():
                try:
                    return explain_query(conn, _sql_text(sql), strategy)
                finally:
                    conn.rollback()  # it wrote nothing: end the transaction its reads began
        with self.sa.connect() as conn:
            row = self._view(conn, name)
            if unminimized:
                return explain_unminimized(conn, row)
            return explain_view(conn, row, self._spark_settings(check=False))

    def strategy_of(self, name: str) -> str:
        """The strategy a registered view is maintained by (what `auto` chose for it)."""
        with self.sa.connect() as conn:
            return self._view(conn, name).strategy

    def list(self) -> list[dict]:
        return [{
            "view": s.view, "strategy": s.strategy, "pending": s.state.pending,
            "last_maintained_at": s.state.last_maintained_at, "last_duration_ms": s.last_duration_ms,
            "last_changes": s.last_changes, "stale": s.stale_reason, "storage": s.storage.as_json(),
        } for s in self.status(storage=True)]

    def status(self, default: Policy = DEFAULT, storage: bool = False) -> list[ViewStatus]:
        """Per view: strategy, mode, policy, pending changes and the oldest one's age, last maintenance,
        consecutive failures, staleness, and whether the scheduler would maintain it now; with
        storage, the bytes its table, caches and share of the logs take (`.storage`)."""
        with self.sa.connect() as conn:
            self._require_catalog(conn)
            return view_statuses(conn, default, storage=storage)

    def watches_schema_changes(self) -> bool:
        """Whether the event triggers that mark views stale are installed (init needs a superuser)."""
        with self.sa.connect() as conn:
            return event_triggers_installed(conn)

    def set_policy(self, name: str, every: float | None = None, max_pending: int | None = None,
                   max_staleness: float | None = None, reset: bool = False, engine: str | None = None,
                   recompute: str | None = None) -> Policy:
        """Store a view's maintenance policy (only the given settings change; reset=True first clears
        all of them back to the defaults). `engine` (postgres, spark or auto) maintains the view when
        a run names no engine; `recompute` (auto, never or always) says when a deferred maintenance
        recomputes the view instead of running its Δ-script (auto: when that is estimated cheaper,
        docs/maintenance.md). Returns the effective policy."""
        if engine is not None:
            resolve_engine(engine, maintenance=True)
        if recompute is not None and recompute not in RECOMPUTE:
            raise IdivmError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
        for label, value in (("--every", every), ("--max-staleness", max_staleness)):
            if value is not None and not value > 0:
                raise IdivmError(f"{label} must be a positive number of seconds, got {value}")
        if max_pending is not None and max_pending < 1:
            raise IdivmError(f"--max-pending must be at least 1, got {max_pending}")
        with self.sa.begin() as conn:
            row = self._view(conn, name)
            catalog.set_policy(conn, row.id, {"policy_every": every, "policy_max_pending": max_pending,
                                              "policy_max_staleness": max_staleness, "policy_engine": engine,
                                              "policy_recompute": recompute},
                               reset=reset)
            # the NOTIFY threshold follows max_pending
            reinstall_functions(conn, notify_threshold, catalog.input_ids(conn, row.id))
            return policy_of(catalog.view_by_id(conn, row.id))

    def set_mode(self, name: str, mode: str) -> None:
        """Switch a view between deferred and immediate maintenance, in one transaction that holds its
        base tables against writers: to immediate, the pending changes are applied first; to
        deferred, everything committed so far counts as consumed."""
        check_mode(mode)
        with self.sa.connect() as conn:
            row = self._view(conn, name)
        if row.mode != mode:
            switch_mode(self._transactions(), row, mode)

    def grant(self, name: str, role: str) -> None:
        """Let a role read a maintained view (SELECT on its table, nothing else: not the catalog, the
        caches or the logs, which it does not need to read the view)."""
        with self.sa.begin() as conn:
            row = self._view(conn, name)
            if not role_exists(conn, role):
                raise UnknownObject(f'role "{role}" does not exist')
            grant_select(conn, row.schema_name, row.view_name, role)

    def drop_view(self, name: str) -> None:
        """Drop the maintained table, its script, and capture no other view needs."""
        with self.sa.begin() as conn:
            drop(conn, self._view(conn, name), name)

    def refresh(self, name: str, engine: str | None = None, progress=None) -> list[str]:
        """Rebuild a view from its stored definition (after a schema change made it stale, or at will),
        together with the views that read it, keeping name, strategy, mode, policy and grants. One
        transaction: if a definition no longer compiles against the tables as they are now, the
        error names it and nothing changes. Returns the rebuilt views, inputs first. `engine` and
        `progress` as for register_view."""
        with self.sa.connect() as conn:
            row = self._view(conn, name)
        return self._rebuild(row, engine, progress, f'refresh "{name}"')

    def _rebuild(self, row: sa.Row, engine: str | None, progress, verb: str, new: dict | None = None) -> list[str]:
        """rebuild_locked (operate/rebuild.py) of a view and the views over it, in one transaction
        that holds their base tables against writers."""
        return rebuild(self._transactions(), row, self._fill(engine, progress), verb, new)


def resolve_engine(engine: str | None, maintenance: bool = False) -> str:
    """The engine a run uses: the one named, else IDIVM_ENGINE, else postgres (maintenance may also
    name auto)."""
    engine = engine or os.environ.get("IDIVM_ENGINE") or "postgres"
    if engine == AUTO and not maintenance:
        return "postgres"  # filling a view: auto has no batch to weigh, and PostgreSQL fills in place
    choices = ENGINES + ((AUTO,) if maintenance else ())
    if engine not in choices:
        raise IdivmError(f"unknown engine {engine!r}: choose {', '.join(choices[:-1])} or {choices[-1]}")
    return engine


def connect(dsn: str | None = None, source: str = "connect(dsn)") -> Engine:
    """Connect with DSN resolution: argument > IDIVM_DSN > DATABASE_URL > embedded default.
    `source` is how messages name an explicit dsn (the CLI passes "--dsn")."""
    resolved, source = resolve_dsn(dsn, source=source)
    return Engine(resolved, source)
