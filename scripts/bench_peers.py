#!/usr/bin/env python3
"""idivm against pg_ivm, REFRESH MATERIALIZED VIEW and a hand-written floor; see idivm/bench/peers.py.

    python scripts/bench_peers.py [--scale 0.02] [--batches 1,10,200] [--rounds 5]   (or: idivm bench peers ...)
"""
import sys

from idivm.bench.peers import main

if __name__ == "__main__":
    sys.exit(main())
