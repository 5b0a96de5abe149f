"""The Python API maintains a compiled view in one round trip: ``CALL idivm.maintain_call(...)``
takes the view's lock, maintains in its own REPEATABLE READ transaction, prunes the logs and
releases the lock (engines/postgres/server_maintenance.py). The catalog's tables do not change:
upgrading to this revision makes ``idivm init`` install the procedure (operate/install.py).

Revision ID: 0011
"""
revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
