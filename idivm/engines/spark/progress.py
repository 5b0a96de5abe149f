"""Spark's own progress, for a progress bar, and a handle to cancel what idivm runs there.

Every job idivm starts runs in a job group of its own (one per table filled or per maintenance),
so Spark's status tracker can tell how many of its tasks are done, and `cancel(group)` stops them
(the transaction waiting for the rows then fails and rolls back: docs/spark.md, "Failures").
Counts are over the stages Spark has planned so far: a query with a shuffle plans its later
stages as earlier ones finish, so the total can grow while the bar moves.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Callable

# (tasks done, tasks known so far, rows copied to PostgreSQL)
ProgressCallback = Callable[[int, int, int], None]

_groups = itertools.count(1)
POLL_SECONDS = 0.25


def new_group(what: str) -> str:
    """A job group id, unique in this process: idivm-<n>-<what>."""
    return f"idivm-{next(_groups)}-{what}"


def tasks(spark, group: str) -> tuple[int, int]:
    """(completed, total) tasks of the group's stages, each stage counted once."""
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    seen = set()
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id) if stage_id not in seen else None
            seen.add(stage_id)
            if stage is not None:
                done, total = done + stage.numCompletedTasks, total + stage.numTasks
    return done, total


class Tracker:
    """Runs in a job group; reports its progress every POLL_SECONDS from a thread of its own."""

    def __init__(self, spark, group: str, callback: ProgressCallback | None):
        self.spark, self.group, self.callback = spark, group, callback
        self.rows = 0  # copied to PostgreSQL so far (staging.copy_result)
        self.copy_seconds = 0.0  # of which spent copying, not waiting for Spark
        self._stop = threading.Event()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.report()

    def report(self, finished: bool = False) -> None:
        """Tell the callback; `finished`: every job is done, so stages Spark skipped (their output
        was already computed by an earlier job of the group) count as done too."""
        if self.callback is not None:
            done, total = tasks(self.spark, self.group)
            self.callback(total if finished else done, total, self.rows)


@contextlib.contextmanager
def tracking(spark, group: str, callback: ProgressCallback | None = None):
    """Jobs started in this block (by this thread) belong to `group`; `callback` hears of them."""
    sc = spark.sparkContext
    sc.setJobGroup(group, f"idivm: {group}", interruptOnCancel=True)
    tracker = Tracker(spark, group, callback)
    poller = threading.Thread(target=tracker._poll, name=f"{group}-progress", daemon=True)
    if callback is not None:
        poller.start()
    finished = False
    try:
        yield tracker
        finished = True
    finally:
        tracker._stop.set()
        if callback is not None:
            poller.join()
            tracker.report(finished)
        # Jobs whose result is no longer needed may still run (Spark can finish a query whose one
        # side turned out empty while it still broadcasts the other): they would read through a
        # snapshot that is about to end, and fail noisily. Stop them with the block.
        cancel(spark, group)
        sc.setLocalProperty("spark.jobGroup.id", None)


def cancel(spark, group: str) -> None:
    """Stop the group's running jobs: the iterator reading their rows raises."""
    spark.sparkContext.cancelJobGroup(group)
