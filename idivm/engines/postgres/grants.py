"""Keeping the privileges granted on a view's table when the table is rebuilt (refresh, replace).

A rebuild drops the view's table and creates it anew, so the GRANTs an application's roles were given
(`idivm grant`, or the user's own) would silently vanish and readers would start failing with
"permission denied". They are read from the old table's ACL before the drop and granted again on the
new table in the same transaction.
"""
from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ...sqltext import ident, qualified, run

_PRIVILEGES = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"}


def saved_grants(conn: Connection, schema: str, table: str) -> list[tuple[str, str, bool]]:
    """(grantee, privilege, grantable) for every privilege granted on the table to a role other than
    its owner ("PUBLIC" for grants to everyone)."""
    rows = conn.execute(text(
        "SELECT coalesce(r.rolname, 'PUBLIC') AS grantee, a.privilege_type, a.is_grantable "
        "FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a "
        "LEFT JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.oid = to_regclass(:q) AND a.grantee <> c.relowner "
        "ORDER BY 1, 2"), {"q": qualified(schema, table)}).all()
    return [(r.grantee, r.privilege_type, r.is_grantable) for r in rows if r.privilege_type in _PRIVILEGES]


def grant_select(conn: Connection, schema: str, relation: str, role: str) -> None:
    run(conn, f"GRANT SELECT ON {qualified(schema, relation)} TO {ident(role)}")


def restore_grants(conn: Connection, schema: str, table: str, grants: list[tuple[str, str, bool]]) -> None:
    for grantee, privilege, grantable in grants:
        who = "PUBLIC" if grantee == "PUBLIC" else ident(grantee)
        option = " WITH GRANT OPTION" if grantable else ""
        run(conn, f"GRANT {privilege} ON {qualified(schema, table)} TO {who}{option}")
