"""Program trees as Spark SQL, through sqlglot's Spark dialect, with a checked list of what is
allowed: constructs whose meaning is the same in Spark and in PostgreSQL (FAITHFUL). Anything
else is refused by name before Spark runs, never converted into something that computes a
different value: `/` of floats, and of numerics other than as an output (Spark's decimal division
has its own result scale; PostgreSQL's depends on the values, numeric_division.py);
CAST(x AS numeric) has no precision in PostgreSQL and DECIMAL(10,0) in Spark; array_agg(x ORDER
BY ...) loses its ORDER BY; casts to text print numbers with fractions and dates differently.
What the column types settle is rewritten or taken (they come from the inputs, spark_sql's
`column_type`): integer `/` as Spark's DIV cast back to the operands' type, numeric `/` as an
output through numeric_division.py, casts to text of
integers, text and booleans, `||` of texts."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Callable, NamedTuple

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from ...errors import UnsupportedQuery
from ...program import relations as R
from . import numeric_division
from .reads import carried

FAITHFUL = (
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Subquery, exp.Union, exp.Table,
    exp.TableAlias, exp.Identifier, exp.Column, exp.Alias, exp.Star, exp.Literal, exp.Null, exp.Boolean,
    exp.Paren, exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Is,
    exp.NullSafeEQ, exp.NullSafeNEQ, exp.In, exp.Between, exp.Exists, exp.Coalesce, exp.Case, exp.If,
    exp.Like,  # `%` and `_`, backslash the escape, case-sensitive, `%` across newlines: in both
    exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.Neg, exp.Abs, exp.Greatest, exp.Least,
    exp.Count, exp.Sum, exp.Min, exp.Max, exp.Distinct, exp.Tuple,
    exp.DataType, exp.Cast, exp.Nullif,
)
EXACT_CASTS = {exp.DataType.Type.INT, exp.DataType.Type.BIGINT, exp.DataType.Type.SMALLINT,
               exp.DataType.Type.BOOLEAN, exp.DataType.Type.DATE, exp.DataType.Type.DOUBLE}


# types whose text both engines print alike (dates depend on PostgreSQL's DateStyle, numbers with
# fractions on each engine's notation, character(n) on padding): a cast of such a column to text is
# computed on Spark wherever it stands
TEXT_ALIKE = re.compile(r"^(smallint|integer|bigint|text|boolean|character varying(\(\d+\))?)$")

# column_type(relation, column) -> the column's PostgreSQL type as format_type prints it, or None
ColumnType = Callable[[R.Relation, str], "str | None"]


def _column_types(tree: exp.Expression, relations: dict[str, R.Relation], column_type: ColumnType | None
                  ) -> tuple[dict[int, str], set[int]]:
    """The PostgreSQL type of each column node of `tree` (bound: its tables named as `relations`
    maps them back) that reads a relation's column, directly or through derived tables and
    UNIONs that pass it on as it is, by id of the node; resolved through each query scope's sources.
    And the ids of those whose values Spark holds as their text (a base table's or an i-diff's
    column of a carried type, reads.py; a map's or cache's columns come as decimals)."""
    if column_type is None:
        return {}, set()

    def output_type(scope, name: str, depth: int) -> tuple[str, bool] | None:
        """The type of a derived table's output `name`: a column it passes on as it is; in a UNION,
        the same in every branch."""
        if depth > 8:
            return None
        if isinstance(scope.expression, exp.SetOperation):
            types = {output_type(branch, name, depth + 1) for branch in scope.set_operation_scopes}
            return types.pop() if len(types) == 1 else None
        if isinstance(scope.expression, exp.Select):
            for e in scope.expression.expressions:
                if e.alias_or_name == name:
                    inner = e.this if isinstance(e, exp.Alias) else e
                    return type_of(scope, inner, depth + 1) if isinstance(inner, exp.Column) else None
        return None

    def type_of(scope, column: exp.Column, depth: int = 0) -> tuple[str, bool] | None:
        if column.table:
            source = scope.sources.get(column.table)
        else:  # unqualified: the scope's one source, if it has one
            source = next(iter(scope.sources.values())) if len(scope.sources) == 1 else None
        if isinstance(source, exp.Table):
            rel = relations.get(source.name)
            sql_type = column_type(rel, column.name) if rel is not None else None
            return None if sql_type is None else (sql_type, rel.kind != R.VIEW and carried(sql_type))
        return output_type(source, column.name, depth) if isinstance(source, Scope) else None

    out: dict[int, str] = {}
    as_text: set[int] = set()
    try:
        for scope in traverse_scope(tree):
            for column in scope.columns:
                typed = type_of(scope, column)
                if typed is not None:
                    out[id(column)] = typed[0]
                    if typed[1]:
                        as_text.add(id(column))
    except Exception:  # a tree sqlglot's scopes cannot take: the columns not yet typed stay untyped
        pass
    return out, as_text


COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Between,
               exp.In)
# the scale Spark compares unconstrained numerics at: 20 digits before the point, 18 after
COMPARED_DECIMAL = (38, 18)
_FITS = f"^-?[0-9]{{1,{COMPARED_DECIMAL[0] - COMPARED_DECIMAL[1]}}}([.][0-9]{{1,{COMPARED_DECIMAL[1]}}})?$"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _raise(message: str, value: exp.Expression | None = None) -> exp.Expression:
    """Spark's raise_error with an "idivm: " message (staging._refusal makes it one line)."""
    parts = [exp.Literal.string("idivm: " + message)] + ([exp.cast(value.copy(), "text")] if value is not None else [])
    text = exp.Concat(expressions=parts, safe=False) if len(parts) > 1 else parts[0]
    return exp.Anonymous(this="raise_error", expressions=[text])


def _checked(column: exp.Column, pattern: str, to: exp.DataType, what: str,
             value: exp.Expression | None = None) -> exp.Expression:
    """A carried value's text (or `value`, an expression of it) as the Spark type `to` that holds it
    exactly, where the text matches `pattern`; any other value (more digits than the type holds,
    NaN, infinity, a date before year 1 or in another DateStyle) fails the Spark job with one line
    naming the column and the value, rather than being rounded or parsed into a comparison that
    could then go the other way."""
    name = R.imaged_column(column.name) or column.name
    fits = exp.Or(this=exp.Is(this=column.copy(), expression=exp.Null()),
                  expression=exp.RegexpLike(this=column.copy(), expression=exp.Literal.string(pattern)))
    refused = _raise(f"the Spark engine compares {what}, and column {name} holds ", column)
    return exp.Case(ifs=[exp.If(this=fits, true=exp.Cast(this=(value or column).copy(), to=to))], default=refused)


def _checked_decimal(column: exp.Column) -> exp.Expression:
    """A carried unconstrained numeric, compared as decimal(38,18)."""
    decimal = exp.DataType.build(f"DECIMAL({COMPARED_DECIMAL[0]}, {COMPARED_DECIMAL[1]})")
    return _checked(column, _FITS, decimal, f"numeric values as decimal{COMPARED_DECIMAL}")


# a timestamp's text in PostgreSQL's ISO DateStyle (the JDBC driver's; the default of sessions), years 1-9999
_ISO_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6})?$"
_ISO_LITERAL = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2}([.]\d{1,6})?)?)?$")
TIMESTAMP_NTZ = exp.DataType.build("TIMESTAMP_NTZ", dialect="spark")


def _checked_timestamp(column: exp.Column) -> exp.Expression:
    """A carried timestamp (without time zone) as Spark's TIMESTAMP_NTZ: both hold microseconds
    of a wall clock, no zone involved."""
    return _checked(column, _ISO_TIMESTAMP, TIMESTAMP_NTZ, "timestamps written as ISO dates of years 1-9999")


# a timestamptz's text as the Spark engine's reads give it (reads.py pins their TimeZone to UTC)
_UTC_TIMESTAMP = _ISO_TIMESTAMP.removesuffix("$") + "[+]00$"


def _checked_instant(column: exp.Column) -> exp.Expression:
    """A carried timestamptz, read as its UTC text (`+00`), as Spark's TIMESTAMP_NTZ of that UTC wall
    clock: instants compare as their UTC wall clocks do, to the microsecond."""
    wall = exp.Substring(this=column.copy(), start=exp.Literal.number(1),
                         length=exp.Sub(this=exp.Length(this=column.copy()), expression=exp.Literal.number(3)))
    return _checked(column, _UTC_TIMESTAMP, TIMESTAMP_NTZ, "timestamps with time zone read as ISO dates of years "
                    "1-9999 in UTC", wall)


# an ISO timestamp with its offset, written alike for PostgreSQL and Python's fromisoformat (no more
# than microseconds, which PostgreSQL would round and Python refuse)
_ZONED_LITERAL = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}([.]\d{1,6})?)?(Z|[+-]\d{2}(:\d{2})?)$")


def _instant_literal(e: exp.Expression) -> exp.Literal | None:
    """The UTC wall clock (ISO text) of a timestamptz literal written with its offset (TIMESTAMPTZ
    '2024-01-01 10:00+02', '2024-01-01T08:00:00Z'), which PostgreSQL reads as one instant whatever
    the session's TimeZone; None for any other expression, a literal without an offset among them."""
    if isinstance(e, exp.Cast) and e.to.this == exp.DataType.Type.TIMESTAMPTZ:
        e = e.this
    if not (isinstance(e, exp.Literal) and e.is_string and _ZONED_LITERAL.match(e.this)):
        return None
    try:
        instant = datetime.fromisoformat(e.this)
    except ValueError:
        return None
    if instant.tzinfo is None or not 1 <= instant.astimezone(timezone.utc).year <= 9999:
        return None
    return exp.Literal.string(instant.astimezone(timezone.utc).replace(tzinfo=None).isoformat(" "))


def _timestamp_literal(e: exp.Expression) -> exp.Literal | None:
    """The ISO text of a timestamp literal a timestamp is compared with ('2024-01-01',
    TIMESTAMP '2024-01-01 10:00'), or None."""
    if isinstance(e, exp.Cast) and e.to.this == exp.DataType.Type.TIMESTAMP:
        e = e.this
    return e if isinstance(e, exp.Literal) and e.is_string and _ISO_LITERAL.match(e.this) else None


def _passed_on(column: exp.Column) -> exp.Select | None:
    """The SELECT `column` is an output of, as it is (aliased or not), if it is one whose outputs
    leave Spark or are read by name: the query itself, a derived table or CTE (whose readers are
    checked where they use it), an EXISTS subquery (outputs unread). Not an IN or a scalar
    subquery's: its value is compared where it stands."""
    node = column.parent if isinstance(column.parent, exp.Alias) else column
    select = node.parent
    if not (isinstance(select, exp.Select) and any(e is node for e in select.expressions)):
        return None
    up: exp.Expression = select
    while isinstance(up.parent, exp.SetOperation):  # a UNION branch: as the UNION stands
        up = up.parent
    if isinstance(up.parent, exp.Subquery):
        up = up.parent
    where = up.parent
    if where is None or isinstance(where, (exp.From, exp.Join, exp.CTE, exp.Exists)):
        return select
    return None


def _deduplicates(select: exp.Select) -> bool:
    """Whether rows that PostgreSQL calls equal are merged by this SELECT (DISTINCT, or a branch of
    a UNION / EXCEPT / INTERSECT without ALL): a carried value's text would keep 1.0 and 1.00 apart."""
    up = select.parent if isinstance(select.parent, exp.Subquery) else select
    return bool(select.args.get("distinct")) or (isinstance(up.parent, exp.SetOperation)
                                                 and bool(up.parent.args.get("distinct")))


def _compared(column: exp.Column, sql_type: str, types: dict[int, str], as_text: set[int], taken: set[int]) -> bool:
    """Whether the comparison `column` (held as text) stands in computes on Spark as in PostgreSQL,
    rewritten in place where it needs to be (the nodes written added to `taken`): uuids with uuids
    or canonical literals as they are; unconstrained numerics as _checked_decimal; timestamps
    with timestamps or ISO literals as _checked_timestamp, the literals as TIMESTAMP_NTZ;
    timestamptz with timestamptz or literals with an offset as _checked_instant, all as UTC."""
    parent = column.parent
    up = parent.parent if isinstance(parent, exp.Tuple) else parent
    others = [o for o in up.iter_expressions() if o is not parent and o is not column]
    if isinstance(parent, exp.Tuple):  # (a, b) = (c, d): the other rows' items at the column's place
        at = next(i for i, e in enumerate(parent.expressions) if e is column)
        others = [o for o in others if not isinstance(o, exp.Tuple)] + [
            t.expressions[at] for t in up.iter_expressions()
            if isinstance(t, exp.Tuple) and t is not parent and len(t.expressions) == len(parent.expressions)]

    def same_type(o: exp.Expression) -> bool:  # another column held as text of this type, or one checked already
        return (id(o) in as_text and types[id(o)] == sql_type) or id(o) in taken or isinstance(o, exp.Null)

    if sql_type == "uuid":
        return all(same_type(o) or (isinstance(o, exp.Literal) and o.is_string and bool(_UUID.match(o.this)))
                   for o in others)
    if sql_type == "numeric":
        if any(isinstance(o, exp.Literal) and o.is_string for o in others):
            return False
        checked = _checked_decimal(column)
    elif sql_type == "timestamp without time zone":
        if not all(same_type(o) or _timestamp_literal(o) is not None for o in others):
            return False
        for o in others:  # the literals as TIMESTAMP_NTZ too (Spark's TIMESTAMP has a zone)
            literal = _timestamp_literal(o)
            if literal is not None:
                typed = exp.Cast(this=literal.copy(), to=TIMESTAMP_NTZ.copy())
                taken.add(id(typed))
                o.replace(typed)
        checked = _checked_timestamp(column)
    elif sql_type == "timestamp with time zone":
        if not all(same_type(o) or _instant_literal(o) is not None for o in others):
            return False
        for o in others:  # the literals as their UTC wall clocks
            literal = _instant_literal(o)
            if literal is not None:
                typed = exp.Cast(this=literal, to=TIMESTAMP_NTZ.copy())
                taken.add(id(typed))
                o.replace(typed)
        checked = _checked_instant(column)
    else:
        return False
    taken.update(id(n) for n in checked.walk())
    column.replace(checked)
    return True


def _carried_values(tree: exp.Expression, types: dict[int, str], as_text: set[int], relations: dict[str, R.Relation],
                    column_type: ColumnType | None) -> set[int]:
    """What Spark may do with a value it holds as PostgreSQL's text (reads.py): pass it on as an
    output (back into PostgreSQL as that very value), test it for NULL, count it, cast it to text;
    compare it, where the type's order is its text's (uuid, as `=`, `<`, IN a list, or in groups
    and DISTINCT) or where an exact Spark type holds it (an unconstrained numeric, compared as
    _checked_decimal; a timestamp without time zone, with another or with an ISO literal, as
    _checked_timestamp; a timestamptz, with another or with a literal with an offset, as
    _checked_instant; written in place here). Anything else is refused by name. Returns the ids
    of the nodes it wrote or took."""
    taken: set[int] = set()
    columns = list(tree.find_all(exp.Column))
    truncated = _truncated_timestamps(columns, types, as_text, taken)
    for column in columns:
        if id(column) in truncated:
            continue
        if id(column) not in as_text:
            if id(column) not in types and column_type is not None and any(
                    rel.kind != R.VIEW and carried(column_type(rel, column.name) or "integer") for rel in relations.values()):
                raise UnsupportedQuery(f"the Spark engine cannot tell which column {column.sql('postgres')} reads, and "
                                       "a column of that name is read as its text; maintain this view with --engine postgres")
            continue
        sql_type, parent = types[id(column)], column.parent
        up = parent.parent if isinstance(parent, exp.Tuple) else parent
        ordered_as_text = sql_type == "uuid"
        select = _passed_on(column)
        if select is not None and (ordered_as_text or not _deduplicates(select)):
            continue
        if isinstance(parent, (exp.Is, exp.Count)) and column is parent.this:
            continue
        if isinstance(parent, exp.Anonymous) and parent.name == numeric_division.FUNCTION:  # _numeric_divisions
            continue
        if isinstance(parent, exp.Cast) and parent.to.this == exp.DataType.Type.TEXT:
            taken.add(id(parent))
            continue
        if ordered_as_text and isinstance(parent, exp.Group):
            continue
        if isinstance(up, COMPARISONS) and not up.args.get("query") and _compared(column, sql_type, types, as_text, taken):
            continue
        raise UnsupportedQuery(
            f"the Spark engine reads {column.name} ({sql_type}) as its text, and cannot compute "
            f"{(up or column).sql('postgres')[:80]} on it exactly as PostgreSQL does (it passes such values on, "
            "tests them for NULL and compares unconstrained numerics, uuids and timestamps); maintain this view with "
            "--engine postgres")
    return taken


# date_trunc's units (as PostgreSQL spells them, upper case) that Spark's DATE_TRUNC truncates a
# TIMESTAMP_NTZ to alike: the week to its Monday, the quarter to its first month, in both
TRUNC_UNITS = {**{u: u for u in ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH",
                                 "QUARTER", "YEAR")},
               **{u + "S": u for u in ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH",
                                       "YEAR")}}


def _truncated_timestamps(columns: list[exp.Column], types: dict[int, str], as_text: set[int],
                          taken: set[int]) -> set[int]:
    """date_trunc(unit, t) of a carried timestamp without time zone, for the units in TRUNC_UNITS,
    as Spark's DATE_TRUNC of _checked_timestamp(t), cast back to the wall clock it truncated (Spark
    truncates in the session's time zone, UTC, and returns a zoned TIMESTAMP), in place: a
    TIMESTAMP_NTZ, which Spark then computes with as with any value of its own (compares, groups,
    hands back to PostgreSQL). Its nodes are added to `taken`; returns the ids of the columns
    rewritten."""
    done: set[int] = set()
    for column in columns:
        trunc = column.parent
        if not (id(column) in as_text and types[id(column)] == "timestamp without time zone"
                and isinstance(trunc, exp.TimestampTrunc) and column is trunc.this
                and isinstance(trunc.args.get("unit"), exp.Var) and trunc.args.get("zone") is None
                and trunc.args["unit"].name.upper() in TRUNC_UNITS):
            continue
        trunc.set("unit", exp.var(TRUNC_UNITS[trunc.args["unit"].name.upper()]))
        checked = _checked_timestamp(column)
        column.replace(checked)
        wall = exp.Cast(this=trunc.copy(), to=TIMESTAMP_NTZ.copy())  # Spark's DATE_TRUNC gives a TIMESTAMP (UTC)
        trunc.replace(wall)
        taken.update(id(n) for n in wall.walk() if not isinstance(n, exp.Column))
        done.add(id(column))
    return done


def _printed_alike(tree: exp.Expression, types: dict[int, str]) -> set[int]:
    """ids of the casts to text whose operand is a column of a type in TEXT_ALIKE."""
    return {id(c) for c in tree.find_all(exp.Cast) if c.to.this == exp.DataType.Type.TEXT
            and isinstance(c.this, exp.Column) and TEXT_ALIKE.match(types.get(id(c.this), ""))}


TEXTS = re.compile(r"^(text|character varying(\(\d+\))?)$")


def _is_text(e: exp.Expression, types: dict[int, str]) -> bool:
    """Whether `e` is a text PostgreSQL and Spark both hold as the same characters: a string
    literal, a text or varchar column (not character(n), whose padding functions strip)."""
    if isinstance(e, exp.Paren):
        return _is_text(e.this, types)
    return (isinstance(e, exp.Literal) and e.is_string) or (isinstance(e, exp.Column) and bool(TEXTS.match(types.get(id(e), ""))))


def _text_concatenations(tree: exp.Expression, types: dict[int, str], alike: set[int]) -> set[int]:
    """ids of the `||` whose operands are all text: string literals, text columns, casts to text
    printed alike (`alike`), other such `||`. Both engines concatenate them alike, NULL if any is
    NULL; `||` of other types converts them to text first, which prints them as each engine does."""
    def text(e: exp.Expression) -> bool:
        if isinstance(e, exp.Paren):
            return text(e.this)
        if isinstance(e, exp.DPipe):
            return text(e.this) and text(e.expression)
        return _is_text(e, types) or id(e) in alike

    return {id(d) for d in tree.find_all(exp.DPipe) if text(d)}


INTEGERS = {"smallint": 0, "integer": 1, "bigint": 2}  # PostgreSQL's integer types, narrowest first
INTEGER_CASTS = {exp.DataType.Type.SMALLINT: "smallint", exp.DataType.Type.INT: "integer",
                 exp.DataType.Type.BIGINT: "bigint"}


def _integer_type(e: exp.Expression, types: dict[int, str]) -> str | None:
    """The integer type PostgreSQL gives `e`, if it is built of integers only: integer columns and
    literals, + - * % and integer / of them, COALESCE of them (and NULLs), casts to an integer type;
    None for anything else."""
    if isinstance(e, exp.Paren):
        return _integer_type(e.this, types)
    if isinstance(e, exp.Column):
        return types.get(id(e)) if types.get(id(e)) in INTEGERS else None
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        return "integer" if int(e.this) < 2**31 else "bigint" if int(e.this) < 2**63 else None
    if isinstance(e, exp.Neg):
        return _integer_type(e.this, types)
    if isinstance(e, exp.Cast):
        return INTEGER_CASTS.get(e.to.this)
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.Div)):
        left, right = _integer_type(e.this, types), _integer_type(e.expression, types)
        if left is None or right is None:
            return None
        return max(left, right, key=INTEGERS.get)
    if isinstance(e, exp.Coalesce):  # the widest of its integer arguments; a bare NULL takes their type
        kinds = [_integer_type(a, types) for a in (e.this, *e.expressions) if not isinstance(a, exp.Null)]
        if not kinds or None in kinds:
            return None
        return max(kinds, key=INTEGERS.get)
    return None


def _integer_divisions(tree: exp.Expression, types: dict[int, str]) -> set[int]:
    """Integer / as Spark computes it as PostgreSQL does, in place: `a / b` of integers truncates
    toward zero in PostgreSQL and is a double in Spark; Spark's `a DIV b` truncates as Java's long
    division does (toward zero), and the cast back to the operands' type raises where PostgreSQL's
    result is out of its range (-2147483648 / -1), as ANSI mode makes casts do. Returns the ids of
    the DIVs written, the only ones the check takes (a DIV of another origin is refused)."""
    results = {id(d): t for d in tree.find_all(exp.Div) if (t := _integer_type(d, types)) is not None}
    written: set[int] = set()

    def rewritten(value):
        if not (isinstance(value, exp.Div) and id(value) in results):
            return value
        div = exp.IntDiv(this=value.this, expression=value.expression)
        written.add(id(div))
        return exp.cast(div, results[id(value)], copy=False)

    _replace_children_first(tree, rewritten)  # a division inside a division: the inner one first
    return written


DECIMALS = re.compile(r"^numeric\(\d+,\d+\)$")  # every value's display scale is the declared one


def _numeric_divisions(tree: exp.Expression, types: dict[int, str], as_text: set[int]) -> set[int]:
    """numeric `/` as PostgreSQL computes it, in place, where the quotient is an output of the query
    (numeric_division.py: its scale depends on the values, so Spark holds it as its text, which
    can only leave Spark): `idivm_numeric_div(a, b)` of the operands' texts. An operand must carry
    PostgreSQL's display scale in its text: a numeric literal, an integer expression, a
    `numeric(p,s)` column (Spark's decimal(p,s) prints s decimals) and `+`, `-`, `*` of those
    (Spark's decimal scale of each is PostgreSQL's, precision loss being off), or an unconstrained
    numeric read as its text. Returns the ids of the nodes written (the function, its casts)."""
    written: set[int] = set()

    def decimal(e: exp.Expression) -> bool:
        """Spark holds e as a decimal or integer whose text is PostgreSQL's."""
        if isinstance(e, (exp.Paren, exp.Neg)):
            return decimal(e.this)
        if isinstance(e, exp.Literal):
            return not e.is_string
        if isinstance(e, exp.Column):
            return id(e) not in as_text and (types.get(id(e)) in INTEGERS or bool(DECIMALS.match(types.get(id(e), ""))))
        if isinstance(e, (exp.Add, exp.Sub, exp.Mul)):
            return decimal(e.this) and decimal(e.expression)
        return _integer_type(e, types) is not None

    def operand(e: exp.Expression) -> exp.Expression | None:
        if isinstance(e, exp.Column) and id(e) in as_text and types.get(id(e)) == "numeric":
            return e
        if not decimal(e):
            return None
        cast = exp.cast(e, exp.DataType.build("text"), copy=False)
        written.add(id(cast))
        return cast

    def rewritten(value):
        if not isinstance(value, exp.Div) or _integer_type(value, types) is not None or not _leaves_spark(value):
            return value
        a, b = operand(value.this), operand(value.expression)
        if a is None or b is None:
            return value
        call = exp.Anonymous(this=numeric_division.FUNCTION, expressions=[a, b])
        written.add(id(call))
        return call

    _replace_children_first(tree, rewritten)
    return written


def _leaves_spark(node: exp.Expression) -> bool:
    """Whether `node` is an output of the query itself (or of a branch of it, a UNION ALL's), as it
    is: its value leaves Spark into PostgreSQL, and nothing in Spark reads it."""
    while isinstance(node.parent, exp.Paren):
        node = node.parent
    if isinstance(node.parent, exp.Alias):
        node = node.parent
    select = node.parent
    if not (isinstance(select, exp.Select) and any(e is node for e in select.expressions)) or _deduplicates(select):
        return False
    up: exp.Expression = select
    while isinstance(up.parent, exp.SetOperation):
        up = up.parent
    return up.parent is None


def _replace_children_first(tree: exp.Expression, replace) -> None:
    """Each node of `tree` that replace(node) returns another node for, replaced by it, in place:
    children before their parents (so that a parent's replacement holds its children's), and in
    every parent's arguments rather than through transform(), since a program tree may hold one
    node in two places (a node knows one parent)."""
    for node in reversed(list(tree.walk())):
        for key, value in list(node.args.items()):
            if isinstance(value, list):
                new = [replace(v) if isinstance(v, exp.Expression) else v for v in value]
                if any(n is not v for n, v in zip(new, value)):
                    node.set(key, new)
            elif isinstance(value, exp.Expression):
                new = replace(value)
                if new is not value:
                    node.set(key, new)


def _at_least(e: exp.Expression, low: int) -> exp.Expression:
    """greatest(e, low), but NULL where e is NULL (GREATEST skips NULLs, in both engines)."""
    return exp.Case(ifs=[exp.If(this=exp.GTE(this=e.copy(), expression=exp.Literal.number(low)), true=e.copy()),
                         exp.If(this=exp.LT(this=e.copy(), expression=exp.Literal.number(low)),
                                true=exp.Literal.number(low))])


def _substrings(tree: exp.Expression, types: dict[int, str]) -> set[int]:
    """substring(s FROM a [FOR n]) of a text as PostgreSQL counts it, in place: characters from
    position a (1 the first; a below 1 counts positions before the text, so `substring('abc', 0, 2)`
    is 'a'), n of them from a, an error for a negative n. Spark's SUBSTRING(s, p, l) takes p >= 1
    and l >= 0 alike (a p below 1 it counts from the end), so p = greatest(a, 1) and l = the
    characters left of a + n after p (NULL where a or n is). Both count characters (code points), not bytes. Returns the
    ids of the nodes written (taken by _check)."""
    written: set[int] = set()

    def rewritten(node):
        if not (isinstance(node, exp.Substring) and _is_text(node.this, types)
                and _integer_type(node.args["start"], types) is not None
                and (node.args.get("length") is None or _integer_type(node.args["length"], types) is not None)):
            return node
        start = node.args["start"]
        first = _at_least(start, 1)
        args = {"this": node.this, "start": first}
        if node.args.get("length") is not None:
            n = node.args["length"]
            left = _at_least(exp.Sub(this=exp.Add(this=exp.paren(start.copy()), expression=exp.paren(n.copy())),
                                     expression=first.copy()), 0)
            refused = _raise("negative substring length not allowed: ", n)
            written.update(id(x) for x in refused.walk())
            args["length"] = exp.Case(ifs=[exp.If(this=exp.LT(this=n.copy(), expression=exp.Literal.number(0)),
                                                  true=refused)], default=left)
        out = exp.Substring(**args)
        written.add(id(out))
        return out

    _replace_children_first(tree, rewritten)
    return written


# EXTRACT fields of a date that Spark gives as PostgreSQL does (an integer for PostgreSQL's integral
# numeric); `dow` counts from Sunday = 0 in PostgreSQL and from Sunday = 1 in Spark
DATE_FIELDS = {"YEAR": "YEAR", "MONTH": "MONTH", "DAY": "DAY", "QUARTER": "QUARTER", "WEEK": "WEEK",
               "ISODOW": "DAYOFWEEK_ISO", "DOY": "DOY", "ISOYEAR": "YEAROFWEEK", "DOW": "DAYOFWEEK"}


def _date_fields(tree: exp.Expression, types: dict[int, str]) -> set[int]:
    """EXTRACT(field FROM d) of a date column, for the fields in DATE_FIELDS, in place. Dates before
    year 1 (PostgreSQL has no year 0, Spark's proleptic calendar has) fail the Spark job, naming
    the value. Returns the ids of the nodes written."""
    written: set[int] = set()

    def rewritten(node):
        unit = node.this.name.upper() if isinstance(node, exp.Extract) and isinstance(node.this, exp.Var) else None
        if unit not in DATE_FIELDS or not (isinstance(node.expression, exp.Column)
                                           and types.get(id(node.expression)) == "date"):
            return node
        d = node.expression
        field = exp.Extract(this=exp.var(DATE_FIELDS[unit]), expression=d.copy())
        value = exp.Sub(this=field, expression=exp.Literal.number(1)) if unit == "DOW" else field
        early = exp.LT(this=d.copy(), expression=exp.cast(exp.Literal.string("0001-01-01"), "date"))
        refused = _raise("the Spark engine's calendar has a year 0, and a date before year 1 is ", d)
        written.update(id(x) for x in refused.walk())
        written.update((id(field), id(field.this)))
        return exp.Case(ifs=[exp.If(this=early, true=refused)], default=value)

    _replace_children_first(tree, rewritten)
    return written


# How Spark may compute lower() and upper() of a text column, by the columns' collations (collations.py
# reads them): PostgreSQL maps only A-Z under the C collation, and each character by the locale under
# any other, which maps A-Z to a-z as C does except Turkish and Azeri (I to dotless ı). Spark's own
# LOWER maps by Java's full Unicode rules, so it computes TRANSLATE over A-Z instead: exact for every
# value under C, and under another locale exact for ASCII text, any other value failing the Spark
# job with one line.
CASE_C, CASE_ASCII = "c", "ascii"
_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"


class TextRules(NamedTuple):
    """What Spark may compute on the text of a view's columns, by their collations (collations.py):
    lower/upper (`case`: CASE_C, CASE_ASCII, or None); ordering comparisons, MIN/MAX, GREATEST and
    LEAST (`ordered`: Spark orders text by code point, which PostgreSQL does under C, POSIX and
    C.UTF-8 only); anything at all (`deterministic`: a nondeterministic collation, case-insensitive
    say, makes even = differ from Spark's byte equality)."""

    case: str | None = None
    ordered: bool = False
    deterministic: bool = True


_VARYING_TEXT = r"text|character varying(\(\d+\))?"  # what lower() and upper() take here
_TEXT_TYPE = re.compile(rf"^({_VARYING_TEXT}|character(\(\d+\))?)$")
_TEXT_VALUED = (exp.Lower, exp.Upper, exp.Substring, exp.Concat, exp.DPipe, exp.Trim)


def _check_text(tree: exp.Expression, types: dict[int, str], text: TextRules) -> None:
    """Refuse by name what Spark would compute on text otherwise than PostgreSQL does: a character(n)
    column compared with anything but another of the same n, NULL or a string literal (Spark reads
    it padded; PostgreSQL ignores the padding); under the columns' collations (TextRules), ordering
    where PostgreSQL's order is not the code points', and anything on a view reading a column of a
    nondeterministic collation."""
    for node in tree.find_all(*COMPARISONS):  # character(n) arrives padded to n, which PostgreSQL ignores
        sides = [e.unnest() for e in node.iter_expressions()]
        padded = {types[id(c)] for e in sides for c in ([e] if isinstance(e, exp.Column) else e.find_all(exp.Column)
                                                         if isinstance(e, exp.Tuple) else [])
                  if types.get(id(c), "").startswith("character(")}
        if padded and (len(padded) > 1 or any(isinstance(e, exp.Tuple) for e in sides) or not all(
                (isinstance(e, exp.Literal) and e.is_string) or isinstance(e, exp.Null)
                or (isinstance(e, exp.Column) and types.get(id(e)) in padded) for e in sides)):
            raise UnsupportedQuery(
                f"the Spark engine reads character(n) padded to n, and PostgreSQL compares "
                f"{node.sql('postgres')[:80]} without the padding; maintain this view with --engine postgres")
    if not text.deterministic and any(_TEXT_TYPE.match(t) for t in types.values()):
        raise UnsupportedQuery("the Spark engine compares text byte by byte, and the view reads a column of a "
                               "nondeterministic collation; maintain this view with --engine postgres")
    if text.ordered:
        return

    def textual(e: exp.Expression) -> bool:
        e = e.unnest()
        return (isinstance(e, exp.Column) and bool(_TEXT_TYPE.match(types.get(id(e), "")))) or \
            (isinstance(e, exp.Literal) and e.is_string) or isinstance(e, _TEXT_VALUED)

    for node in tree.find_all(exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between, exp.Min, exp.Max, exp.Greatest,
                              exp.Least):
        if any(textual(e) for e in node.iter_expressions()):
            raise UnsupportedQuery(
                f"the Spark engine orders text by its code points, and PostgreSQL orders "
                f"{node.sql('postgres')[:80]} by the collation of its text, which is not C; maintain this view with "
                "--engine postgres")


def _case_mapped(tree: exp.Expression, types: dict[int, str], as_text: set[int], mapping: str | None) -> set[int]:
    """lower(c) / upper(c) of a text or varchar column as TRANSLATE over A-Z, in place, where
    `mapping` (TextRules.case) allows; returns the ids of the nodes written."""
    written: set[int] = set()
    if mapping is None:
        return written

    def rewritten(node):
        if not (isinstance(node, (exp.Lower, exp.Upper)) and isinstance(node.this, exp.Column)
                and id(node.this) not in as_text
                and re.match(rf"^({_VARYING_TEXT})$", types.get(id(node.this), ""))):
            return node
        column = node.this
        pair = (_UPPER, _LOWER) if isinstance(node, exp.Lower) else (_LOWER, _UPPER)
        value = exp.Anonymous(this="translate", expressions=[column.copy(), *map(exp.Literal.string, pair)])
        written.update(id(n) for n in value.walk() if not isinstance(n, exp.Column))
        if mapping == CASE_C:
            return value
        name = R.imaged_column(column.name) or column.name
        ascii_only = exp.Or(this=exp.Is(this=column.copy(), expression=exp.Null()),  # UTF-8: one byte a character
                            expression=exp.EQ(this=exp.Length(this=column.copy()),
                                              expression=exp.Anonymous(this="octet_length", expressions=[column.copy()])))
        refused = _raise(f"the Spark engine computes lower() and upper() of ASCII text only under the database's "
                         f"locale, and column {name} holds ", column)
        out = exp.Case(ifs=[exp.If(this=ascii_only, true=value)], default=refused)
        written.update(id(n) for n in out.walk() if not isinstance(n, exp.Column))
        return out

    _replace_children_first(tree, rewritten)
    return written


def _untyped_nulls(tree: exp.Expression) -> exp.Expression:
    """CAST(NULL AS t) as NULL: the planner types the NULLs it writes (an outer join's missing side,
    COALESCE(SUM(x), 0)'s branches), and Spark's decimal without precision is decimal(10,0), which
    could narrow what a UNION widens it with; a NULL of no type widens to whatever meets it."""
    def untyped(value: exp.Expression) -> exp.Expression:
        return exp.null() if isinstance(value, exp.Cast) and isinstance(value.this, exp.Null) else value

    _replace_children_first(tree, untyped)  # so that CAST(CAST(NULL AS int) AS text) goes whole
    return tree


def _text_compared(cast: exp.Cast) -> bool:
    """A cast to text whose text is only compared with another value's (program/trees.py's
    shown_differently): Spark prints values otherwise than PostgreSQL, but of the types it reads,
    two values print alike in one engine exactly when they do in the other."""
    if cast.to.this != exp.DataType.Type.TEXT:
        return False
    up = cast.parent.parent if isinstance(cast.parent, exp.Tuple) else cast.parent
    return isinstance(up, (exp.NullSafeEQ, exp.NullSafeNEQ))


def _check(tree: exp.Expression, taken: set[int] = frozenset()) -> None:
    """Refuse the first node Spark would not compute as PostgreSQL does; `taken`: ids of the nodes
    known to compute alike (casts to text printed alike, the integer divisions written)."""
    for node in tree.walk():
        if id(node) in taken:
            continue
        if not isinstance(node, FAITHFUL):
            raise UnsupportedQuery(f"the Spark engine cannot compute {node.sql('postgres')[:80]} exactly as "
                                   "PostgreSQL does; maintain this view with --engine postgres")
        if isinstance(node, exp.Cast) and not _text_compared(node):
            to = node.to
            exact = to.this in EXACT_CASTS or (to.this == exp.DataType.Type.DECIMAL and len(to.expressions) == 2)
            if not exact:
                raise UnsupportedQuery(f"the Spark engine cannot compute {node.sql('postgres')} exactly as PostgreSQL "
                                       "does; maintain this view with --engine postgres")


def view_name(rel: R.Relation) -> str:
    """The Spark temp view an abstract relation is read from."""
    if rel.kind == R.DELTA:  # by captured id; by table in a program not bound to ids (a dry run prints it)
        cid = rel.captured_id()
        return f"idivm_delta_{cid}" if cid is not None else "idivm_delta_" + _spelled(rel.name)
    if rel.kind in (R.BASE, R.VIEW):  # a base table, or a map or cache the program maintains
        prefix = "idivm_base_" if rel.kind == R.BASE else "idivm_kept_"
        return prefix + _spelled(f"{rel.schema}.{rel.name}")
    raise UnsupportedQuery(f"the Spark engine does not read {rel.label()}")


def _spelled(name: str) -> str:
    """A name as a Spark identifier's letters: every other character spelled by its code."""
    return "".join(c if c.isalnum() else f"_{ord(c):x}_" for c in name)


def _rename_aliases(tree: exp.Expression) -> exp.Expression:
    """Every table and subquery alias renamed idivm_a<i> (the same name everywhere it is used).
    Spark resolves `d.x` to field x of a column d when one is in scope, where PostgreSQL takes the
    table alias d: a base table with a column named like an alias of the program would change
    what a reference means."""
    names: dict[str, str] = {}
    for a in tree.find_all(exp.TableAlias):
        if a.name and a.name not in names:
            names[a.name] = f"idivm_a{len(names)}"

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.TableAlias) and node.name in names:
            node.set("this", exp.to_identifier(names[node.name]))
        elif isinstance(node, exp.Column) and node.table in names:
            node.set("table", exp.to_identifier(names[node.table]))
        return node

    return tree.transform(put, copy=False)


def spark_sql(tree: exp.Expression, column_type: ColumnType | None = None, text: TextRules = TextRules()) -> str:
    """A program tree over Δ instances and base tables as Spark SQL (after the faithfulness check;
    `column_type` lets it take the casts to text that both engines print alike, `text` says what it
    may compute on text, by the columns' collations: by default no ordering of text, no lower())."""
    relations: dict[str, R.Relation] = {}

    def bind(rel: R.Relation) -> exp.Table:
        relations[view_name(rel)] = rel
        return exp.to_table(view_name(rel))

    bound = _untyped_nulls(R.bind_relations(tree, bind))
    types, as_text = _column_types(bound, relations, column_type)
    _check_text(bound, types, text)
    divided = _numeric_divisions(bound, types, as_text)
    carried_taken = _carried_values(bound, types, as_text, relations, column_type)
    alike = _printed_alike(bound, types)
    taken = (carried_taken | divided | alike | _text_concatenations(bound, types, alike) | _substrings(bound, types)
             | _date_fields(bound, types) | _integer_divisions(bound, types) | _case_mapped(bound, types, as_text, text.case))
    _check(bound, taken)
    return _rename_aliases(bound).sql("spark")
