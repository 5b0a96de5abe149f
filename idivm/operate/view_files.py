"""`idivm apply DIR`: a folder of `NAME.sql` files is the declared set of maintained views.

Each file holds one SELECT; its name is the view's (`orders_by_day.sql`, or `sales.by_day.sql` for a
view in schema `sales`). Leading comment lines of the form `-- idivm: strategy=tuple mode=immediate`
set what `register-view` takes as options (defaults: strategy id, mode deferred), so the file is the
whole truth about its view, as a dbt model or a migration is.

The plan compares each file with the catalog: a new view is created; a registered one whose query
(as parsed: layout and comments do not count), strategy or mode differs is replaced (rebuilt with the
views over it, operate/rebuild.py); with prune, registered views that no file names are dropped.
Views are created in dependency order (a file that reads another file's view after it), and dropped
readers first.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ..catalog import repository as catalog
from ..errors import IdivmError
from ..frontend.driver import compile_view_sql, parse_one
from ..introspect.provider import PostgresSchema
from ..introspect.session import current_schema
from ..names import display_name, parse_name
from ..strategies.choose import AUTO, choose_strategy
from ..strategies.targets import STRATEGIES
from .dependencies import dependency_order, edges

_HEADER = re.compile(r"\s*--\s*idivm:(.*)$")
_SETTINGS = {"strategy": STRATEGIES, "mode": ("deferred", "immediate")}


@dataclass(frozen=True)
class ViewFile:
    path: Path
    schema: str
    view: str
    sql: str  # without its header lines
    strategy: str = "id"
    mode: str = "deferred"

    @property
    def name(self) -> str:
        return display_name(self.schema, self.view)


@dataclass(frozen=True)
class Change:
    action: str  # create, replace, unchanged or drop
    view: str  # its display name
    why: str
    file: ViewFile | None = None


def read_folder(directory: Path, current_schema: str) -> list[ViewFile]:
    """The folder's view files, each checked for a valid name and header (the error names the file)."""
    if not directory.is_dir():
        raise IdivmError(f"{directory} is not a directory")
    files = []
    seen: dict[tuple[str, str], Path] = {}
    for path in sorted(directory.glob("*.sql")):
        try:
            schema, view = parse_name(path.name[:-len(".sql")])
        except IdivmError:
            raise IdivmError(f"{path}: the file name must be NAME.sql or SCHEMA.NAME.sql") from None
        schema = schema or current_schema
        if (schema, view) in seen:
            raise IdivmError(f"{path} and {seen[(schema, view)]} both define {display_name(schema, view)}")
        seen[(schema, view)] = path
        try:
            text = path.read_text()
        except OSError as e:
            raise IdivmError(f"cannot read {path}: {e.strerror}") from None
        settings, body = _header(path, text)
        files.append(ViewFile(path, schema, view, body, **settings))
    return files


def _header(path: Path, text: str) -> tuple[dict[str, str], str]:
    settings: dict[str, str] = {}
    lines = text.splitlines()
    body_from = 0
    for i, line in enumerate(lines):
        found = _HEADER.match(line)
        if found is None:
            if line.strip() and not line.lstrip().startswith("--"):
                break
            body_from = i + 1
            continue
        body_from = i + 1
        for item in found.group(1).replace(",", " ").split():
            key, _, value = item.partition("=")
            if key not in _SETTINGS:
                raise IdivmError(f"{path}: unknown setting {key!r} in its idivm header; "
                                 f"use {' or '.join(_SETTINGS)}")
            if value not in _SETTINGS[key]:
                raise IdivmError(f"{path}: {key}={value!r}; choose one of: {', '.join(_SETTINGS[key])}")
            settings[key] = value
    return settings, "\n".join(lines[body_from:]).strip()


def normalized(sql: str) -> str:
    """A query's text as sqlglot prints it, unquoted names folded as PostgreSQL folds them and
    without comments: the same for two texts that differ only in layout, case or comments (a
    stored definition that no longer parses compares by its text)."""
    try:
        return normalize_identifiers(parse_one(sql), dialect="postgres").sql("postgres", comments=False)
    except IdivmError:
        return sql


def tables_named(sql: str, current_schema: str) -> set[tuple[str, str]]:
    """The tables and views a query names (not its CTEs), as (schema, name)."""
    tree = parse_one(sql)
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    return {(t.db or current_schema, t.name) for t in tree.find_all(exp.Table)
            if t.db or t.name not in ctes}


def plan_folder(conn: Connection, directory: Path, prune: bool) -> list[Change]:
    """What applying the folder does, in the order it does it: creates and replaces (a view after
    the files' views it reads), then, with prune, drops (readers first), then the unchanged views.
    A declared view whose file reads a view to be pruned is an error naming both."""
    current = current_schema(conn)
    files = read_folder(directory, current)
    registered = {(r.schema_name, r.view_name): r for r in catalog.all_views(conn)}
    declared = {(f.schema, f.view): f for f in files}
    drops = []
    if prune:
        gone = {r.id: r for key, r in registered.items() if key not in declared}
        order = dependency_order(sorted(gone), edges(conn))
        drops = [Change("drop", display_name(gone[v].schema_name, gone[v].view_name), "no file declares it")
                 for v in reversed(order)]
        names = {(r.schema_name, r.view_name) for r in gone.values()}
        for f in files:
            needed = sorted(display_name(*t) for t in tables_named(f.sql, current) & names)
            if needed:
                raise IdivmError(f"cannot prune {', '.join(needed)}: {f.path} reads it")
    changes, unchanged = [], []
    for f in _creation_order(files, current):
        row = registered.get((f.schema, f.view))
        if row is None:
            changes.append(Change("create", f.name, f"new ({f.strategy}, {f.mode})", f))
            continue
        why = _difference(conn, row, f)
        (changes if why else unchanged).append(Change("replace" if why else "unchanged", f.name, why or "as declared", f))
    return changes + drops + unchanged


def _difference(conn: Connection, row: sa.Row, f: ViewFile) -> str:
    """Why a registered view differs from its file ("" when it does not)."""
    return what_differs(conn, row, f.sql, f.strategy, f.mode,
                        lambda: choose_strategy(compile_view_sql(PostgresSchema(conn), f.sql).plan)[0])


def what_differs(conn: Connection, row: sa.Row, sql: str, strategy: str, mode: str,
                 auto_choice: Callable[[], str]) -> str:
    """Why a registered view differs from a declaration ("" when it does not): its query (as
    parsed), its strategy (auto: none if auto chose the registered one, else what auto would
    choose now, `auto_choice()`), or only its mode (the reason then starts with "mode")."""
    if normalized(row.definition) != normalized(sql):
        return "its query changed"
    if strategy == AUTO:
        chosen = any(d.startswith(f"strategy auto: {row.strategy},") for d in catalog.derivations(conn, row.id))
        strategy = row.strategy if chosen else auto_choice()
    if strategy != row.strategy:
        return f"strategy {row.strategy} -> {strategy}"
    if mode != row.mode:
        return f"mode {row.mode} -> {mode}"
    return ""


def _creation_order(files: list[ViewFile], current_schema: str) -> list[ViewFile]:
    """The files, each after the files whose views it reads (a cycle is an error naming it)."""
    keys = {(f.schema, f.view): i for i, f in enumerate(files)}
    reads = {i: {keys[t] for t in tables_named(f.sql, current_schema) if t in keys and keys[t] != i}
             for i, f in enumerate(files)}
    done: list[int] = []
    placed: set[int] = set()
    while len(done) < len(files):
        ready = [i for i in range(len(files)) if i not in placed and reads[i] <= placed]
        if not ready:
            cycle = sorted(files[i].name for i in range(len(files)) if i not in placed)
            raise IdivmError(f"the views {', '.join(cycle)} read each other in a cycle")
        done += ready
        placed |= set(ready)
    return [files[i] for i in done]
