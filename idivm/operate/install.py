"""Installing, upgrading and removing idivm in a database (`idivm init`, the alembic operations of
migration_ops.py, which run it inside the user's migration transaction, and `idivm uninstall`)."""
from __future__ import annotations

from sqlalchemy.engine import Connection

from ..capture import drop_capture
from ..capture.partitions import install_sync_function
from ..capture.schema_changes import drop_event_triggers, event_triggers_installed, install_event_triggers
from ..capture.triggers import reinstall_functions
from ..catalog import repository as catalog
from ..catalog.migrate import (HEAD, catalog_installed, catalog_revision, drop_catalog, lock_installation,
                              upgrade_catalog)
from ..engines.postgres.view_relation import install_refuse_function
from ..engines.postgres.server_maintenance import install_all_view_functions, install_functions
from ..names import display_name
from .dependencies import dependency_order, edges
from .policy import notify_threshold
from .registry import drop_locked, sync_immediate

def install_or_upgrade(conn: Connection) -> str | None:
    """Bring the catalog to this idivm's revision, with the server-side functions, capture and
    immediate triggers as this idivm writes them (idempotent; in the caller's transaction).
    Returns the revision the database was at (None: idivm was not installed)."""
    lock_installation(conn)
    before = catalog_revision(conn)
    if before != HEAD:
        upgrade_catalog(conn)
    if before != HEAD:  # server-side functions as this idivm writes them
        install_functions(conn)  # maintenance callable from SQL, and the log pruning every maintainer calls
        install_sync_function(conn)
        install_refuse_function(conn)
    if before is not None and before != HEAD:  # what registration compiled, as this idivm compiles it
        reinstall_functions(conn, notify_threshold)  # capture functions
        sync_immediate(conn)  # immediate triggers
        install_all_view_functions(conn)  # each view's maintenance function, from its stored program
    if before != HEAD or not event_triggers_installed(conn):
        install_event_triggers(conn)  # needs a superuser; without one schema changes go unnoticed
    return before


def uninstall(conn: Connection) -> list[str]:
    """Remove idivm from the database in the caller's transaction: every maintained view (its table,
    caches and maps; readers first), the capture triggers and logs on base tables, the immediate
    triggers, the event triggers, and the `idivm` schema. Base tables and their rows are not
    touched. Returns the dropped views. Fails as a whole (nothing dropped) when something of the
    user's depends on a view's table, e.g. a PostgreSQL view over it."""
    lock_installation(conn)
    dropped: list[str] = []
    if catalog_installed(conn):
        drop_event_triggers(conn)  # first: they would look up every table dropped below in the catalog
        rows = {r.id: r for r in catalog.all_views(conn)}
        for vid in reversed(dependency_order(sorted(rows), edges(conn))):
            drop_locked(conn, rows[vid])
            dropped.append(display_name(rows[vid].schema_name, rows[vid].view_name))
        for cid in sorted(catalog.captured_ids(conn)):
            drop_capture(conn, cid)
    else:
        drop_event_triggers(conn)
    drop_catalog(conn)
    return dropped
