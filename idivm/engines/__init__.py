"""Engines render and run Δ-programs: each binds the program's abstract relations to its own storage
and renders the steps in its own language. PostgreSQL is the engine that holds the views."""

ENGINES = ("postgres", "spark")  # the engines a run can use (docs/spark.md)
AUTO = "auto"  # maintenance only: the cheaper of them for each batch (operate/engine_choice.py)
