"""SELECTs without FROM read idivm's one-row table (names.ONE_TABLE, created with the catalog).

    SELECT 1 AS a WHERE 5 IN (SELECT a FROM r)  ->  SELECT 1 AS a FROM idivm.one AS __idivm_one WHERE ...
    SELECT s.x FROM r, (SELECT 1 AS x) AS s     ->  ... (SELECT 1 AS x FROM idivm.one AS __idivm_one) AS s
    EXISTS (SELECT 1 WHERE r.a > 2)             ->  EXISTS (SELECT 1 FROM idivm.one AS __idivm_one WHERE r.a > 2)

PostgreSQL evaluates a SELECT without FROM over one row, so reading a table of one row means the
same; the plan then has a relation with a key where the SQL has none, and every strategy
maintains the view as any other (the table never changes, so its Δ is always empty; it is captured
like any table all the same). The constant rows that mean a value or TRUE were replaced before
(constant_subqueries.py); what is left here is a row that may not exist (WHERE), an aggregate over
it, a constant relation in FROM, or the view itself (DBToaster's test queries write all of them).
"""
from __future__ import annotations

from sqlglot import exp

from ..names import ONE_TABLE, STORAGE_SCHEMA
from .clauses import has_from


def read_one_row(tree: exp.Expression) -> exp.Expression:
    """Every SELECT without FROM in tree reading idivm's one-row table instead (a copy; tree
    unchanged), each under an alias of its own (__idivm_one, __idivm_one_2, ...) so that merged
    subqueries never share one."""
    tree = tree.copy()
    for k, select in enumerate([s for s in tree.find_all(exp.Select) if not has_from(s)], 1):
        name = "__idivm_one" if k == 1 else f"__idivm_one_{k}"
        select.from_(exp.Table(this=exp.to_identifier(ONE_TABLE), db=exp.to_identifier(STORAGE_SCHEMA),
                               alias=exp.TableAlias(this=exp.to_identifier(name))), copy=False)
    return tree
