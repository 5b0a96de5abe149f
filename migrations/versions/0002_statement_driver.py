"""Each Δ-script statement names the captured table whose i-diff drives it, so maintenance can skip
statements whose driving i-diff is empty this time (they would change nothing).

Revision ID: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

S = "idivm"


def upgrade() -> None:
    op.add_column("script_statements", sa.Column(
        "driven_by", sa.Integer, nullable=True,
        comment="captured table whose empty i-diff makes this statement a no-op; NULL: always run"), schema=S)


def downgrade() -> None:
    op.drop_column("script_statements", "driven_by", schema=S)
