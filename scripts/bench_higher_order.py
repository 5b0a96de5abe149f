#!/usr/bin/env python3
"""The higher-order strategy vs the ID-based one and recomputation on three query shapes;
see idivm/bench/higher_order.py.

    python scripts/bench_higher_order.py [--scale 0.1] [--batches 100,10000] [--rounds 3]
    (or: idivm bench higher-order ...)
"""
import sys

from idivm.bench.higher_order import main

if __name__ == "__main__":
    sys.exit(main())
