"""Maintenance time: effective i-diff instances from the logs, then the Δ-script."""
