"""numeric / numeric on Spark as PostgreSQL computes it: the quotient's scale depends on each
pair of values, which no Spark decimal type (one scale per column, at most 38 digits) can hold.

PostgreSQL (src/backend/utils/adt/numeric.c, `select_div_scale` and `div_var`) gives a quotient
at least 16 significant digits: its scale is 16 minus 4 times the estimated weight of the
quotient in base-10000 digits (the difference of the operands' weights, one less when the
dividend's first base-10000 digit is not above the divisor's), and at least either operand's
display scale; the quotient is exact, rounded half away from zero at that scale. Here the
operands come as their text (which carries their display scale: `1.50` is two) and the quotient
is computed in Python's unbounded integers, so it is exact at any size, and handed back as its
text, which PostgreSQL reads into the view's numeric column as that very value.

Spark calls `divide` as the SQL function `idivm_numeric_div` (registered in a run's session when
its SQL calls it, and pickled by value: nothing here imports idivm); spark_sql.py writes it only
where the quotient leaves Spark as an output.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

FUNCTION = "idivm_numeric_div"
MIN_SIG_DIGITS = 16  # NUMERIC_MIN_SIG_DIGITS
DEC_DIGITS = 4  # decimal digits per base-10000 digit
MAX_DISPLAY_SCALE = 1000  # NUMERIC_MAX_DISPLAY_SCALE


def _parsed(text: str) -> tuple[int, int]:
    """A finite numeric's text as (integer, exponent): value = integer * 10**exponent."""
    try:
        d = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"idivm: the Spark engine cannot divide {text!r} as a numeric") from None
    if not d.is_finite():  # NaN, Infinity: PostgreSQL's special values, not computed here
        raise ValueError(f"idivm: the Spark engine does not divide the numeric {text}")
    sign, digits, exponent = d.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    return (-n if sign else n), exponent


def _weight_and_first_digit(n: int, exponent: int) -> tuple[int, int]:
    """The base-10000 weight of n * 10**exponent and its first base-10000 digit (0, 0 for zero)."""
    if n == 0:
        return 0, 0
    n = abs(n)
    weight = (len(str(n)) - 1 + exponent) // DEC_DIGITS  # floor(log10000 |x|)
    shift = exponent - DEC_DIGITS * weight  # |x| / 10000**weight = n * 10**shift
    first = n * 10 ** shift if shift >= 0 else n // 10 ** -shift
    return weight, first


def result_scale(a: tuple[int, int], b: tuple[int, int]) -> int:
    """PostgreSQL's select_div_scale for a / b, each as (integer, exponent)."""
    w1, first1 = _weight_and_first_digit(*a)
    w2, first2 = _weight_and_first_digit(*b)
    qweight = w1 - w2 - (1 if first1 <= first2 else 0)
    scale = max(MIN_SIG_DIGITS - qweight * DEC_DIGITS, -a[1], -b[1], 0)
    return min(scale, MAX_DISPLAY_SCALE)


def divide(a: str | None, b: str | None) -> str | None:
    """a / b as PostgreSQL's numeric division gives it, as its text; None if either is NULL. A zero
    divisor raises PostgreSQL's error (the maintenance fails in one line, as the query does)."""
    if a is None or b is None:
        return None
    (n1, e1), (n2, e2) = _parsed(a), _parsed(b)
    if n2 == 0:
        raise ZeroDivisionError("idivm: division by zero")
    scale = result_scale((n1, e1), (n2, e2))
    shift = e1 - e2 + scale  # quotient * 10**scale = n1 * 10**shift / n2
    num, den = (n1 * 10 ** shift, n2) if shift >= 0 else (n1, n2 * 10 ** -shift)
    q, r = divmod(abs(num), abs(den))
    if 2 * r >= abs(den):  # half away from zero
        q += 1
    digits = str(q).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return "-" + text if q and (num < 0) != (den < 0) else text


def register_if_used(spark, text: str) -> None:
    """`idivm_numeric_div(text, text) -> text` in this Spark session (a run's own, session.py), if
    the Spark SQL `text` calls it: registering costs 20-30 ms, which most runs need not pay. A Python
    UDF without Arrow batches (those need pandas)."""
    if FUNCTION not in text.lower():  # sqlglot may print it upper case; Spark resolves either
        return
    import sys

    from pyspark import cloudpickle
    from pyspark.sql.functions import udf
    from pyspark.sql.types import StringType

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors need not have idivm installed

    spark.udf.register(FUNCTION, udf(divide, StringType(), useArrow=False))
