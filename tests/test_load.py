"""A sustained load (several writers for 10 s on loopback, IDIVM_TEST_LOAD_SECONDS; longer runs are
scripts/bench_load.py's) while the scheduler runs: every insert reaches the view, the views equal
recomputation at the end, and the scheduler exits 0 on SIGTERM. The lag percentiles are printed
(and are the benchmark's business, not asserted here)."""
from __future__ import annotations

import os

import pytest

from idivm.bench.load import report, run


@pytest.mark.slow
def test_sustained_load_under_the_scheduler(server_dsn, scratch_databases, capsys):
    seconds = float(os.environ.get("IDIVM_TEST_LOAD_SECONDS", "10"))
    result = run(server_dsn, seconds=seconds, writers=3)
    with capsys.disabled():
        print()
        report(result)
    assert result["views_equal_recomputation"] == {"per_writer": True, "big_events": True}
    assert result["scheduler_exit_code"] == 0 and result["failures"] == 0
    assert result["unseen_inserts"] == 0 and result["inserts"] > 0
    assert result["maintenances"] >= 2
