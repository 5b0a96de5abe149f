#!/usr/bin/env python3
"""A busy view's maintenance cost while an idle view over the same table keeps log rows; see
idivm/bench/log_size.py.

    python scripts/bench_log_size.py [--rows 100000] [--idle 0,100000,1000000] [--batch 200] [--rounds 10]
    (or: idivm bench log-size -- ...)
"""
import sys

from idivm.bench.log_size import main

if __name__ == "__main__":
    sys.exit(main())
