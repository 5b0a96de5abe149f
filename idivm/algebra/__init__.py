"""Algebra: plan operators, their printer, and ID inference (pass 1)."""
