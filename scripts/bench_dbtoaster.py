#!/usr/bin/env python3
"""DBToaster's test queries as a coverage measurement; see idivm/bench/dbtoaster.py.

    python scripts/bench_dbtoaster.py --queries ~/dbtoaster-a5/test/queries [--dirs simple] [--strategies auto,id]
"""
import sys

from idivm.bench.dbtoaster import main

if __name__ == "__main__":
    sys.exit(main())
