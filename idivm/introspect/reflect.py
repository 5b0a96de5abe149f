"""Reflection of base tables from PostgreSQL's catalog: the database already knows keys and column types."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..algebra.tables import TableInfo
from ..errors import UnknownObject, UnsupportedQuery
from ..names import STORAGE_SCHEMA


def resolve_table(conn: Connection, schema: str | None, name: str) -> tuple[str, str, str]:
    """(schema, name, relkind) of a table reference, resolved like PostgreSQL does (search_path)."""
    row = conn.execute(
        sa.text(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.oid = to_regclass(CASE WHEN CAST(:schema AS text) IS NULL THEN quote_ident(:name) "
            "ELSE quote_ident(:schema) || '.' || quote_ident(:name) END)"
        ),
        {"schema": schema, "name": name},
    ).first()
    shown = f"{schema}.{name}" if schema else name
    if row is None:
        raise UnknownObject(f'table "{shown}" does not exist')
    return row[0], row[1], row[2]


def reflect_table(conn: Connection, schema: str | None, name: str, only: bool = False) -> TableInfo:
    """Reflect one base table; refuse what idivm cannot capture changes of.

    A partitioned table is captured with all its partitions (capture/triggers.py). Inheritance is
    refused: rows written directly to a child would not reach its parent's statement triggers, and
    rows written through a parent would not reach the child's. A partition alone is refused for the
    same reason (writes through its root fire only the root's triggers)."""
    schema, name, relkind = resolve_table(conn, schema, name)
    shown = f"{schema}.{name}"  # a maintained view is named as the user knows it, not by its storage
    if relkind == "v":
        schema, name, relkind = _storage_behind(conn, schema, name) or (schema, name, relkind)
    if relkind not in ("r", "p"):
        kinds = {"v": "a view", "m": "a materialized view", "f": "a foreign table", "S": "a sequence"}
        raise UnsupportedQuery(
            f'"{schema}.{name}" is {kinds.get(relkind, "not an ordinary table")}; '
            "idivm maintains views over ordinary tables only"
        )
    family = conn.execute(sa.text(
        "SELECT c.relispartition, "
        "(SELECT string_agg(CAST(i.inhparent AS regclass)::text, ', ') FROM pg_inherits i WHERE i.inhrelid = c.oid), "
        "(SELECT string_agg(CAST(i.inhrelid AS regclass)::text, ', ' ORDER BY 1) FROM pg_inherits i WHERE i.inhparent = c.oid) "
        "FROM pg_class c WHERE c.oid = CAST(quote_ident(:s) || '.' || quote_ident(:n) AS regclass)"
    ), {"s": schema, "n": name}).one()
    if family[0]:
        raise UnsupportedQuery(
            f'table "{schema}.{name}" is a partition of {family[1]}; rows written through {family[1]} would not be '
            f"seen, so register the view over {family[1]} (with a WHERE on its partition key)")
    if family[1]:
        raise UnsupportedQuery(
            f'table "{schema}.{name}" inherits from {family[1]} (table inheritance is not supported: rows written '
            "through the parent would not be seen); a partitioned table is")
    if family[2] and relkind == "r":
        raise UnsupportedQuery(
            f'table "{schema}.{name}" has inheritance children ({family[2]}) (table inheritance is not supported: '
            "rows written to a child would not be seen); a partitioned table is")
    if only and relkind == "p":
        raise UnsupportedQuery(f'ONLY "{schema}.{name}" reads no rows (it is partitioned: its rows are in its '
                               "partitions); remove ONLY")
    sql = columns_json("to_regclass(quote_ident(CAST(:s AS text)) || '.' || quote_ident(CAST(:n AS text)))")
    rows = conn.execute(sa.text(f"SELECT {sql}"), {"s": schema, "n": name}).scalar()
    return table_info(schema, name, rows, shown)


def still_as_reflected(conn: Connection, tables) -> bool:
    """Whether these tables (TableInfo, as reflect_table gave them) still have the same columns,
    types, key and NOT NULLs, read in one query: what registration compiled before it held the
    tables against DDL is then what it would compile now."""
    distinct = {(t.schema, t.name): t for t in tables}
    if not distinct:
        return True
    where = columns_json("to_regclass(quote_ident(u.s) || '.' || quote_ident(u.n))")
    rows = conn.execute(sa.text(f"SELECT u.s, u.n, {where} FROM unnest(CAST(:s AS text[]), CAST(:n AS text[])) AS u(s, n)"),
                        {"s": [s for s, _ in distinct], "n": [n for _, n in distinct]}).all()
    for schema, name, columns in rows:
        try:
            if table_info(schema, name, columns) != distinct[(schema, name)]:
                return False
        except (UnknownObject, UnsupportedQuery):
            return False
    return True


def _storage_behind(conn: Connection, schema: str, name: str) -> tuple[str, str, str] | None:
    """The storage table of a maintained view read by another (views over views): the relation its
    view relation (engines/postgres/view_relation.py) selects from, when that is one of idivm's storage tables. The view
    over it reads the storage, with the ID columns it needs as its key, and its capture logs it."""
    row = conn.execute(sa.text(
        "SELECT DISTINCT n.nspname, c.relname, c.relkind FROM pg_rewrite r "
        "JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid "
        "JOIN pg_class c ON c.oid = d.refobjid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE r.ev_class = to_regclass(quote_ident(:s) || '.' || quote_ident(:n)) AND d.refobjid <> r.ev_class "
        "AND n.nspname = :storage_schema AND c.relname ~ '^view_[0-9]+$'"),
        {"s": schema, "n": name, "storage_schema": STORAGE_SCHEMA}).all()
    return tuple(row[0]) if len(row) == 1 else None


def type_name(attribute: str, type_: str, namespace: str) -> str:
    """SQL: the type of a column (`attribute`: a pg_attribute alias; `type_`, `namespace`: its
    pg_type and that type's pg_namespace) as format_type prints it with only pg_catalog on the
    search path: built-in types as usual (`integer`, `numeric(8,2)`), every other type qualified
    by its schema (`public.mood`, `public.citext[]`, `geo."Point"`).

    Type names are stored in the catalog (the columns a view reads, compared by the schema-change
    trigger) and written into DDL that runs under idivm's own functions' search path (immediate
    mode's i-diff tables): a name that depends on the search path of whoever reflected it made a
    table with an enum or an extension's column read `mood` at registration and `public.mood` in
    the trigger (every ALTER TABLE of it marked its views stale), and made immediate mode's
    function fail on every write ("type "mood" does not exist")."""
    printed = f"format_type({attribute}.atttypid, {attribute}.atttypmod)"
    return (f"CASE WHEN {namespace}.nspname = 'pg_catalog' OR NOT pg_type_is_visible({type_}.oid) THEN {printed} "
            f"ELSE quote_ident({namespace}.nspname) || '.' || {printed} END")


def own_equality_columns(conn: Connection, schema: str, table: str, columns: list[str]) -> list[tuple[str, str]]:
    """The columns (name, type) among `columns` of the table whose type, or a domain's base type,
    has an = operator of its own outside pg_catalog (citext's, an extension's): code that runs
    with only pg_catalog on its search path would compare them with another operator, reached
    through a cast (citext's values as text, case-sensitively)."""
    return [(r[0], r[1]) for r in conn.execute(sa.text(
        f"SELECT a.attname, {type_name('a', 'ty', 'tn')} FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid "
        "JOIN pg_namespace tn ON tn.oid = ty.typnamespace "
        "WHERE a.attrelid = to_regclass(quote_ident(:s) || '.' || quote_ident(:t)) AND a.attname = ANY(:c) "
        "AND a.attnum > 0 AND NOT a.attisdropped AND EXISTS (SELECT 1 FROM pg_operator o WHERE o.oprname = '=' "
        "AND o.oprleft IN (ty.oid, ty.typbasetype) AND o.oprnamespace <> CAST('pg_catalog' AS regnamespace)) "
        "ORDER BY a.attnum"), {"s": schema, "t": table, "c": list(columns)}).all()]


def columns_json(regclass: str) -> str:
    """A scalar subquery: every column of the table `regclass` (an SQL expression) with its type (type_name)
    and its position in the primary key, as one json array of [name, type, key position or null, NOT NULL,
    its collation where that is not its type's default (TableInfo.collations) or null].
    Maintenance reflects all of a view's base tables with it inside the query that lists them (hot path:
    one round trip, not two per table)."""
    return (
        f"(SELECT json_agg(json_build_array(a.attname, {type_name('a', 'ty', 'tn')}, k.ord, a.attnotnull, "
        "(SELECT quote_ident(cn.nspname) || '.' || quote_ident(co.collname) FROM pg_collation co "
        "JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation AND a.attcollation <> ty.typcollation)"
        ") ORDER BY a.attnum) "
        "FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid JOIN pg_namespace tn ON tn.oid = ty.typnamespace "
        "LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary "
        "LEFT JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON k.attnum = a.attnum "
        f"WHERE a.attrelid = {regclass} AND a.attnum > 0 AND NOT a.attisdropped)"
    )


def table_info(schema: str, name: str, rows: list | None, shown: str | None = None) -> TableInfo:
    """TableInfo from columns_json's rows; refuses a table without a primary key (or gone: no rows).
    `shown`: how messages name it (a maintained view's name rather than its storage's)."""
    shown = shown or f"{schema}.{name}"
    if not rows:
        raise UnknownObject(f'table "{shown}" does not exist')
    key = tuple(r[0] for r in sorted((r for r in rows if r[2] is not None), key=lambda r: r[2]))
    if not key:
        raise UnsupportedQuery(
            f'table "{shown}" has no primary key; ID-based maintenance identifies rows by their '
            "key, so every base table needs a PRIMARY KEY"
        )
    return TableInfo(schema=schema, name=name, columns=tuple((r[0], r[1]) for r in rows), key=key,
                     not_null=frozenset(r[0] for r in rows if r[3]), collations=tuple((r[0], r[4]) for r in rows if r[4]))
