"""Held-out tasks: scored apart, their ground truth, prompts and per-task results shown to
staff only. A release marks them (TaskSource.held_out) or staff do (manage.py held_out).

Scores then hold the public tasks' results in ``results`` (and everything derived from them:
the board, slices, comparisons, charts, exports) and the held-out tasks' in
``held_out_results``. Every read of per-task rows goes through task_results_for()."""

from __future__ import annotations

import math

from django.conf import settings
from django.db.models import QuerySet

from evaluation.models import Benchmark, Submission, Task


def sees_held_out(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_staff)


def task_results_for(*, user, submission: Submission) -> QuerySet:
    """A submission's task results this user may open: all for staff, the public tasks'
    otherwise."""
    rows = submission.task_results.all()
    return rows if sees_held_out(user) else rows.filter(task__held_out=False)


def held_out_key(key: str) -> bool:
    """Whether a stored file belongs to a held-out task: a submission's task file
    (submissions/<id>/<task>/...) or a benchmark's task asset (benchmarks/<slug>/<task>/...)."""
    parts = key.split("/")
    if len(parts) < 4:
        return False
    if parts[0] == "submissions" and parts[1].isdigit():
        return Task.objects.filter(
            task_id=parts[2], held_out=True, benchmark__submissions__pk=int(parts[1])
        ).exists()
    if parts[0] == "benchmarks":
        return Task.objects.filter(
            benchmark__slug=parts[1], task_id=parts[2], held_out=True
        ).exists()
    return False


def held_out_missing(*, submission: Submission) -> bool:
    """Whether the upload lacks a held-out task: ingest gives a task the upload does not hold
    a result with neither files nor data."""
    return submission.task_results.filter(task__held_out=True, files={}, data={}).exists()


def held_out_band(value, *, top: float | None = None) -> str:
    """A held-out number as everyone but staff reads it: the band of HELD_OUT_BAND_POINTS it
    falls in ("40–50"), never the number, whose counts would say how single held-out tasks were
    judged; "" when the setting is 0 (ranks only) or there is no number. ``top``: the highest
    value there is (100 for a percentage), which falls in the band below it."""
    width = settings.HELD_OUT_BAND_POINTS
    if not width or value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    low = math.floor(value / width) * width
    if top is not None and low + width > top >= value:
        low = max(0, top - width)
    return f"{low:g}–{low + width:g}"


def held_out_column_band(column, results, *, tasks: int) -> str:
    """held_out_band of one board column's value over ``tasks`` held-out tasks (a percentage
    tops out at 100). Under 200 / HELD_OUT_BAND_POINTS tasks a band would hold a single
    possible result (k of n tasks lands on k x 100 / n): then nothing but the rank ("")."""
    if tasks * settings.HELD_OUT_BAND_POINTS < 200:
        return ""
    return held_out_band(column.value(results), top=100 if column.metric.unit == "%" else None)


def held_out_ids(*, benchmark: Benchmark) -> set[str]:
    return set(benchmark.tasks.filter(held_out=True).values_list("task_id", flat=True))
