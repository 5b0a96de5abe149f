"""DSN resolution: --dsn > IDIVM_DSN > DATABASE_URL > the embedded default (docs/cli.md, "DSN resolution")."""
from __future__ import annotations

import os

import sqlalchemy as sa
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from .embedded import ensure_embedded
from .errors import IdivmError


def resolve_dsn(dsn: str | None = None, source: str = "--dsn") -> tuple[str, str]:
    """Return (dsn, where-it-came-from). Starts the embedded server if nothing is configured.
    `source` names an explicit dsn in messages (the CLI's --dsn, the API's connect(dsn))."""
    if dsn:
        return checked(normalize(dsn), source), source
    for var in ("IDIVM_DSN", "DATABASE_URL"):
        if os.environ.get(var):
            return checked(normalize(os.environ[var]), var), var
    return ensure_embedded(), "embedded"


def normalize(dsn: str) -> str:
    """Accept libpq URLs/keyword strings and SQLAlchemy URLs; return a libpq DSN."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql://" + dsn[len(prefix):]
    return dsn


def checked(dsn: str, source: str) -> str:
    """The DSN if libpq can parse it (URL or key=value, with quoting and spaces around '='), else
    one line naming where it came from and what is wrong."""
    try:
        conninfo_to_dict(dsn)
    except ProgrammingError as e:
        reason = (str(e).strip().splitlines() or ["cannot be parsed"])[0]
        raise IdivmError(f"malformed DSN from {source}: {reason} (write a URL such as "
                         "postgresql://user@host/db, or key=value pairs such as 'host=localhost dbname=db')") from None
    return dsn


def sqlalchemy_url(dsn: str) -> sa.engine.URL:
    """The SQLAlchemy URL for a libpq DSN (psycopg 3 driver): libpq's own parse of it, every
    parameter passed on to psycopg as it is (values with spaces or quotes included)."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    # the password in the URL's own field, which SQLAlchemy masks wherever it prints the URL
    return sa.engine.URL.create("postgresql+psycopg", password=params.pop("password", None), query=params)
