"""Type names independent of the search path: the columns each view input records name every type
outside pg_catalog with its schema (`public.mood`), as reflection now does
(idivm/introspect/reflect.py, type_name). Names recorded before this revision were printed under
the registering session's search path (`mood`), while the schema-change trigger, under
`search_path = pg_catalog`, reads `public.mood`: every ALTER TABLE of such a table marked its views
stale. A recorded name is rewritten where it is what format_type prints for the column now (under
this session's search path, as registration printed it); any other name is left as it is.

Upgrading to this revision also makes `idivm init` write the event triggers, immediate mode's
functions and every view's maintenance function as this idivm writes them (operate/install.py).

Revision ID: 0012
"""
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

S = "idivm"

QUALIFIED = ("CASE WHEN tn.nspname = 'pg_catalog' OR NOT pg_type_is_visible(ty.oid) "
             "THEN format_type(a.atttypid, a.atttypmod) "
             "ELSE quote_ident(tn.nspname) || '.' || format_type(a.atttypid, a.atttypmod) END")


def upgrade() -> None:
    op.execute(f"""
UPDATE {S}.view_inputs AS vi SET columns = fixed.columns
FROM (
  SELECT v.view_id, v.captured_table_id,
         json_agg(json_build_array(u.value ->> 0,
                                   CASE WHEN a.attname IS NOT NULL AND format_type(a.atttypid, a.atttypmod) = u.value ->> 1
                                        THEN {QUALIFIED} ELSE u.value ->> 1 END) ORDER BY u.position) AS columns
  FROM {S}.view_inputs AS v
  JOIN {S}.captured_tables AS c ON c.id = v.captured_table_id
  CROSS JOIN LATERAL json_array_elements(v.columns) WITH ORDINALITY AS u(value, position)
  LEFT JOIN pg_attribute AS a ON a.attrelid = to_regclass(quote_ident(c.schema_name) || '.' || quote_ident(c.table_name))
       AND a.attname = u.value ->> 0 AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_type AS ty ON ty.oid = a.atttypid
  LEFT JOIN pg_namespace AS tn ON tn.oid = ty.typnamespace
  WHERE v.columns IS NOT NULL
  GROUP BY v.view_id, v.captured_table_id
) AS fixed
WHERE vi.view_id = fixed.view_id AND vi.captured_table_id = fixed.captured_table_id""")


def downgrade() -> None:
    pass  # the qualified names are valid under every search path
