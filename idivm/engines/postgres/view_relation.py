"""The relation applications read: a PostgreSQL view under the maintained view's name, of exactly
its output columns, over the storage table in idivm's schema (names.storage_table), refusing writes.

The storage keeps the ID columns maintenance matches rows by (`__idivm_<alias>_<key>`), which
applications should neither see nor depend on, and only idivm may write it: a row changed behind
its back would make the view differ from its query until the next refresh. A simple view over one
table is inlined by PostgreSQL's planner, so reads through it use the storage's indexes and cost
what reading the table costs (`idivm bench reads` measures both). PostgreSQL would let such a view
be written through (it is automatically updatable); an INSTEAD OF trigger refuses every write with
an error naming the view. pg_ivm refuses writes to its views likewise.
"""
from __future__ import annotations

from sqlalchemy.engine import Connection

from ...sqltext import ident, qualified, run, string_literal

REFUSE_WRITE = "idivm.refuse_view_write"
READ_ONLY_TRIGGER = "idivm_read_only"


def install_refuse_function(conn: Connection) -> None:
    """The trigger function of every view relation (idempotent; `idivm init`)."""
    run(conn, f"""CREATE OR REPLACE FUNCTION {REFUSE_WRITE}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION 'cannot % "%.%": it is a view maintained by idivm; write to its base tables instead',
    lower(TG_OP), TG_TABLE_SCHEMA, TG_TABLE_NAME USING ERRCODE = 'wrong_object_type';
END
$f$""")


def create_view_relation(conn: Connection, schema: str, view: str, storage: tuple[str, str], columns: list[str],
                  comment: str) -> None:
    name = qualified(schema, view)
    outputs = ", ".join(ident(c) for c in columns)
    run(conn, f"CREATE VIEW {name} AS SELECT {outputs} FROM {qualified(*storage)}")
    run(conn, f"CREATE TRIGGER {READ_ONLY_TRIGGER} INSTEAD OF INSERT OR UPDATE OR DELETE ON {name} "
              f"FOR EACH ROW EXECUTE FUNCTION {REFUSE_WRITE}()")
    run(conn, f"COMMENT ON VIEW {name} IS {string_literal(comment)}")


def drop_view_relation(conn: Connection, schema: str, view: str) -> None:
    """Drop the view applications read."""
    run(conn, f"DROP VIEW IF EXISTS {qualified(schema, view)}")
