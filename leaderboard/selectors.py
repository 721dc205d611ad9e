"""Reads behind the public leaderboard. Ranking happens in SQL."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

from django.db.models import F, FloatField, OuterRef, Q, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from evaluation.models import Benchmark, Judge, Score, Submission
from evaluation.selectors import submissions_visible_to

# Table 3 is led by overall understanding accuracy; ties fall to the discussion and turn-based
# appropriateness accuracies.
RANK_KEYS = (
    "understanding__overall_acc__pct",
    "discussion__app_acc__pct",
    "turnbased__app_acc__pct",
)


@dataclass(frozen=True)
class Entry:
    rank: int
    system: str
    system_type: str
    submission_id: int
    judge: str
    results: dict
    verified: bool
    reported_in_paper: bool
    incomplete: bool
    offline_judge: bool
    reported_source: str = ""
    private: bool = False
    flagged: bool = False
    flag_reason: str = ""


def leaderboard_judges(*, benchmark: Benchmark) -> list[Judge]:
    """Judges that have scored at least one submission, the official one first."""
    return list(
        benchmark.judges.filter(Q(is_official=True) | Q(scores__isnull=False))
        .distinct()
        .order_by("-is_official", "slug")
    )


def default_judge(*, benchmark: Benchmark) -> Judge | None:
    """The official judge where the benchmark has one (its board also carries the paper's
    rows); otherwise the first judge that has scored something."""
    judges = leaderboard_judges(benchmark=benchmark)
    return judges[0] if judges else None


def _rank_expressions(prefix: str):
    return [Cast(KT(f"{prefix}{key}"), FloatField()).desc(nulls_last=True) for key in RANK_KEYS]


def leaderboard_entries(*, benchmark: Benchmark, judge: Judge | None, user=None) -> list[Entry]:
    """The newest scored submission of each system under this judge that this user may see,
    plus, under the official judge, the rows reported in the paper."""
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark, is_reported=False)
    verified: list[Entry] = []
    reported_rows: list[Entry] = []
    if judge is not None:
        newest = (
            Score.objects.filter(
                judge=judge,
                submission__in=visible,
                submission__system=OuterRef("submission__system"),
                submission__status=Submission.Status.SCORED,
            )
            .order_by("-submission__created_at", "-submission_id")
            .values("pk")[:1]
        )
        scores = (
            Score.objects.filter(
                judge=judge,
                submission__benchmark=benchmark,
                submission__status=Submission.Status.SCORED,
            )
            .filter(pk=Subquery(newest))
            .select_related("submission__system")
            .order_by(*_rank_expressions("results__"), "submission__system__name")
        )
        for score in scores:
            submission = score.submission
            verified.append(
                Entry(
                    rank=0,
                    system=submission.system.name,
                    system_type=submission.system.system_type,
                    submission_id=submission.pk,
                    judge=judge.slug,
                    results=score.results,
                    verified=True,
                    reported_in_paper=False,
                    incomplete=submission.is_partial,
                    offline_judge=judge.is_offline,
                    private=not submission.is_public,
                    flagged=submission.is_flagged,
                    flag_reason=submission.flag_reason,
                )
            )
    if judge is None or judge.is_official:
        reported = (
            Submission.objects.filter(benchmark=benchmark, is_reported=True)
            .select_related("system")
            .order_by(*_rank_expressions("reported_results__"), F("system__name"))
        )
        for submission in reported:
            reported_rows.append(
                Entry(
                    rank=0,
                    system=submission.system.name,
                    system_type=submission.system.system_type,
                    submission_id=submission.pk,
                    judge="reported",
                    results=submission.reported_results,
                    verified=False,
                    reported_in_paper=True,
                    incomplete=False,
                    offline_judge=False,
                    reported_source=submission.reported_source,
                )
            )
    # Both lists come ordered from SQL; merging keeps that order without sorting again.
    merged = heapq.merge(verified, reported_rows, key=_sort_key)
    return [replace(entry, rank=index) for index, entry in enumerate(merged, start=1)]


def _sort_key(entry: Entry):
    values = []
    for key in RANK_KEYS:
        node = entry.results
        for part in key.split("__"):
            node = node.get(part) if isinstance(node, dict) else None
        values.append(-node if isinstance(node, int | float) else float("inf"))
    return (*values, entry.system)
