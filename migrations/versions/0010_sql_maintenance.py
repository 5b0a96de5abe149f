"""Maintenance callable from SQL: ``SELECT idivm.maintain('view')`` and ``CALL idivm.maintain_all()``
(engines/postgres/server_maintenance.py), and log pruning as the server-side function
``idivm.prune_logs`` that both they and the Python executor call. The catalog's tables do not
change: ``idivm init`` installs the functions and compiles each registered view's
``idivm.maintain_<id>`` (operate/install.py).

Revision ID: 0010
"""
revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
