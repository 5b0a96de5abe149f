"""The PostgreSQL engine: renders Δ-program steps as PostgreSQL statements, materializes views."""
