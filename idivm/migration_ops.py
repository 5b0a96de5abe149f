"""Alembic operations for users' own migrations: `op.register_view(...)` and `op.drop_view(...)`.

    # in env.py, or at the top of a migration
    import idivm.migration_ops  # noqa: F401  (registers the operations)

    def upgrade():
        op.create_table("orders", ...)
        op.register_view("orders_per_day", "SELECT day, count(*) AS n FROM orders GROUP BY day")

    def downgrade():
        op.drop_view("orders_per_day")

They run in the migration's own transaction (operate/registration.py), so a migration that fails
leaves neither its tables nor its views behind. They need a live connection: alembic's offline
mode (`--sql`) cannot compile a view against tables that exist only in the script, and is refused.
"""
from __future__ import annotations

from alembic.operations import MigrateOperation, Operations

from .catalog.migrate import catalog_installed
from .errors import IdivmError, UnknownObject
from .operate.install import install_or_upgrade
from .operate.registration import Request, drop, register
from .operate.transactions import CallerTransaction
from .catalog import repository as catalog
from .names import parse_name
from .engines.postgres.materialize import create_as


@Operations.register_operation("register_view")
class RegisterViewOp(MigrateOperation):
    """Register a maintained view (as `idivm register-view`; replace / if_not_exists likewise)."""

    def __init__(self, name: str, sql: str, strategy: str = "id", mode: str = "deferred",
                 replace: bool = False, if_not_exists: bool = False):
        self.name, self.sql, self.strategy, self.mode = name, sql, strategy, mode
        self.replace, self.if_not_exists = replace, if_not_exists

    @classmethod
    def register_view(cls, operations: Operations, name: str, sql: str, **options) -> str:
        return operations.invoke(cls(name, sql, **options))

    def reverse(self) -> "DropViewOp":
        return DropViewOp(self.name, sql=self.sql, strategy=self.strategy, mode=self.mode)


@Operations.register_operation("drop_view")
class DropViewOp(MigrateOperation):
    """Drop a maintained view (as `idivm drop-view`). Giving its sql makes the operation reversible."""

    def __init__(self, name: str, sql: str | None = None, strategy: str = "id", mode: str = "deferred"):
        self.name, self.sql, self.strategy, self.mode = name, sql, strategy, mode

    @classmethod
    def drop_view(cls, operations: Operations, name: str, **options) -> None:
        return operations.invoke(cls(name, **options))

    def reverse(self) -> RegisterViewOp:
        if self.sql is None:
            raise ValueError(f"drop_view({self.name!r}) is reversible only when given the view's sql")
        return RegisterViewOp(self.name, self.sql, strategy=self.strategy, mode=self.mode)


def _online(operations: Operations, what: str):
    if operations.migration_context.as_sql:
        raise IdivmError(f"op.{what} needs a database connection; alembic's offline (--sql) mode cannot run it")
    return operations.get_bind()


@Operations.implementation_for(RegisterViewOp)
def _register_view(operations: Operations, operation: RegisterViewOp) -> str:
    conn = _online(operations, "register_view")
    install_or_upgrade(conn)
    return register(CallerTransaction(conn), Request(operation.name, operation.sql, operation.strategy, operation.mode,
                                                     replace=operation.replace,
                                                     if_not_exists=operation.if_not_exists), create_as)


@Operations.implementation_for(DropViewOp)
def _drop_view(operations: Operations, operation: DropViewOp) -> None:
    conn = _online(operations, "drop_view")
    row = catalog.view_by_name(conn, *parse_name(operation.name)) if catalog_installed(conn) else None
    if row is None:
        raise UnknownObject(f'no maintained view named "{operation.name}"')
    drop(conn, row, operation.name)
