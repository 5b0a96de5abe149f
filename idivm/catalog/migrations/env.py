"""Alembic environment for idivm's catalog schema (``idivm``).

idivm runs migrations programmatically (``idivm init``) on a connection it
passes in ``config.attributes['connection']``; the version table lives in
the ``idivm`` schema so it never collides with an application's own alembic.
"""
from alembic import context
from sqlalchemy import text

connection = context.config.attributes["connection"]
connection.execute(text("CREATE SCHEMA IF NOT EXISTS idivm"))
context.configure(connection=connection, version_table_schema="idivm", version_table="alembic_version")
with context.begin_transaction():
    context.run_migrations()
