"""Capture that nothing bypasses: the capture triggers of tables captured before this revision become
ENABLE ALWAYS (they then fire under session_replication_role = replica too, as new captures' do);
``captured_partitions`` records the partitions of a captured partitioned table that carry its
capture triggers (capture/partitions.py).

The capture functions themselves (UPDATE pairs rows one-to-one, not by key) and the immediate-mode
triggers (statement nesting) are rewritten by `idivm init` whenever the revision changes.

Revision ID: 0005
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

S = "idivm"
TRIGGERS = ("idivm_capture_insert", "idivm_capture_update", "idivm_capture_delete", "idivm_capture_truncate")


def _set(state: str) -> None:
    bind = op.get_bind()
    for schema, table in bind.execute(sa.text(
            f"SELECT schema_name, table_name FROM {S}.captured_tables "
            "WHERE to_regclass(quote_ident(schema_name) || '.' || quote_ident(table_name)) IS NOT NULL")).all():
        name = bind.execute(sa.text("SELECT quote_ident(:s) || '.' || quote_ident(:t)"), {"s": schema, "t": table}).scalar()
        quoted = [bind.execute(sa.text("SELECT quote_ident(:x)"), {"x": t}).scalar() for t in TRIGGERS]
        op.execute(f"ALTER TABLE {name} " + ", ".join(f"{state} TRIGGER {t}" for t in quoted))


def upgrade() -> None:
    _set("ENABLE ALWAYS")
    op.create_table(
        "captured_partitions",
        sa.Column("captured_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("relid", postgresql.OID, primary_key=True, comment="a partition (any level) carrying the capture triggers"),
        schema=S,
    )


def downgrade() -> None:
    op.drop_table("captured_partitions", schema=S)
    _set("ENABLE")
