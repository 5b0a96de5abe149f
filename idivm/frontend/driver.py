"""The frontend's stages, in order: SQL text -> parsed statement -> the whole-statement rewrites
(REWRITES) -> the checks of its SELECTs (checks.py) -> the logical plan with IDs (build_plan.py).

sqlglot parses, and (build_plan.py) qualifies every column with its scan alias (expanding *,
USING and NATURAL joins) and merges SPJ subqueries in FROM into the outer query; we never
hand-parse SQL.
"""
from __future__ import annotations

import inspect

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ..errors import IdivmError
from .aggregate_filters import inline_aggregate_filters
from .aggregate_subqueries import fold_aggregate_subquery
from .build_plan import CompiledView, build_view
from .checks import check_constructs, checked_branches, drop_ignored_order
from .constant_subqueries import inline_constant_subqueries
from .ctes import inline_ctes
from .derived_tables import merge_filtering_subquery
from .grouped_semijoins import decorrelate_grouped_semijoins
from .one_row import read_one_row
from .parse_errors import describe
from .quantified_comparisons import reduce_quantified_comparisons
from .scalar_subqueries import decorrelate_nested_aggregates, decorrelate_scalar_subqueries
from .schema import SchemaProvider
from .schema_checks import check_deterministic
from .setops import reduce_set_difference
from .single_row_subqueries import single_row_subqueries
from .table_functions import read_series


def parse_one(sql: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read="postgres") if s is not None]
    except ParseError as e:
        raise IdivmError(f"could not parse the view's SQL: {describe(sql, e)}") from None
    if len(statements) != 1:
        raise IdivmError(f"a view is defined by exactly one SELECT statement, got {len(statements)} statements")
    return statements[0]


def ignored_clauses(sql: str) -> list[str]:
    """Notices about what the view's definition says that a maintained view ignores (explain shows them)."""
    return drop_ignored_order(parse_one(sql))[1]


def _refuse_unsupported(tree: exp.Expression) -> exp.Expression:
    check_constructs(tree)
    return tree


def _drop_order(tree: exp.Expression) -> exp.Expression:
    return drop_ignored_order(tree)[0]


def _normalize(tree: exp.Expression) -> exp.Expression:
    return normalize_identifiers(tree, dialect="postgres")


# The whole-statement rewrites, in order, each a function from tree to tree (the shape of sqlglot's
# optimizer RULES; as there, one that declares a `schema` parameter is given the schema provider);
# each SELECT is then qualified against the schema provider, its subqueries in FROM
# merged and its EXISTS / IN subqueries extracted (_compile_select).
REWRITES = (
    read_series,  # FROM generate_series(1, 5) AS g -> FROM (SELECT n AS g FROM idivm.series ...) AS g (table_functions.py)
    inline_constant_subqueries,  # EXISTS (SELECT 3) -> TRUE, a = (SELECT 3) -> a = (3) (constant_subqueries.py)
    read_one_row,  # SELECT 1 AS a WHERE c -> SELECT 1 AS a FROM idivm.one WHERE c (one_row.py)
    single_row_subqueries,  # (SELECT c.v FROM c ..) -> (SELECT idivm.single_row(count(*), max(c.v)) ..) (single_row_subqueries.py)
    reduce_quantified_comparisons,  # x op ANY / ALL (SELECT ...) in WHERE -> [NOT] EXISTS (quantified_comparisons.py)
    inline_aggregate_filters,  # sum(x) FILTER (WHERE c) -> sum(CASE WHEN c THEN x END) (aggregate_filters.py)
    merge_filtering_subquery,  # a query over one SPJ subquery whose WHERE holds subqueries -> one query (derived_tables.py)
    decorrelate_grouped_semijoins,  # EXISTS / IN (SELECT ... GROUP BY ...) -> over a grouping in its FROM (grouped_semijoins.py)
    decorrelate_scalar_subqueries,  # (SELECT sum(v) FROM s WHERE s.k = r.k) as a value -> LEFT JOIN a grouping
    _refuse_unsupported,  # one refusal naming any construct no rewrite handles (checks.py)
    _drop_order,  # a top-level ORDER BY means nothing for a stored table (explain notes it)
    _normalize,  # unquoted identifiers fold to lower case, as PostgreSQL folds them
    inline_ctes,  # non-recursive WITH (ctes.py)
    reduce_set_difference,  # L EXCEPT / INTERSECT R -> SELECT DISTINCT L ... [NOT] EXISTS R (setops.py)
    fold_aggregate_subquery,  # an aggregating subquery in FROM -> a grouped view (aggregate_subqueries.py)
)


# The first-order strategies' frontend: nested aggregates compared in WHERE and HAVING decorrelated
# too, into parts of the view, which the i-diff rules maintain (the higher-order strategy keeps them
# as nested counts and sums, from REWRITES' plan; compiler.py gives each strategy its plan).
FIRST_ORDER_REWRITES = tuple(decorrelate_nested_aggregates if r is decorrelate_scalar_subqueries else r
                             for r in REWRITES)


def compile_view_sql(schema: SchemaProvider, sql: str, rewrites=REWRITES) -> CompiledView:
    parsed = tree = parse_one(sql)
    for rewrite in rewrites:
        tree = rewrite(tree, schema) if "schema" in inspect.signature(rewrite).parameters else rewrite(tree)
    selects, distinct = checked_branches(tree)
    view = build_view(schema, sql, selects, distinct)
    if distinct is not None:  # a UNION's branches were probed one by one; PostgreSQL also matches their
        check_deterministic(schema, parsed)  # types across them (the probe refuses what it rejects)
    return view
