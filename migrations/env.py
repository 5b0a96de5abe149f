"""Alembic environment for idivm's catalog schema (``idivm``).

idivm runs migrations programmatically (``idivm init``) on a connection it
passes in ``config.attributes['connection']``; the version table lives in
the ``idivm`` schema so it never collides with an application's own alembic.
Run from a checkout with the ``alembic`` command (``alembic.ini`` beside this
folder: ``alembic revision -m "..."``, ``alembic upgrade head``), it connects
to the database idivm's own commands would use (--dsn aside: IDIVM_DSN,
DATABASE_URL, else the embedded default).
"""
from alembic import context
from sqlalchemy import create_engine, text


def _run(connection) -> None:
    connection.execute(text("CREATE SCHEMA IF NOT EXISTS idivm"))
    context.configure(connection=connection, version_table_schema="idivm", version_table="alembic_version")
    with context.begin_transaction():
        context.run_migrations()


if "connection" in context.config.attributes:
    _run(context.config.attributes["connection"])
else:
    from idivm.dsn import resolve_dsn, sqlalchemy_url

    engine = create_engine(sqlalchemy_url(resolve_dsn(None, source="IDIVM_DSN")[0]))
    with engine.begin() as connection:
        _run(connection)
    engine.dispose()
