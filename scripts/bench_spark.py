#!/usr/bin/env python3
"""The Spark engine vs the PostgreSQL engine on the paper's view V; see idivm/bench/spark.py.

    python scripts/bench_spark.py [--scale 0.02] [--batches 200,10000] [--rounds 3] [--masters local[1],local[2]]
    (or: idivm bench spark ...)
"""
import sys

from idivm.bench.spark import main

if __name__ == "__main__":
    sys.exit(main())
