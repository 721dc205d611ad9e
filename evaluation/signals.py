"""Receivers that keep the scorer changelog current and the board state fresh (connected in
apps.py)."""

from __future__ import annotations

from django.db import transaction

from evaluation.benchmarks import registry
from evaluation.board_state import board_changed
from evaluation.models import Benchmark
from evaluation.scorer import current_scorer, scorer_log, scorer_log_current


def judge_saved(sender, instance, raw=False, **kwargs) -> None:
    if raw:
        return
    benchmark = instance.benchmark

    def log():
        scorer_log(
            benchmark=benchmark,
            judge=instance,
            identity=current_scorer(benchmark=benchmark, judge=instance),
        )

    transaction.on_commit(log)


def prompt_saved(sender, instance, created=False, raw=False, **kwargs) -> None:
    if raw or not created:
        return
    benchmark = instance.benchmark
    transaction.on_commit(lambda: scorer_log_current(benchmark=benchmark))


def migrated(sender, using="default", **kwargs) -> None:
    """After every migrate: log the current scorers (a deploy may bring new rules)."""
    # A benchmark whose plug-in is not installed here has no current scorer to log.
    for benchmark in Benchmark.objects.using(using).filter(plugin__in=list(registry())):
        scorer_log_current(benchmark=benchmark)


def calibrated_changed(sender, instance, raw=False, **kwargs) -> None:
    """A human-calibrated number written or deleted: its board shows it to the next reader
    (whichever service wrote it)."""
    if raw:
        return
    board_changed(submission_id=instance.submission_id)
