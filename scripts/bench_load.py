#!/usr/bin/env python3
"""Sustained writes under the scheduler: lag percentiles; see idivm/bench/load.py.

    python scripts/bench_load.py [--seconds 60] [--writers 3]   (or: idivm bench load ...)
"""
import sys

from idivm.bench.load import main

if __name__ == "__main__":
    sys.exit(main())
