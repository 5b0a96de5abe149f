"""Scalar subqueries without an aggregate (lookups) as aggregates of their rows.

    (SELECT c.name FROM customers AS c WHERE c.id = o.cid)
 -> (SELECT idivm.single_row(count(*), max(c.name)) FROM customers AS c WHERE c.id = o.cid)

    (SELECT d.id FROM department AS d WHERE d.name = 'SALES' GROUP BY d.id)
 -> (SELECT idivm.single_row(count(DISTINCT d.id) + CASE WHEN count(*) > count(d.id) THEN 1 ELSE 0 END,
                             max(d.id)) FROM department AS d WHERE d.name = 'SALES')

Such a subquery's value is NULL when it finds no row, its row's value when it finds one, and an
error ("more than one row returned by a subquery used as an expression") when it finds more,
wherever the outer query evaluates it. Over the rows it finds, the count and MAX say the same: no
row gives (0, NULL), one gives (1, its value), and idivm.single_row (created with the catalog,
names.SINGLE_ROW_FUNCTION) returns the value or raises PostgreSQL's own error when the count is
over one. The rewritten subquery aggregates, so it is decorrelated and maintained as any nested
aggregate (scalar_subqueries.py): a maintenance that would make the view's query fail fails the
same way, and leaves the changes in the log. Grouped by its output alone (no aggregate, no
HAVING), the rows are the distinct values, NULL being one of them: counted as DISTINCT plus one for
NULLs.

The count must be of the subquery's own rows, and MAX an aggregate of the subquery: PostgreSQL puts
an aggregate at the level of the variables it reads, so a MAX over outer columns alone would
aggregate the outer query. Rewritten only where every column of the output is the subquery's own
(qualified by its FROM's aliases, or unqualified and a column of one of its base tables, which
PostgreSQL looks at first), and only for types that have MAX; others are left as they are and
refused by checks.py.
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import IdivmError
from ..names import SINGLE_ROW_FUNCTION, STORAGE_SCHEMA
from .clauses import from_item, has_from
from .schema import SchemaProvider

_CLAUSES = ("having", "distinct", "limit", "offset", "order", "qualify", "windows", "with", "with_", "laterals",
            "fetch")
# where a subquery is a value (not: FROM, IN, EXISTS, ANY / ALL, ARRAY(...), LATERAL)
_SCALAR = (exp.Select, exp.Binary, exp.Unary, exp.Paren, exp.Func, exp.Case, exp.If, exp.Alias, exp.Cast, exp.Where,
           exp.Having, exp.Group, exp.Ordered)
_NOT_SCALAR = (exp.Array, exp.Exists, exp.Any, exp.All, exp.In, exp.From, exp.Join, exp.Lateral)
# PostgreSQL types without MAX (any others with a b-tree ordering have it)
_NO_MAX = ("boolean", "uuid", "bytea", "json", "jsonb", "xml", "point", "line", "lseg", "box", "path", "polygon",
           "circle", "tsvector", "tsquery", "bit", "bit varying", "pg_lsn", "macaddr", "macaddr8", "txid_snapshot")


def single_row_subqueries(tree: exp.Expression, schema: SchemaProvider) -> exp.Expression:
    """Every scalar subquery of tree without an aggregate, as count and MAX (a copy; tree unchanged)."""
    tree = tree.copy()
    with_names = {_name(cte.args["alias"].this) for cte in tree.find_all(exp.CTE)}
    for select in reversed(list(tree.find_all(exp.Select))):  # the innermost first
        holder = select.parent
        if select is tree or not isinstance(holder, exp.Subquery) or holder.alias or not isinstance(holder.parent, _SCALAR) \
                or isinstance(holder.parent, _NOT_SCALAR):
            continue
        value = _lookup_value(select, schema, with_names)
        if value is None:
            continue
        group = select.args.get("group")
        rows = exp.Count(this=exp.Star())
        if group is not None:  # the distinct values, NULL one of them
            rows = exp.Add(this=exp.Count(this=exp.Distinct(expressions=[value.copy()])),
                           expression=exp.Case(ifs=[exp.If(this=exp.GT(this=exp.Count(this=exp.Star()),
                                                                        expression=exp.Count(this=value.copy())),
                                                            true=exp.Literal.number(1))],
                                               default=exp.Literal.number(0)))
            select.set("group", None)
        call = exp.Dot(this=exp.to_identifier(STORAGE_SCHEMA),
                       expression=exp.Anonymous(this=SINGLE_ROW_FUNCTION, expressions=[rows, exp.Max(this=value.copy())]))
        alias = select.expressions[0].alias
        select.set("expressions", [exp.alias_(call, alias) if alias else call])
    return tree


def _lookup_value(select: exp.Select, schema: SchemaProvider, with_names: set[str]) -> exp.Expression | None:
    """The output of a scalar subquery that may return several rows (one output, a FROM, no aggregate,
    at most a GROUP BY of that output), if it reads only the subquery's own columns and its type
    has MAX; else None."""
    if not has_from(select) or len(select.expressions) != 1 or any(select.args.get(k) for k in _CLAUSES):
        return None
    value = select.expressions[0].unalias()
    if isinstance(value, exp.Star) or any(isinstance(n, (exp.AggFunc, exp.Select, exp.Window)) for n in value.walk()):
        return None
    group = select.args.get("group")
    if group is not None and (len(group.expressions) != 1 or group.expressions[0] != value):
        return None
    tables = _base_tables(select, schema, with_names)
    if tables is None:
        return None
    for column in value.find_all(exp.Column):
        if column.table:
            if _name(column.args["table"]) not in tables:
                return None
        elif not any(_name(column.this) in t.column_names for t in tables.values()):
            return None
    if isinstance(value, exp.Column):
        name = _name(value.this)
        table = tables[_name(value.args["table"])] if value.table else \
            next(t for t in tables.values() if name in t.column_names)
        if table.type_of(name).split("(")[0] in _NO_MAX:  # (an array of any type has MAX)
            return None
    return value


def _base_tables(select: exp.Select, schema: SchemaProvider, with_names: set[str]) -> dict | None:
    """alias -> TableInfo for each FROM and JOIN item of the subquery; None where one is not a base
    table (a subquery or a WITH name, whose columns the schema does not know)."""
    tables = {}
    for item in [from_item(select)] + [j.this for j in select.args.get("joins") or []]:
        if not isinstance(item, exp.Table) or not item.name or (not item.db and _name(item.this) in with_names):
            return None
        try:
            table = schema.table(_name(item.args["db"]) if item.db else None, _name(item.this))
        except IdivmError:
            return None
        alias = item.args.get("alias")
        if alias is not None and alias.columns:  # columns renamed: not the table's names
            return None
        tables[_name(alias.this) if alias else table.name] = table
    return tables


def single_row_value(e: exp.Expression) -> exp.Expression | None:
    """The value argument of an idivm.single_row call (None if e is none): NULL exactly when the
    call is (scalar_subqueries.py joins a lookup compared in WHERE by an inner join)."""
    if isinstance(e, exp.Dot) and isinstance(e.expression, exp.Anonymous) and e.this.name == STORAGE_SCHEMA \
            and e.expression.name == SINGLE_ROW_FUNCTION and len(e.expression.expressions) == 2:
        return e.expression.expressions[1]
    return None


def _name(identifier: exp.Identifier) -> str:
    """An identifier as PostgreSQL resolves it: folded to lower case unless quoted."""
    return identifier.this if identifier.quoted else identifier.this.lower()
