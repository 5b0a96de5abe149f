"""A view's engine policy: which engine maintains it when a run names none (postgres, spark, or
auto: chosen per run by the cost model of operate/engine_choice.py). NULL: the default (postgres,
or IDIVM_ENGINE).

Revision ID: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

S = "idivm"


def upgrade() -> None:
    op.add_column("views", sa.Column("policy_engine", sa.Text, nullable=True,
                                     comment="postgres, spark or auto (NULL: the default engine)"), schema=S)
    op.create_check_constraint("views_policy_engine", "views", "policy_engine IN ('postgres', 'spark', 'auto')",
                               schema=S)


def downgrade() -> None:
    op.drop_constraint("views_policy_engine", "views", schema=S)
    op.drop_column("views", "policy_engine", schema=S)
