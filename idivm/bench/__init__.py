"""Benchmarks reproducing the paper's experiments (Section 7), also run as `idivm bench ...`."""
