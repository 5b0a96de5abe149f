"""What a Spark executor runs to write its partition of a large result into PostgreSQL itself
(staging.py's executors' path, docs/spark.md "Results come back in columns").

Each task opens its own connection and, in one transaction, creates an unlogged table of its own
(`idivm.spark_part_<xid>_<stage>_<partition>_<attempt>`, xid: the waiting maintenance's
transaction) and
fills it with `COPY ... (FORMAT csv, FREEZE)`. Rows another transaction commits are invisible to a
snapshot taken before them, and the maintenance's snapshot is: but rows COPY FREEZE writes into a
table created in the same transaction are frozen, visible to every snapshot at once (PostgreSQL's
COPY reference, "FREEZE"). So the maintenance reads them in its own transaction. The task hands
back, per query of a merged plan (staging.merged_sql), its table and how many rows it holds there;
a retried or speculative task's table is not among what the job returns, and is dropped with the
rest (staging.sweep_parts).

Spark pickles these functions by value (session.py), so executors need pyarrow and psycopg, not
idivm: nothing here imports idivm.
"""
from __future__ import annotations

SCHEMA = "idivm"
PREFIX = "spark_part_"
CSV_CHUNK = 65_536  # rows an Arrow CSV chunk holds on its way to COPY
RESULT_SCHEMA = "part string, query int, rows long"


def part_name(xid: int, stage: int, partition: int, attempt: int) -> str:
    """A task's table: its transaction's, then unique among that transaction's tables."""
    return f"{PREFIX}{int(xid)}_{int(stage)}_{int(partition)}_{int(attempt)}"


def write_csv(copy, batches) -> int:
    """Arrow record batches, in the target's column order, written to an open COPY ... (FORMAT csv):
    every value quoted but NULL (CSV's NULL is an unquoted empty field, so '' stays ''); the rows written."""
    import io

    import pyarrow as pa
    import pyarrow.csv as csv

    options = csv.WriteOptions(include_header=False, quoting_style="all_valid")
    rows = 0
    for batch in batches:
        for chunk in pa.Table.from_batches([batch]).to_batches(max_chunksize=CSV_CHUNK):
            out = io.BytesIO()
            csv.write_csv(chunk, out, options)
            copy.write(out.getvalue())
            rows += chunk.num_rows
    return rows


def partition_writer(conninfo: str, xid: int, columns: list[tuple[str, str]], merged: bool):
    """The function Spark's mapInArrow runs per partition: `columns` (name, PostgreSQL type) are
    the part table's, in the result's column order; `merged`: the first column is the query's
    number (staging.merged_sql), counted per query in what the task hands back."""
    def write(batches):
        import itertools

        import psycopg
        import pyarrow as pa
        import pyarrow.compute as pc
        from psycopg import sql
        from pyspark import TaskContext

        batches = (b for b in batches if b.num_rows)
        first = next(batches, None)
        if first is None:
            return
        task = TaskContext.get()
        name = part_name(xid, task.stageId(), task.partitionId(), task.attemptNumber())
        table = sql.Identifier(SCHEMA, name)
        counts: dict[int, int] = {}

        def counted(stream):
            for batch in stream:
                if merged:
                    for entry in pc.value_counts(batch.column(0)).to_pylist():
                        counts[entry["values"]] = counts.get(entry["values"], 0) + entry["counts"]
                else:
                    counts[0] = counts.get(0, 0) + batch.num_rows
                yield batch

        try:
            connection = psycopg.connect(conninfo, application_name="idivm spark writer")
        except psycopg.Error as e:  # one line, staging._refusal's
            raise RuntimeError(f"idivm: a Spark executor could not connect to PostgreSQL to write its rows "
                               f"({str(e).strip().splitlines()[0]})") from None
        with connection, connection.cursor() as cur:  # commits on leaving, rolls back on an error
            definition = sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t)) for c, t in columns)
            cur.execute(sql.SQL("CREATE UNLOGGED TABLE {} ({})").format(table, definition))
            with cur.copy(sql.SQL("COPY {} FROM STDIN (FORMAT csv, FREEZE, ENCODING 'UTF8')").format(table)) as copy:
                write_csv(copy, counted(itertools.chain([first], batches)))
        yield pa.RecordBatch.from_pydict({"part": [name] * len(counts), "query": list(counts),
                                          "rows": list(counts.values())},
                                         schema=pa.schema([("part", pa.string()), ("query", pa.int32()),
                                                           ("rows", pa.int64())]))

    return write
