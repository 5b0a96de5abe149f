"""Compilation: base-table i-diff schemas, composition into a Δ-script, minimization."""
from .script import DeltaScript, Statement
from .strategies import compile_script

__all__ = ["DeltaScript", "Statement", "compile_script"]
