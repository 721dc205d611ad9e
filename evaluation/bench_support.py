"""Helpers the benchmark figure commands share: timing a function at its fastest with its peak
memory, timing the judge work, and running the pipeline's stages by hand (no queue)."""

from __future__ import annotations

import time
import tracemalloc
from contextlib import contextmanager

from evaluation.services import judging, pipeline, submissions


def measure(function, repeat: int):
    """(result, the fastest wall seconds of ``repeat`` runs, the peak traced memory of one more
    run): the fastest run is the one least disturbed by whatever else the machine does."""
    walls = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        walls.append(time.perf_counter() - started)
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, min(walls), peak


@contextmanager
def timed_judging(store: list):
    """Adds the wall time of every judgments_work call made inside the block to ``store``."""
    original = judging.judgments_work

    def wrapped(**kwargs):
        started = time.perf_counter()
        try:
            return original(**kwargs)
        finally:
            store.append(time.perf_counter() - started)

    judging.judgments_work = wrapped
    try:
        yield
    finally:
        judging.judgments_work = original


@contextmanager
def stages_by_hand():
    """The pipeline's stages queue their successors; here each is called in turn instead."""
    saved = (pipeline.enqueue_on_commit, submissions.enqueue_on_commit, pipeline.after_commit)
    pipeline.enqueue_on_commit = submissions.enqueue_on_commit = lambda *args: None
    pipeline.after_commit = lambda callback: None
    try:
        yield
    finally:
        pipeline.enqueue_on_commit, submissions.enqueue_on_commit, pipeline.after_commit = saved
