"""The catalog: views, captured base tables, i-diff schemas and the Δ-script repository.

Revision ID: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

S = "idivm"


def upgrade() -> None:
    op.create_table(
        "captured_tables",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("schema_name", sa.Text, nullable=False),
        sa.Column("table_name", sa.Text, nullable=False),
        sa.Column("key_columns", sa.JSON, nullable=False),
        sa.Column("log_table", sa.Text, nullable=False),
        sa.Column("capture_function", sa.Text, nullable=False),
        sa.UniqueConstraint("schema_name", "table_name"),
        schema=S,
    )
    op.create_table(
        "views",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("schema_name", sa.Text, nullable=False),
        sa.Column("view_name", sa.Text, nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.Column("strategy", sa.Text, nullable=False),
        sa.Column("output_columns", sa.JSON, nullable=False),
        sa.Column("id_columns", sa.JSON, nullable=False),
        sa.Column("plan_text", sa.Text, nullable=False),
        sa.Column("last_snapshot", sa.Text, nullable=False, comment="pg_snapshot consumed up to"),
        sa.Column("registered_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("last_maintained_at", sa.DateTime(timezone=True)),
        sa.Column("last_duration_ms", sa.Float),
        sa.Column("last_changes", sa.BigInteger),
        sa.UniqueConstraint("schema_name", "view_name"),
        schema=S,
    )
    op.create_table(
        "view_inputs",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("captured_table_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id"), primary_key=True),
        schema=S,
    )
    op.create_table(
        "diff_schemas",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("scan_alias", sa.Text, nullable=False),
        sa.Column("captured_table_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id"), nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("attributes", sa.JSON, nullable=False),
        sa.Column("conditional", sa.Boolean, nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        schema=S,
    )
    op.create_table(
        "script_statements",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("phase", sa.Integer, nullable=False),
        sa.Column("purpose", sa.Text, nullable=False),
        sa.Column("sql", sa.Text, nullable=False),
        schema=S,
    )
    op.create_table(
        "derivations",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        schema=S,
    )


def downgrade() -> None:
    for t in ("derivations", "script_statements", "diff_schemas", "view_inputs", "views", "captured_tables"):
        op.drop_table(t, schema=S)
