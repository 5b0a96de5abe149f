"""idivm's catalog: the captured tables, the maintained views with their programs, inputs and
rendered statements, and the views' operating state (policies, failures, staleness); and `one`,
the one-row table a SELECT without FROM reads once registered (frontend/one_row.py).

One revision until idivm is first released: later changes to the catalog are revisions after it,
each upgrading the databases of the release before.

Revision ID: 0001
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

S = "idivm"
ONE_TABLE, ONE_COLUMN = "one", "__idivm_one"  # names.ONE_TABLE and its column (migrations do not import the package)
SERIES_TABLE, SERIES_COLUMN, SERIES_FIRST, SERIES_LAST = "series", "n", -1000, 10000  # names.SERIES_*
SINGLE_ROW = "single_row"  # names.SINGLE_ROW_FUNCTION


class XID8(sa.types.UserDefinedType):
    """PostgreSQL's 64-bit transaction id (what the logs record), which SQLAlchemy does not name."""

    cache_ok = True

    def get_col_spec(self) -> str:
        return "xid8"


def upgrade() -> None:
    op.create_table(
        "captured_tables",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("schema_name", sa.Text, nullable=False),
        sa.Column("table_name", sa.Text, nullable=False),
        sa.Column("key_columns", sa.JSON, nullable=False),
        sa.Column("log_table", sa.Text, nullable=False),
        sa.Column("capture_function", sa.Text, nullable=False),
        sa.Column("pruned_below", XID8(),
                  comment="every log row below this xid was consumed by every view and deleted"),
        sa.UniqueConstraint("schema_name", "table_name"),
        schema=S,
    )
    op.create_table(
        "captured_partitions",
        sa.Column("captured_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("relid", postgresql.OID, primary_key=True, comment="a partition (any level) carrying the capture triggers"),
        schema=S,
    )
    op.create_table(
        "views",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("schema_name", sa.Text, nullable=False),
        sa.Column("view_name", sa.Text, nullable=False),
        sa.Column("definition", sa.Text, nullable=False),
        sa.Column("strategy", sa.Text, nullable=False),
        sa.Column("output_columns", sa.JSON, nullable=False),
        sa.Column("id_columns", sa.JSON, nullable=False),
        sa.Column("plan_text", sa.Text, nullable=False),
        sa.Column("program", sa.Text, comment="the Δ-program, JSON (set by registration once compiled)"),
        sa.Column("last_snapshot", sa.Text, nullable=False, comment="pg_snapshot consumed up to"),
        sa.Column("registered_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("last_maintained_at", sa.DateTime(timezone=True)),
        sa.Column("last_duration_ms", sa.Float),
        sa.Column("last_changes", sa.BigInteger),
        sa.Column("mode", sa.Text, nullable=False, server_default="deferred",
                  comment="deferred: maintained by `idivm maintain` / the scheduler"),
        sa.Column("policy_every", sa.Float, comment="seconds between maintenances when changes wait; NULL: default"),
        sa.Column("policy_max_pending", sa.BigInteger, comment="maintain as soon as this many changes wait; NULL: default"),
        sa.Column("policy_max_staleness", sa.Float,
                  comment="maintain before the oldest waiting change is this old; NULL: none"),
        sa.Column("policy_engine", sa.Text, comment="postgres, spark or auto (NULL: the default engine)"),
        sa.Column("policy_recompute", sa.Text,
                  comment="when a deferred maintenance recomputes the view instead of running its Δ-script: auto "
                          "(when that is estimated cheaper), never or always; NULL: auto"),
        sa.Column("recompute_ms", sa.Float,
                  comment="the measured cost of recomputing the view: its registration's fill, then its last recompute"),
        sa.Column("rebuild_ms", sa.Float,
                  comment="the cost of a recomputation that also rebuilds a stale cache: the registration's fill, "
                          "then the last such recomputation"),
        sa.Column("stale_regret_ms", sa.Float, nullable=False, server_default="0",
                  comment="while the cache is stale: what recomputing again cost beyond the Δ-script's estimates"),
        sa.Column("recompute_measured", sa.Boolean, nullable=False, server_default=sa.false(),
                  comment="recompute_ms is a recomputation's own (false: the registration's fill, which for a grouped "
                          "view includes a cache that recomputing skips)"),
        sa.Column("change_ms", sa.Float,
                  comment="the cost of the i-diffs and Δ-script per logged change, measured by the last batch large enough"),
        sa.Column("caches_stale", sa.Boolean, nullable=False, server_default=sa.false(),
                  comment="the last maintenance recomputed the view without its cache: the next one recomputes both"),
        sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text, comment="the last failed maintenance's error; NULL after a success"),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True), comment="the last maintenance attempt, failed or not"),
        sa.Column("stale_reason", sa.Text, comment="why the view can no longer be maintained; NULL: it can"),
        sa.UniqueConstraint("schema_name", "view_name"),
        sa.CheckConstraint("policy_engine IN ('postgres', 'spark', 'auto')", name="views_policy_engine"),
        sa.CheckConstraint("policy_recompute IN ('auto', 'never', 'always')", name="views_policy_recompute"),
        schema=S,
    )
    op.create_table(
        "view_inputs",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("captured_table_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id"), primary_key=True),
        sa.Column("columns", sa.JSON,
                  comment="[[name, type], ...] of the columns the view reads, as when it was registered"),
        schema=S,
    )
    op.create_table(
        "diff_schemas",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("scan_alias", sa.Text, nullable=False),
        sa.Column("captured_table_id", sa.Integer, sa.ForeignKey(f"{S}.captured_tables.id"), nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("attributes", sa.JSON, nullable=False),
        sa.Column("conditional", sa.Boolean, nullable=False),
        sa.Column("label", sa.Text, nullable=False),
        schema=S,
    )
    op.create_table(
        "derivations",
        sa.Column("view_id", sa.Integer, sa.ForeignKey(f"{S}.views.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        schema=S,
    )
    op.create_table(
        ONE_TABLE,
        sa.Column(ONE_COLUMN, sa.Integer, sa.CheckConstraint(f"{ONE_COLUMN} = 1"), primary_key=True),
        schema=S,
        comment="one row: what a maintained view's SELECT without FROM reads (PostgreSQL has no DUAL)",
    )
    op.execute(sa.text(f"INSERT INTO {S}.{ONE_TABLE} VALUES (1)"))
    op.create_table(
        SERIES_TABLE,
        sa.Column(SERIES_COLUMN, sa.Integer, primary_key=True),
        schema=S,
        comment=f"the integers {SERIES_FIRST} to {SERIES_LAST}: what generate_series(a, b) in a maintained view's "
                "FROM reads",
    )
    op.execute(sa.text(f"INSERT INTO {S}.{SERIES_TABLE} SELECT generate_series({SERIES_FIRST}, {SERIES_LAST})"))
    # A scalar subquery without an aggregate, as a view keeps it (frontend/single_row_subqueries.py):
    # its value from the count of its rows and their MAX, failing as PostgreSQL fails on several rows
    op.execute(sa.text(
        f"CREATE FUNCTION {S}.{SINGLE_ROW}(row_count bigint, value anyelement) RETURNS anyelement "
        "LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$ BEGIN IF row_count > 1 THEN "
        "RAISE EXCEPTION 'more than one row returned by a subquery used as an expression' "
        "USING ERRCODE = 'cardinality_violation'; END IF; RETURN value; END $$"))


def downgrade() -> None:
    op.execute(sa.text(f"DROP FUNCTION {S}.{SINGLE_ROW}(bigint, anyelement)"))
    for table in (SERIES_TABLE, ONE_TABLE, "derivations", "diff_schemas", "view_inputs", "views", "captured_partitions",
                  "captured_tables"):
        op.drop_table(table, schema=S)
