"""The PostgreSQL engine: renders Δ-program steps as PostgreSQL statements (render.py), creates and
fills maintained tables (materialize.py), compiles each view's maintenance into server functions
that build its i-diff instances from the capture logs and run its Δ-script
(server_maintenance.py), and runs maintenance: deferred, in one transaction per view (executor.py),
or immediate, inside the writers' own statements (immediate.py)."""
