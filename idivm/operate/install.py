"""Installing and upgrading idivm in a database (`idivm init`, and the alembic operations of
migration_ops.py, which run it inside the user's migration transaction)."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..capture.partitions import install_sync_function
from ..capture.schema_changes import event_triggers_installed, install_event_triggers
from ..capture.triggers import reinstall_functions
from ..catalog.migrate import HEAD, catalog_revision, upgrade_catalog
from .policy import notify_threshold
from .registry import compile_missing_programs, sync_immediate

INSTALL_LOCK = 7411  # advisory lock class: one installer or upgrader at a time


def install_or_upgrade(conn: Connection) -> None:
    """Bring the catalog to this idivm's revision, with the server-side functions, capture and
    immediate triggers as this idivm writes them (idempotent; in the caller's transaction)."""
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:c)"), {"c": INSTALL_LOCK})
    before = catalog_revision(conn)
    upgrade_catalog(conn)
    if before != HEAD:
        install_sync_function(conn)  # server-side helpers as this idivm writes them
    if before is not None and before != HEAD:
        reinstall_functions(conn, notify_threshold)  # capture functions as this idivm writes them
        sync_immediate(conn)  # immediate triggers likewise
        compile_missing_programs(conn)
    if before != HEAD or not event_triggers_installed(conn):
        install_event_triggers(conn)  # needs a superuser; without one schema changes go unnoticed
