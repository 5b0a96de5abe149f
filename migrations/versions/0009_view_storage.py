"""Views stored in idivm's schema: a maintained view's rows, with the ID columns maintenance matches
them by, live in ``idivm.view_<id>``; under the view's own name applications read a PostgreSQL view
of exactly its output columns, which refuses writes (operate/facade.py). The catalog's tables do not
change. Views registered before this revision are tables under their own names: after the upgrade,
``idivm init`` rebuilds each one into the new layout (operate/install.py), keeping its name,
strategy, mode, policy and grants.

Revision ID: 0009
"""
revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
