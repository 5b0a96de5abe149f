#!/usr/bin/env python3
"""Where one maintenance's time goes, statement by statement; see idivm/bench/profile.py.

    python scripts/profile_maintain.py [--view "V'"] [--strategy id] [--diff 200]   (or: idivm bench profile ...)
"""
import sys

from idivm.bench.profile import main

if __name__ == "__main__":
    sys.exit(main())
