"""The PostgreSQL engine: renders Δ-program steps as PostgreSQL statements (render.py), creates and
fills maintained tables (materialize.py), builds i-diff instances from the capture logs
(instances.py), and runs maintenance: deferred, in one transaction per view (executor.py), or
immediate, inside the writers' own statements (immediate.py)."""
