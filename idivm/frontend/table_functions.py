"""generate_series over integer constants in FROM, read from idivm's table of integers
(names.SERIES_TABLE, created with the catalog and never written).

    FROM r, generate_series(1, 9, 2) AS g(x)
 -> FROM r, (SELECT __idivm_series_1.n AS x FROM idivm.series AS __idivm_series_1
             WHERE __idivm_series_1.n BETWEEN 1 AND 9 AND (__idivm_series_1.n - 1) % 2 = 0) AS g

A table function with constant arguments is a constant relation: the same rows whatever the
tables hold. Read from a table of the integers, it is a filtered scan of a table whose Δ is always
empty, with a key (each integer once, as generate_series gives each once), which every strategy
maintains as any other (as a SELECT without FROM reads idivm.one, one_row.py). The subquery, which
only filters and projects, is then merged into the query (build_plan.py).

Refused by name: other table functions, arguments that are not integer constants (a column would
make it LATERAL; a timestamp series has no finite table), a step of 0 (PostgreSQL's error), values
outside the table (SERIES_FIRST to SERIES_LAST), WITH ORDINALITY and column lists of two names.
"""
from __future__ import annotations

from sqlglot import exp

from ..names import SERIES_COLUMN, SERIES_FIRST, SERIES_LAST, SERIES_TABLE, STORAGE_SCHEMA
from .checks import refuse

ALIAS = "__idivm_series_{}"


def read_series(tree: exp.Expression) -> exp.Expression:
    """Every generate_series over integer constants in a FROM or JOIN of tree, as a subquery over
    idivm's table of integers (a copy; tree unchanged)."""
    if not any(isinstance(t.this, exp.ExplodingGenerateSeries) for t in tree.find_all(exp.Table)):
        return tree
    tree = tree.copy()
    calls = [t for t in tree.find_all(exp.Table) if isinstance(t.this, exp.ExplodingGenerateSeries)]
    for k, table in enumerate(calls, 1):
        table.replace(_over_series(table, ALIAS.format(k)))
    return tree


def _integer(e: exp.Expression | None) -> int | None:
    if isinstance(e, exp.Paren):
        return _integer(e.this)
    if isinstance(e, exp.Neg):
        value = _integer(e.this)
        return None if value is None else -value
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        return int(e.this)
    return None


def _over_series(table: exp.Table, name: str) -> exp.Subquery:
    call = table.this
    start, stop = _integer(call.args.get("start")), _integer(call.args.get("end"))
    step = _integer(call.args["step"]) if call.args.get("step") is not None else 1
    if start is None or stop is None or step is None:
        raise refuse(f"{call.sql('postgres')} in FROM: generate_series over anything but integer constants")
    if step == 0:
        raise refuse(f"{call.sql('postgres')}: a step of 0 (PostgreSQL refuses it)")
    alias = table.args.get("alias")
    columns = alias.columns if alias is not None else []
    if len(columns) > 1 or table.args.get("ordinality"):
        raise refuse(f"{call.sql('postgres')} WITH ORDINALITY, or with more than one column name")
    table_name = alias.name if alias is not None and alias.name else "generate_series"
    column = columns[0].name if columns else table_name
    n = exp.Column(this=exp.to_identifier(SERIES_COLUMN), table=exp.to_identifier(name))
    if (stop - start) * step < 0:
        where: exp.Expression = exp.false()  # no values: generate_series(5, 1) is empty
    else:
        lo, hi = min(start, stop), max(start, stop)
        if lo < SERIES_FIRST or hi > SERIES_LAST:
            raise refuse(f"{call.sql('postgres')}: values outside {SERIES_FIRST} to {SERIES_LAST}, the integers of "
                         f"{STORAGE_SCHEMA}.{SERIES_TABLE}")
        where = exp.Between(this=n.copy(), low=exp.Literal.number(lo), high=exp.Literal.number(hi))
        if abs(step) != 1:
            offset = exp.Paren(this=exp.Sub(this=n.copy(), expression=exp.Literal.number(start)))
            where = exp.and_(where, exp.EQ(this=exp.Mod(this=offset, expression=exp.Literal.number(step)),
                                           expression=exp.Literal.number(0)))
    body = exp.select(exp.alias_(n, column, quoted=bool(columns and columns[0].quoted))).from_(
        exp.Table(this=exp.to_identifier(SERIES_TABLE), db=exp.to_identifier(STORAGE_SCHEMA),
                  alias=exp.TableAlias(this=exp.to_identifier(name)))).where(where)
    return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(table_name)))
