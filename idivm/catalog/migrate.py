"""`idivm init`: upgrade the catalog schema to the newest alembic revision (idempotent)."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection


def _migrations() -> Path:
    """The alembic environment: the checkout's top-level migrations/, installed (the wheel, or an
    editable install's mapping) as the package idivm.catalog.migrations."""
    from importlib import import_module

    return Path(import_module("idivm.catalog.migrations").__file__).parent


MIGRATIONS = _migrations()


def upgrade_catalog(conn: Connection) -> None:
    """Run the migrations from the catalog's revision to HEAD (alembic is imported here only: a
    command that finds the catalog at HEAD, as nearly all do, does not pay for its import)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


HEAD = "0001"  # the newest revision under migrations/versions (checked by a test)


def catalog_revision(conn: Connection) -> str | None:
    if not conn.execute(text("SELECT to_regclass('idivm.alembic_version') IS NOT NULL")).scalar():
        return None
    return conn.execute(text("SELECT version_num FROM idivm.alembic_version")).scalar()


INSTALL_LOCK = 7411  # advisory lock class: one installer or upgrader at a time


def lock_installation(conn: Connection) -> None:
    """Wait for any other install, upgrade or uninstall; hold the lock to the transaction's end."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:c)"), {"c": INSTALL_LOCK})


def drop_catalog(conn: Connection) -> None:
    """The idivm schema and everything in it."""
    conn.execute(text("DROP SCHEMA IF EXISTS idivm CASCADE"))


def catalog_installed(conn: Connection) -> bool:
    return conn.execute(text("SELECT to_regclass('idivm.views') IS NOT NULL")).scalar()
