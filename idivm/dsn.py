"""DSN resolution: --dsn > IDIVM_DSN > DATABASE_URL > the embedded default (DESIGN §2)."""
from __future__ import annotations

import os


def resolve_dsn(dsn: str | None = None) -> tuple[str, str]:
    """Return (dsn, where-it-came-from). Starts the embedded server if nothing is configured."""
    if dsn:
        return normalize(dsn), "--dsn"
    for var in ("IDIVM_DSN", "DATABASE_URL"):
        if os.environ.get(var):
            return normalize(os.environ[var]), var
    from .embedded import ensure_embedded

    return ensure_embedded(), "embedded"


def normalize(dsn: str) -> str:
    """Accept libpq URLs/keyword strings and SQLAlchemy URLs; return a libpq DSN."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql://" + dsn[len(prefix):]
    return dsn


def sqlalchemy_url(dsn: str) -> str:
    """The SQLAlchemy URL for a libpq DSN (psycopg 3 driver)."""
    if dsn.startswith("postgresql://"):
        return "postgresql+psycopg://" + dsn[len("postgresql://"):]
    # keyword/value DSN: hand it to psycopg untouched through the query string
    from urllib.parse import quote

    return "postgresql+psycopg:///?" + "&".join(
        f"{k}={quote(v)}" for k, v in (kv.split("=", 1) for kv in dsn.split())
    )
