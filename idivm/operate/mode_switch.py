"""Switching a registered view between deferred and immediate maintenance (`idivm set-mode`, and a
replace whose query and strategy are as registered)."""
from __future__ import annotations

import sqlalchemy as sa

from ..catalog import repository as catalog
from ..engines.postgres.executor import MaintenanceReport, rebuild_stale_caches, run_maintenance
from ..engines.postgres.maintenance_lock import lock_view
from ..names import display_name
from .registry import make_immediate_locked, sync_immediate
from .transactions import Transactions


def switch_mode(tx: Transactions, row: sa.Row, mode: str) -> None:
    """Switch a view between deferred and immediate maintenance, holding its base tables against
    writers: to immediate, the pending changes are applied first; to deferred, everything committed
    so far counts as consumed."""
    with tx.reading() as conn:
        tables = {(t.schema_name, t.table_name) for t in catalog.view_inputs(conn, row.id)}
    with tx.writers_blocked(tables, [(row.schema_name, row.view_name)]) as conn:
        lock_view(conn, row.id)
        if mode == "immediate":
            report = MaintenanceReport(view=display_name(row.schema_name, row.view_name))
            run_maintenance(conn, row.id, report, None)  # catch up, in this transaction
            rebuild_stale_caches(conn, row.id)  # a recomputation may have left them (immediate mode reads them)
            make_immediate_locked(conn, row.schema_name, row.view_name)
        else:
            catalog.set_deferred_from_now(conn, row.id)
            sync_immediate(conn)
