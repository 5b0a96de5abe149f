"""Installing, upgrading and removing idivm in a database (`idivm init`, the alembic operations of
migration_ops.py, which run it inside the user's migration transaction, and `idivm uninstall`)."""
from __future__ import annotations

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..capture.partitions import install_sync_function
from ..capture import drop_capture
from ..capture.schema_changes import drop_event_triggers, event_triggers_installed, install_event_triggers
from ..catalog import repository as catalog
from ..capture.triggers import reinstall_functions
from ..catalog.migrate import HEAD, catalog_installed, catalog_revision, upgrade_catalog
from ..engines.postgres.materialize import create_as
from ..engines.postgres.server_maintenance import install_all_view_functions, install_functions
from ..errors import IdivmError, first_line
from ..names import display_name
from ..sqltext import qualified, run
from .dependencies import dependency_order, edges
from .policy import notify_threshold
from .facade import install_refuse_function
from .rebuild import rebuild_locked, rebuild_plan
from .registry import compile_missing_programs, drop_locked, sync_immediate

INSTALL_LOCK = 7411  # advisory lock class: one installer or upgrader at a time


def install_or_upgrade(conn: Connection) -> str | None:
    """Bring the catalog to this idivm's revision, with the server-side functions, capture and
    immediate triggers as this idivm writes them (idempotent; in the caller's transaction).
    Returns the revision the database was at (None: idivm was not installed)."""
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:c)"), {"c": INSTALL_LOCK})
    before = catalog_revision(conn)
    upgrade_catalog(conn)
    if before != HEAD:
        install_functions(conn)  # maintenance callable from SQL, and the log pruning every maintainer calls
    if before != HEAD:
        install_sync_function(conn)  # server-side helpers as this idivm writes them
        install_refuse_function(conn)
    if before is not None and before != HEAD:
        reinstall_functions(conn, notify_threshold)  # capture functions as this idivm writes them
        sync_immediate(conn)  # immediate triggers likewise
        compile_missing_programs(conn)
    if before != HEAD or not event_triggers_installed(conn):
        install_event_triggers(conn)  # needs a superuser; without one schema changes go unnoticed
    if before is not None and before < STORAGE_REVISION:
        move_to_storage(conn)
    if before is not None and before < TYPE_NAMES_REVISION:
        install_all_view_functions(conn)  # as this idivm compiles them (kind guards; views before idivm.maintain(...))
    return before


TYPE_NAMES_REVISION = "0012"  # type names independent of the search path; view functions compiled again on upgrade to it


STORAGE_REVISION = "0009"  # views stored in idivm's schema, read through a facade


def move_to_storage(conn: Connection) -> list[str]:
    """Rebuild the views registered before revision 0009, still tables under their own names, into
    storage tables read through facades (operate/facade.py), in the caller's transaction, each with
    the views over it (operate/rebuild.py), holding their base tables against writers meanwhile.
    A view whose definition no longer compiles is marked stale instead (`idivm refresh` moves it
    once its tables are fixed). Returns the rebuilt views."""
    rows = {r.id: r for r in catalog.all_views(conn)}
    done: set[int] = set()
    moved: list[str] = []
    for vid in dependency_order(sorted(rows), edges(conn)):
        row = rows[vid]
        kind = conn.execute(sa.text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:q)"),
                            {"q": qualified(row.schema_name, row.view_name)}).scalar()
        if vid in done or kind not in ("r", "p"):
            continue
        name = display_name(row.schema_name, row.view_name)
        try:
            with conn.begin_nested():
                chain, wanted, tables = rebuild_plan(conn, row, f'move "{name}" to its storage table')
                if tables:
                    run(conn, f"LOCK TABLE {', '.join(qualified(s, t) for s, t in sorted(tables))} "
                              "IN SHARE ROW EXCLUSIVE MODE")
                rebuild_locked(conn, row, chain, wanted, create_as, f'move "{name}" to its storage table')
        except (IdivmError, psycopg.Error, sa.exc.DBAPIError) as e:
            catalog.mark_stale(conn, vid, f"this idivm stores views in its schema and could not move it "
                                          f"({first_line(e)}); `idivm refresh` it")
            continue
        done |= {r.id for r in chain}
        moved += [display_name(r.schema_name, r.view_name) for r in chain]
    return moved


def uninstall(conn: Connection) -> list[str]:
    """Remove idivm from the database in the caller's transaction: every maintained view (its table,
    caches and maps; readers first), the capture triggers and logs on base tables, the immediate
    triggers, the event triggers, and the `idivm` schema. Base tables and their rows are not
    touched. Returns the dropped views. Fails as a whole (nothing dropped) when something of the
    user's depends on a view's table, e.g. a PostgreSQL view over it."""
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:c)"), {"c": INSTALL_LOCK})
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
    conn.execute(sa.text("DROP SCHEMA IF EXISTS idivm CASCADE"))
    return dropped
