#!/usr/bin/env python3
"""A TPC-C write mix with analytical views: throughput kept and freshness; see idivm/bench/oltp.py.

    python scripts/bench_oltp.py [--seconds 20] [--clients 3]   (or: idivm bench oltp ...)
"""
import sys

from idivm.bench.oltp import main

if __name__ == "__main__":
    sys.exit(main())
