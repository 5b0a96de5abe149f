"""Schema change detection: each view input records the base table's columns (name, type) as the
view was registered; an ALTER TABLE that drops, renames or retypes one of them makes the view stale.

Views registered before this revision get the columns their tables have at the upgrade.

Revision ID: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

S = "idivm"


def upgrade() -> None:
    op.add_column("view_inputs", sa.Column(
        "columns", sa.JSON, comment="[[name, type], ...] of the base table when the view was registered"), schema=S)
    op.execute(
        f"UPDATE {S}.view_inputs vi SET columns = (SELECT json_agg(json_build_array(a.attname, "
        "format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum) FROM pg_attribute a "
        f"JOIN {S}.captured_tables c ON c.id = vi.captured_table_id "
        "WHERE a.attrelid = to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name)) "
        "AND a.attnum > 0 AND NOT a.attisdropped)")


def downgrade() -> None:
    op.drop_column("view_inputs", "columns", schema=S)
