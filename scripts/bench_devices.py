#!/usr/bin/env python3
"""Figure 12's experiment on devices / parts / devices_parts; see idivm/bench/devices.py.

    python scripts/bench_devices.py [--scale 0.02] [--diff 200] [--sweep all]   (or: idivm bench devices ...)
"""
import sys

from idivm.bench.devices import main

if __name__ == "__main__":
    sys.exit(main())
