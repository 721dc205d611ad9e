"""A toy benchmark plug-in that lives only in the tests: the worked example of the recipe in
README.md ("Adding a benchmark"). It exercises every hook of the interface with no change to
the core: a JSONL release, a JSONL upload, one per-submission processing step, one judged kind
with two slots per task, a mean-type metric with bootstrap intervals, splits, and rating units.

A Django app (apps.py, label "toybench"), as every plug-in is; registered by adding
"tests.toyplugin" to the FLOORBOARD_BENCHMARKS setting. It is also the
benchmark of the core's tests that need one: tests/conftest.py imports its release (``toybench``)
and writes its uploads (``toy_partial``, ``toy_upload``), made on the spot.
"""

from .toy import plugin

__all__ = ["plugin"]
