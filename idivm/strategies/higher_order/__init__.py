"""The higher-order strategy (DBToaster's viewlet transform, issue 14), being built: views become
AGCA queries (translate.py); the viewlet transform materializes them and their deltas' database
parts as maps with trigger programs (viewlet.py); maps and triggers become Δ-program steps that the
engines run (to_steps.py, with program/steps.AddToMap). Not registrable yet: the catalog, capture
and view-table integration come next."""
