"""The Spark engine (PySpark, an optional extra): computes a Δ-program's diff sources on Spark,
reading the capture logs and base tables inside the maintenance transaction's exported snapshot,
and hands the diffs to the PostgreSQL engine, which applies them in that same transaction.

settings.py says where Spark and the JDBC driver are; session.py keeps one warm session;
reads.py reads PostgreSQL inside a snapshot (checked on every row); spark_sql.py renders program
trees as Spark SQL and refuses what Spark would compute differently; executor.py runs a
maintenance. docs/spark.md is the user's guide."""
