"""Small inputs handed to Spark by the driver, from the maintenance transaction itself.

A batch of 200 changes is a few hundred Δ rows, and the base rows it can join
(engines/spark/pushdown.py) a few thousand. Read through JDBC, every place a query reads such an
input is a Spark job of its own that opens a connection and imports the snapshot: the tuple
strategy's pre-state deletes (a UNION ALL over which tables changed, with NOT EXISTS against the
other Δs) read the Δs a dozen times, and those jobs were most of a small batch's time on Spark
(docs/benchmarks.md, "Measurements behind the code"). An input of at most `local_rows` rows
(SparkSettings, IDIVM_SPARK_LOCAL_ROWS) is instead read by the maintenance transaction's own
connection and given to Spark as an Arrow table, which Spark keeps as a local relation in the plan:

- it is exact by construction: the rows come from the very transaction that applies the result
  (nothing to import, nothing to check), with PostgreSQL's values as Arrow types of the same
  precision (numeric(p,s) as decimal128(p,s), dates as date32);
- Spark's optimizer sees the data: a Δ that holds no row of a kind empties the branches that need it
  before any job runs (a batch without deletes computes no pre-state of deleted rows), and a
  broadcast of a local relation reads no table.

Larger inputs, and columns of types without an exact Arrow counterpart here (character(n), whose
padding PostgreSQL ignores in comparisons), are read by Spark's executors through JDBC as before
(engines/spark/reads.py): the driver never holds more than `local_rows` rows of one input.
"""
from __future__ import annotations

import re

from ...sqltext import ident

_FIXED = {"smallint": "int16", "integer": "int32", "bigint": "int64", "real": "float32",
          "double precision": "float64", "text": "string", "boolean": "bool_", "date": "date32"}
_NUMERIC = re.compile(r"^numeric\((\d+),(\d+)\)$")
_VARCHAR = re.compile(r"^character varying(\(\d+\))?$")


def arrow_type(sql_type: str):
    """The Arrow type that carries a PostgreSQL type's values exactly (None: none here)."""
    import pyarrow as pa

    if sql_type in _FIXED:
        return getattr(pa, _FIXED[sql_type])()
    if _VARCHAR.match(sql_type):
        return pa.string()
    m = _NUMERIC.match(sql_type)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    return None


def decimal_of(values) -> tuple[int, int] | None:
    """(precision, scale) that holds every value (Decimals or None) exactly, within Spark's 38
    digits; None if none does (or a value is NaN or infinite)."""
    whole = scale = 0
    for v in values:
        if v is None:
            continue
        if not v.is_finite():
            return None
        _, digits, exponent = v.as_tuple()
        s = max(-exponent, 0)
        scale, whole = max(scale, s), max(whole, len(digits) + exponent)
    precision = whole + scale
    return (max(precision, 1), scale) if precision <= 38 else None


def read_local(spark, cursor, query: str, columns: list[tuple[str, str]], name: str, limit: int) -> bool:
    """Make `name` a Spark temp view of `query`'s rows (its columns `columns`: (name, PostgreSQL
    type), in order), read on `cursor`'s own transaction, if there are at most `limit` of them and
    every column has an exact Arrow type; False (nothing read into Spark) otherwise. A `numeric`
    without precision (a map's or cache's sums) takes the decimal its values need, if one does."""
    types = [arrow_type(t) for _, t in columns]
    if limit <= 0 or not columns or any(t is None and s != "numeric" for t, (_, s) in zip(types, columns)):
        return False
    rows = cursor.execute(f"SELECT * FROM ({query}) AS idivm_local LIMIT {int(limit) + 1}").fetchall()
    if len(rows) > limit:
        return False
    import pyarrow as pa

    for i, t in enumerate(types):
        if t is None:  # an unconstrained numeric: the decimal of its values
            fits = decimal_of(r[i] for r in rows)
            if fits is None:
                return False
            types[i] = pa.decimal128(*fits)

    table = pa.table([pa.array([r[i] for r in rows], type=t) for i, t in enumerate(types)],
                     names=[c for c, _ in columns])
    spark.createDataFrame(table).createOrReplaceTempView(name)
    return True


def select_columns(columns: list[str], source: str) -> str:
    """SELECT of the quoted `columns` from `source` (a quoted table or a parenthesized query)."""
    return f"SELECT {', '.join(ident(c) for c in columns)} FROM {source}"
