"""What the connection's session says of itself: the schema unqualified names resolve in, the
database, the clock, its transaction; and whether a named object exists."""
from __future__ import annotations

from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def current_schema(conn: Connection) -> str:
    return conn.execute(sa.text("SELECT current_schema()")).scalar()


def current_database(conn: Connection) -> str:
    return conn.execute(sa.text("SELECT current_database()")).scalar()


def server_now(conn: Connection) -> datetime:
    """The server's clock (not the transaction's start), in UTC."""
    return conn.execute(sa.text("SELECT clock_timestamp()")).scalar_one().astimezone(timezone.utc)


def current_xid(conn: Connection) -> int:
    """The transaction's id (assigning one if it has none yet)."""
    return int(conn.execute(sa.text("SELECT CAST(pg_current_xact_id() AS text)")).scalar())


def relation_exists(conn: Connection, qualified_name: str) -> bool:
    return conn.execute(sa.text("SELECT to_regclass(:q) IS NOT NULL"), {"q": qualified_name}).scalar()


def schema_exists(conn: Connection, schema: str) -> bool:
    return conn.execute(sa.text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": schema}).first() is not None


def role_exists(conn: Connection, role: str) -> bool:
    return conn.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first() is not None


def relation_bytes(conn: Connection, qualified_name: str) -> int | None:
    """A relation's size with its indexes and TOAST (None when there is no such relation)."""
    size = conn.execute(sa.text("SELECT pg_total_relation_size(to_regclass(:t))"), {"t": qualified_name}).scalar()
    return None if size is None else int(size)


def row_count(conn: Connection, qualified_name: str) -> int:
    return int(conn.exec_driver_sql(f"SELECT count(*) FROM {qualified_name}").scalar())
