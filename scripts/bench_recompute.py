#!/usr/bin/env python3
"""--recompute auto against the Δ-script and recomputation at every batch size; see idivm/bench/recompute.py.

    python scripts/bench_recompute.py [--scale 0.1] [--fractions 0.001,0.01,0.1,0.3,1] [--rounds 3]
    (or: idivm bench recompute ...)
"""
import sys

from idivm.bench.recompute import main

if __name__ == "__main__":
    sys.exit(main())
