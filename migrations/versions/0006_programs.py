"""Δ-programs in the catalog: each view's program in its JSON form (program/serialize.py), from which
engines render their statements, and each stored statement's role (whether it maintains the view or
an intermediate cache) instead of a prefix of its purpose.

Views registered before this revision get their program when `idivm init` next runs: it recompiles
them from their stored definitions (api.Engine.init). Their stored statements keep running meanwhile.

Revision ID: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

S = "idivm"


def upgrade() -> None:
    op.add_column("views", sa.Column("program", sa.Text, nullable=True,
                                     comment="the Δ-program, JSON (NULL: registered before 0006, until recompiled)"),
                  schema=S)
    op.add_column("script_statements", sa.Column("role", sa.Text, nullable=False, server_default="view",
                                                 comment="view or cache: what the statement maintains"), schema=S)
    op.execute(f"UPDATE {S}.script_statements SET role = 'cache' WHERE purpose LIKE 'cache:%'")


def downgrade() -> None:
    op.drop_column("script_statements", "role", schema=S)
    op.drop_column("views", "program", schema=S)
