"""Strategies: from a view's plan to its Δ-program (program/). ``id/`` is the idIVM paper's
ID-based strategy, ``tuple/`` the tuple-based baseline; what both share (SPJ targets, i-diff steps,
aggregation rules, UNION ALL, subqueries, pre-states) sits here. targets.py dispatches."""
