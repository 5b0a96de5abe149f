"""Logs indexed by xid: a maintenance reads its window through the index, and prune deletes consumed
rows through it, instead of scanning the whole log (which also holds the rows kept for other views
over the same table). New logs get the index when they are created (capture/triggers.py); this
revision adds it to the logs of tables captured before. ``captured_tables.pruned_below`` records
below which xid the last prune deleted every row (catalog.prune_log starts there).

Revision ID: 0008
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

S = "idivm"


def _logs() -> list[int]:
    return op.get_bind().execute(sa.text(
        f"SELECT id FROM {S}.captured_tables WHERE to_regclass(log_table) IS NOT NULL ORDER BY id")).scalars().all()


def upgrade() -> None:
    op.execute(f"ALTER TABLE {S}.captured_tables ADD COLUMN pruned_below xid8")
    op.execute(f"COMMENT ON COLUMN {S}.captured_tables.pruned_below IS "
               "'every log row below this xid was consumed by every view and deleted'")
    for cid in _logs():
        op.execute(f'CREATE INDEX IF NOT EXISTS "log_{int(cid)}_xid" ON {S}."log_{int(cid)}" (xid)')


def downgrade() -> None:
    op.drop_column("captured_tables", "pruned_below", schema=S)
    for cid in _logs():
        op.execute(f'DROP INDEX IF EXISTS {S}."log_{int(cid)}_xid"')
