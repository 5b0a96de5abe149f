"""--strategy auto's choice (strategies/choose.py) against what bench_higher_order.py measured: each
of its views compiled under auto (a dry run, no database) takes the strategy that maintained it
faster at every batch size of the committed run, docs/benchmarks/bench_higher_order.json (regenerated
with the command docs/benchmarks.md gives). A view neither strategy won at every size is not held
to either; a change to the heuristic that contradicts the measurements fails here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from idivm.compiler import compile_view
from stages import FixedSchema

MEASURED = Path(__file__).parent.parent / "docs" / "benchmarks" / "bench_higher_order.json"
SCHEMA = FixedSchema("""
CREATE TABLE customer (ck integer PRIMARY KEY, segment text NOT NULL);
CREATE TABLE orders (ok integer PRIMARY KEY, ck integer NOT NULL, odate integer NOT NULL, priority integer NOT NULL);
CREATE TABLE lineitem (ok integer NOT NULL, ln integer NOT NULL, price numeric NOT NULL, shipdate integer NOT NULL, commitdate integer NOT NULL, receiptdate integer NOT NULL, PRIMARY KEY (ok, ln));
CREATE TABLE devices (did integer PRIMARY KEY, category text NOT NULL);
CREATE TABLE parts (pid integer PRIMARY KEY, price numeric NOT NULL);
CREATE TABLE devices_parts (did integer NOT NULL, pid integer NOT NULL, PRIMARY KEY (did, pid));
""")
RUN = json.loads(MEASURED.read_text())


def _faster(view: str) -> str | None:
    """The strategy with the lower median at every batch size of the run, if one is."""
    winners = {min(("higher-order", "id"), key=lambda m: r[m]["median"]) for r in RUN["results"] if r["view"] == view}
    return winners.pop() if len(winners) == 1 else None


@pytest.mark.parametrize("view", sorted(RUN["views"]))
def test_auto_takes_the_strategy_measured_faster(view):
    faster = _faster(view)
    if faster is None:
        pytest.skip(f"{view}: neither strategy was faster at every batch size of the committed run")
    assert compile_view(RUN["views"][view], SCHEMA, "auto").strategy == faster
