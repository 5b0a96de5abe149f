"""Operating views unattended: per-view maintenance policy, failure bookkeeping, mode and staleness
in the catalog; a commit-time stamp in every modification log (the age of the oldest pending change).

Revision ID: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

S = "idivm"

VIEW_COLUMNS = [
    sa.Column("mode", sa.Text, nullable=False, server_default="deferred",
              comment="deferred: maintained by `idivm maintain` / the scheduler"),
    sa.Column("policy_every", sa.Float, comment="seconds between maintenances when changes wait; NULL: default"),
    sa.Column("policy_max_pending", sa.BigInteger, comment="maintain as soon as this many changes wait; NULL: default"),
    sa.Column("policy_max_staleness", sa.Float, comment="maintain before the oldest waiting change is this old; NULL: none"),
    sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_error", sa.Text, comment="the last failed maintenance's error; NULL after a success"),
    sa.Column("last_attempt_at", sa.DateTime(timezone=True), comment="the last maintenance attempt, failed or not"),
    sa.Column("stale_reason", sa.Text, comment="why the view can no longer be maintained; NULL: it can"),
]


def upgrade() -> None:
    for c in VIEW_COLUMNS:
        op.add_column("views", c, schema=S)
    # Existing logs get the column too; now() is stable, so PostgreSQL stores the default once
    # (no table rewrite) and rows already logged count as logged at the upgrade.
    for (log,) in op.get_bind().execute(sa.text(f"SELECT log_table FROM {S}.captured_tables")).all():
        op.execute(f"ALTER TABLE {log} ADD COLUMN logged_at timestamptz NOT NULL DEFAULT now()")


def downgrade() -> None:
    for (log,) in op.get_bind().execute(sa.text(f"SELECT log_table FROM {S}.captured_tables")).all():
        op.execute(f"ALTER TABLE {log} DROP COLUMN logged_at")
    for c in reversed(VIEW_COLUMNS):
        op.drop_column("views", c.name, schema=S)
