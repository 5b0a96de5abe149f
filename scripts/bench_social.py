#!/usr/bin/env python3
"""BSMA-like social analytics, eight views (Figures 9 and 10); see idivm/bench/social.py.

    python scripts/bench_social.py [--scale 0.01] [--views Q7,Q*1]   (or: idivm bench social ...)
"""
import sys

from idivm.bench.social import main

if __name__ == "__main__":
    sys.exit(main())
