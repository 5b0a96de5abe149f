"""Alembic operations for users' own migrations: `op.register_view(...)` and `op.drop_view(...)`.

    # in env.py, or at the top of a migration
    import idivm.migration_ops  # noqa: F401  (registers the operations)

    def upgrade():
        op.create_table("orders", ...)
        op.register_view("orders_per_day", "SELECT day, count(*) AS n FROM orders GROUP BY day")

    def downgrade():
        op.drop_view("orders_per_day")

They run in the migration's own transaction (operate/declare.py), so a migration that fails
leaves neither its tables nor its views behind. They need a live connection: alembic's offline
mode (`--sql`) cannot compile a view against tables that exist only in the script, and is refused.
"""
from __future__ import annotations

from alembic.operations import MigrateOperation, Operations

from .errors import IdivmError
from .operate.declare import drop_in, register_in


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
    return register_in(_online(operations, "register_view"), operation.name, operation.sql, operation.strategy,
                       operation.mode, operation.replace, operation.if_not_exists)


@Operations.implementation_for(DropViewOp)
def _drop_view(operations: Operations, operation: DropViewOp) -> None:
    drop_in(_online(operations, "drop_view"), operation.name)
