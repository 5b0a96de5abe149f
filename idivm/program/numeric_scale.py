"""A numeric sum kept by increments, shown with the scale the query shows.

PostgreSQL shows SUM over numeric with the greatest scale among the values it adds (numeric
addition keeps the larger scale): {1.5, 2} sums to 3.5, {2} to 2, {0.00} to 0.00. A sum kept by
adding each change's difference has the greatest scale any value ever added or subtracted had:
subtract the 1.5 from 3.5 and it shows 2.0. The value is equal, but `0.00` and `0` (or `2.0` and
`2`) are different things to a reader of the view, so both strategies that keep sums show them
this way:

- Where every value of the argument has one scale (integers; a numeric(p, s) column), the kept
  sum has it too. Only a sum kept as absent (a higher-order map drops a zero) must be read back as
  a zero of that scale: `zero_of_scale`.
- Where each value has its own (an unconstrained numeric), the group's scales are kept beside the
  sum, as one more sum: each value adds 10^(20 * its scale) (`scale_weight`). Read in base 10^20,
  that number's digit groups count the group's values of each scale (a count below 10^20: any
  bigint), so its leading group is the greatest scale present, read from the length of its
  integer part (`greatest_scale`), with which the sum is rounded (`shown_sum`, exact: no value of
  the group has more digits). The weights stay exact however they are added and subtracted, and
  are small for the scales money and measurements have (121 digits for scale 6); a scale above
  6,553 overflows numeric's 131,072 digits and fails that maintenance with PostgreSQL's error.
"""
from __future__ import annotations

from sqlglot import exp

from ..sqltext import NUMERIC_OID
from .trees import num

DIGITS_PER_SCALE = 20  # 10^20 exceeds any bigint: a group's count of values of one scale fits below it
INTEGER_OIDS = {20, 21, 23}  # int8, int2, int4
EXACT_TYPE_OIDS = INTEGER_OIDS | {NUMERIC_OID}  # the types whose sums increments keep exactly


def fixed_scale(column_type) -> int | None:
    """The scale every value of a column of this type (sqltext.ColumnType) has, if they share one:
    0 for integers, s for numeric(p, s); None for anything else (unconstrained numeric, floats)."""
    if column_type.oid in INTEGER_OIDS:
        return 0
    return column_type.scale if column_type.oid == NUMERIC_OID else None


LISTED_SCALES = 17  # weights of scales 0-16 read from a constant array: a third of power()'s cost a row
WEIGHTS = "{" + ",".join(f"1e{DIGITS_PER_SCALE * s}" for s in range(LISTED_SCALES)) + "}"


def scale_weight(value: exp.Expression) -> exp.Expression:
    """10^(20 * scale(value)), numeric (NULL for NULL: SUM skips it as it skips the value): looked up
    in a constant array for the usual scales, computed by power() beyond them."""
    scale = exp.Anonymous(this="scale", expressions=[value])
    # an expression subscript: rendered as written, 1-based as PostgreSQL indexes arrays (sqlglot
    # shifts only literal subscripts)
    listed = exp.Bracket(this=exp.Paren(this=exp.cast(exp.Literal.string(WEIGHTS), "numeric[]")),
                         expressions=[exp.Add(this=scale, expression=num(1))])
    exponent = exp.Mul(this=num(DIGITS_PER_SCALE), expression=scale.copy())
    return exp.Coalesce(this=listed, expressions=[
        exp.Anonymous(this="power", expressions=[exp.cast(num(10), "numeric"), exponent])])


def greatest_scale(weights: exp.Expression) -> exp.Expression:
    """The greatest scale whose count in `weights` (a sum of scale_weight, at least 1) is not zero."""
    digits = exp.Length(this=exp.cast(exp.Anonymous(this="trunc", expressions=[weights]), "text"))
    return exp.Div(this=exp.Paren(this=exp.Sub(this=digits, expression=num(1))), expression=num(DIGITS_PER_SCALE),
                   typed=True)  # integer division


def shown_sum(total: exp.Expression, weights: exp.Expression) -> exp.Expression:
    """The kept sum `total` with the scale the query's SUM has (module docstring)."""
    return exp.Anonymous(this="round", expressions=[total, greatest_scale(weights)])


def zero_of_scale(scale: int) -> exp.Expression:
    """0 with `scale` digits after the point (0.00 for 2), as SUM shows a sum of such values that is 0."""
    return exp.cast(num(0), f"numeric({scale + 1}, {scale})")
