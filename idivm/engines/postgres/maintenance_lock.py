"""The lock that serialises maintainers of one view: PostgreSQL advisory lock (LOCK_CLASS, view id).

The Python executor takes it per session before the maintenance transaction's snapshot
(executor.py), SQL-callable maintenance per transaction or per session (server_maintenance.py),
the scheduler without waiting: all the same lock, so no two of them apply a view's changes at once.
"""
import sqlalchemy as sa
from sqlalchemy.engine import Connection

LOCK_CLASS = 0x1D1B  # advisory lock namespace for view maintenance


def lock_view(conn: Connection, view_id: int) -> None:
    """Take the view's lock until the transaction ends (waiting for a maintainer that holds it)."""
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:c, :v)"), {"c": LOCK_CLASS, "v": view_id})
