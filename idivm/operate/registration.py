"""The one path from "maintain this query as that view" to a stored, filled view, and from "drop it"
to the result. The API (`Engine.register_view`, `drop_view`, `apply`), and through it the CLI, and
the alembic operations (migration_ops.py) all call `register` and `drop` here; they differ only in
where the transactions come from (transactions.py).

A replace of a view whose query and strategy are as registered, and whose mode alone differs,
switches the mode in place where the transaction is REPEATABLE READ (catching up to immediate needs
one snapshot for the log window and the tables; mode_switch.py); in a migration's transaction it
rebuilds the view instead (rebuild.py), which is as exact and needs no such snapshot.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog import repository as catalog
from ..engines.postgres.materialize import Fill
from ..errors import IdivmError
from ..introspect.session import current_schema
from ..names import display_name, parse_name
from ..strategies.targets import STRATEGIES
from .compile_in import compile_in
from .dependencies import dependents
from .mode_switch import switch_mode
from .rebuild import query_errors, rebuild
from .registry import MODES, drop_locked, make_immediate_locked, register_locked
from .transactions import Transactions
from .view_files import what_differs


@dataclass(frozen=True)
class Request:
    """What a user asked to register (the CLI's register-view, the API's register_view, a file of
    `idivm apply`, `op.register_view`)."""
    name: str
    sql: str
    strategy: str = "id"
    mode: str = "deferred"
    minimized: bool = True  # False skips minimization (only useful to test that it preserves results)
    replace: bool = False
    if_not_exists: bool = False

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise IdivmError(f"unknown strategy {self.strategy!r}; choose one of: {', '.join(STRATEGIES)}")
        check_mode(self.mode)
        if self.replace and self.if_not_exists:
            raise IdivmError("choose one of --replace and --if-not-exists")


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise IdivmError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")


def register(tx: Transactions, request: Request, fill: Fill) -> str:
    """Compile, create and fill a maintained view and install capture on its base tables. Returns
    "created", or, for a name already registered, "exists" (if_not_exists), "unchanged" (replace:
    same query as parsed, strategy and mode, and not stale) or "replaced" (replace: rebuilt with the
    views over it, or only its mode switched)."""
    request.check()
    schema, view = parse_name(request.name)
    with tx.reading() as conn:
        schema = schema or current_schema(conn)
        # compiled before any lock (a refusal holds nothing), also where a view of that name exists:
        # the query must still compile under the strategy asked for
        compiled = compile_in(conn, request.sql, request.strategy, request.minimized)
        existing = catalog.view_by_name(conn, schema, view) if (request.replace or request.if_not_exists) else None
        why = ""  # what a replace changes; nothing: the view is left as it is
        if existing is not None and not request.if_not_exists:
            why = (what_differs(conn, existing, request.sql, request.strategy, request.mode, lambda: compiled.strategy)
                   if request.minimized else "unminimized")
            why = why or ("stale" if existing.stale_reason is not None else "")  # a stale view is rebuilt
    if existing is not None:
        if request.if_not_exists:
            return "exists"
        if not why:
            return "unchanged"
        if why.startswith("mode") and tx.snapshot_isolated:
            switch_mode(tx, existing, request.mode)
        else:
            rebuild(tx, existing, fill, f'replace "{display_name(schema, view)}"',
                    {existing.id: (request.sql, request.strategy, request.mode, request.minimized)})
        return "replaced"
    with query_errors(), tx.writers_blocked(set(compiled.tables()), [(schema, view)]) as conn:
        register_locked(conn, schema, view, request.sql, request.strategy, request.minimized, fill, compiled)
        if request.mode == "immediate":
            make_immediate_locked(conn, schema, view)
    return "created"


def drop(conn: Connection, row: sa.Row, name: str) -> None:
    """Drop a maintained view (`name` as the user wrote it) that no other maintained view reads, in the
    caller's transaction."""
    readers = dependents(conn, row.id)
    if readers:
        raise IdivmError(f'cannot drop "{name}": the maintained view(s) {", ".join(readers)} read it; drop them first')
    drop_locked(conn, row)


