"""Engines render and run Δ-programs: each binds the program's abstract relations to its own storage
and renders the steps in its own language. PostgreSQL is the engine that holds the views."""
