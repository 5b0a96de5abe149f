#!/usr/bin/env python3
"""Reading a maintained view through the relation under its name vs its storage table; see
idivm/bench/reads.py.

    python scripts/bench_reads.py [--rows 200000] [--rounds 5] [--lookups 2000]
    (or: idivm bench reads -- ...)
"""
import sys

from idivm.bench.reads import main

if __name__ == "__main__":
    sys.exit(main())
