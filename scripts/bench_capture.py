#!/usr/bin/env python3
"""Write-path cost of capture per statement kind: no view, deferred view, immediate view; see
idivm/bench/capture.py.

    python scripts/bench_capture.py [--rows 100000] [--count 500] [--repeat 3] [--label NAME]
    (or: idivm bench capture -- ...)
"""
import sys

from idivm.bench.capture import main

if __name__ == "__main__":
    sys.exit(main())
