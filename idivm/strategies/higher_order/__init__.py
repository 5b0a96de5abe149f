"""The higher-order strategy (DBToaster's viewlet transform, issue 14), being built: views become
AGCA queries (translate.py) over the calculus of idivm/calculus; materialization decisions, maps
and trigger programs as Δ-program steps come next. Not registrable yet."""
