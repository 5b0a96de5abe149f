#!/usr/bin/env python3
"""Single-row write throughput with and without capture (pgbench); see idivm/bench/writes.py.

    python scripts/bench_writes.py [--seconds 10] [--repeat 3]   (or: idivm bench writes ...)
"""
import sys

from idivm.bench.writes import main

if __name__ == "__main__":
    sys.exit(main())
