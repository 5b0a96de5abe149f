"""Compilation: base-table i-diff schemas, rule instantiation and composition, minimization; emits Δ-programs
(program/)."""
