"""Reads behind slices of the board and the comparison of two systems (evaluation/slices.py
does the arithmetic). Every read starts from submissions_visible_to: a submission a viewer may
not see cannot be compared, and its numbers never reach a comparison's cache entry for them."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Judge, Score, Submission, Task
from evaluation.selectors import submissions_visible_to
from evaluation.slices import (
    DRAWS,
    Comparison,
    Contributions,
    common_tasks,
    compare,
    slice_value,
    slices_version,
)
from leaderboard.selectors import Column, board_columns, board_split

COMPARE_CACHE_SECONDS = 24 * 3600
ATTRIBUTES_CACHE_SECONDS = 24 * 3600


class ComparisonError(ValueError):
    """A comparison that cannot be made, with the reason in words for the page and the API."""


# --- Slices ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceChoice:
    attribute: str
    label: str
    values: list[tuple[str, int]]  # (value, tasks of the benchmark with it)


@dataclass(frozen=True)
class BoardSlice:
    attribute: str
    value: str
    label: str  # "Family: understanding"

    @property
    def key(self) -> str:
        return f"{self.attribute}={self.value}"


def task_attributes(*, benchmark: Benchmark) -> dict[str, dict[str, str]]:
    """Every task's slice attributes (task id -> attribute -> value as shown), cached until the
    benchmark's tasks or the plug-in's slices change."""
    plugin = get_plugin(benchmark.plugin)
    if not plugin.slices:
        return {}
    state = benchmark.tasks.filter(held_out=False).aggregate(n=Count("pk"), last=Max("pk"))
    key = cache_key("task-attributes-v1", benchmark.pk, state, slices_version(plugin))
    found = cache.get(key)
    if found is None:
        found = {
            task_id: {
                name: slice_value(value)
                for name, value in plugin.task_attributes(task_id, spec).items()
                if value is not None
            }
            # Held-out tasks are scored apart and never sliced.
            for task_id, spec in Task.objects.filter(benchmark=benchmark, held_out=False)
            .order_by("task_id")
            .values_list("task_id", "spec")
        }
        cache.set(key, found, ATTRIBUTES_CACHE_SECONDS)
    return found


def slice_choices(*, benchmark: Benchmark) -> list[SliceChoice]:
    plugin = get_plugin(benchmark.plugin)
    attributes = task_attributes(benchmark=benchmark)
    choices = []
    for attribute in plugin.slices:
        counts = Counter(
            found[attribute.name] for found in attributes.values() if attribute.name in found
        )
        choices.append(SliceChoice(attribute.name, attribute.label, sorted(counts.items())))
    return [choice for choice in choices if choice.values]


def board_slice(*, benchmark: Benchmark, requested: str) -> BoardSlice | None:
    """The slice named ``attribute=value`` in the URL; None for none. An unknown attribute or
    value is a ComparisonError naming it."""
    if not requested:
        return None
    attribute, _, value = requested.partition("=")
    for choice in slice_choices(benchmark=benchmark):
        if choice.attribute == attribute:
            if value not in dict(choice.values):
                known = ", ".join(v for v, _ in choice.values)
                raise ComparisonError(
                    f"slice {requested!r}: {attribute} has no value {value!r} (one of: {known})"
                )
            return BoardSlice(attribute, value, f"{choice.label}: {value}")
    known = ", ".join(c.attribute for c in slice_choices(benchmark=benchmark)) or "none"
    raise ComparisonError(f"slice {requested!r}: no attribute {attribute!r} (one of: {known})")


# --- Comparisons ----------------------------------------------------------------------------


def comparable_submission(*, user, benchmark: Benchmark, pk) -> Submission:
    """A scored submission of this benchmark the user may see; anything else is the same
    error, so that a private submission's existence is not revealed."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise ComparisonError(f"{pk!r} is not a submission number") from None
    visible = submissions_visible_to(user=user).filter(
        benchmark=benchmark, is_reported=False, pk=pk
    )
    found = Submission.objects.filter(pk__in=visible.values("pk")).select_related("system").first()
    if found is None:
        raise ComparisonError(
            f"submission {pk} is not a submission of {benchmark.name} you may see "
            "(results copied from a paper have no per-task outcomes to compare)"
        )
    return found


def comparison_judge(
    *, benchmark: Benchmark, a: Submission, b: Submission, requested: str = ""
) -> Judge:
    """The judge both are scored under: the one asked for, else the official one, else the
    first judge (by slug) that scored both."""
    judges = (
        benchmark.judges.filter(scores__submission=a)
        .filter(scores__submission=b)
        .order_by("-is_official", "slug")
    )
    if requested:
        found = judges.filter(slug=requested).first()
        if found is None:
            raise ComparisonError(f"judge {requested!r} has not scored both submissions")
        return found
    found = judges.first()
    if found is None:
        raise ComparisonError("no judge has scored both submissions yet")
    return found


@dataclass(frozen=True)
class SliceComparison:
    slice: BoardSlice | None
    comparison: Comparison


@dataclass(frozen=True)
class SubmissionComparison:
    a: Submission
    b: Submission
    judge: Judge
    split: str
    columns: list[Column]
    tasks_a: int
    tasks_b: int
    overall: SliceComparison  # on the slice asked for, or on every task
    by_slice: list[SliceComparison]  # every slice value, when no slice is asked for
    key: str = ""  # the cache key of these numbers (both scores' state, split, slice)


def cache_key(prefix: str, *parts) -> str:
    text = "|".join(map(str, parts))
    return f"{prefix}:{hashlib.sha256(text.encode()).hexdigest()}"


def _contributions(score: Score) -> Contributions:
    found = Contributions.from_json(score.contributions)
    if found is None:
        raise ComparisonError(
            f"submission {score.submission_id} has no per-task outcomes stored yet "
            "(staff: manage.py score_slices)"
        )
    return found


def submission_comparison(
    *,
    benchmark: Benchmark,
    a: Submission,
    b: Submission,
    judge: Judge,
    split: str = "",
    requested_slice: BoardSlice | None = None,
) -> SubmissionComparison:
    """A against B under one judge on the board's split: every metric on the slice asked for
    (or every task), then, without a slice, on each slice value. Cached under both scores'
    state: a re-score makes a new entry."""
    plugin = get_plugin(benchmark.plugin)
    if a.pk == b.pk:
        raise ComparisonError("pick two different submissions")
    split = board_split(benchmark=benchmark, requested=split)
    columns = board_columns(benchmark=benchmark, split=split)
    # The per-task outcomes are large: read only when the comparison is not cached.
    scores = {
        s.submission_id: s
        for s in Score.objects.filter(judge=judge, submission__in=[a, b]).defer(
            "contributions", "slices", "results", "held_out_results"
        )
    }
    if a.pk not in scores or b.pk not in scores:
        raise ComparisonError(f"judge {judge.slug!r} has not scored both submissions")
    score_a, score_b = scores[a.pk], scores[b.pk]
    key = cache_key(
        "compare-v2",
        score_a.pk,
        score_a.computed_at.isoformat(),
        score_b.pk,
        score_b.computed_at.isoformat(),
        split,
        requested_slice.key if requested_slice else "",
        slices_version(plugin),
    )
    cached = cache.get(key)
    if cached is None:
        cached = _compute(
            benchmark,
            plugin,
            columns,
            _contributions(score_a),
            _contributions(score_b),
            requested_slice,
        )
        cache.set(key, cached, COMPARE_CACHE_SECONDS)
    overall, by_slice, tasks_a, tasks_b = cached
    return SubmissionComparison(
        a, b, judge, split, columns, tasks_a, tasks_b, overall, by_slice, key
    )


def _compute(benchmark, plugin, columns, a, b, requested_slice):
    attributes = task_attributes(benchmark=benchmark)

    def within(chosen: BoardSlice | None):
        if chosen is None:
            return None
        return lambda task: attributes.get(task, {}).get(chosen.attribute) == chosen.value

    overall_tasks = common_tasks(a, b, within(requested_slice))
    overall = SliceComparison(
        requested_slice, compare(plugin, columns, a, b, overall_tasks, draws=DRAWS)
    )
    by_slice = []
    if requested_slice is None:
        for choice in slice_choices(benchmark=benchmark):
            for value, _ in choice.values:
                chosen = BoardSlice(choice.attribute, value, f"{choice.label}: {value}")
                tasks = common_tasks(a, b, within(chosen))
                # Per slice the differences, the tests and their n; a slice's intervals are
                # computed when it is asked for (?slice=).
                found = compare(plugin, columns, a, b, tasks, draws=0)
                found = Comparison(found.tasks, found.draws, found.seed, found.metrics)
                by_slice.append(SliceComparison(chosen, found))
    return overall, by_slice, len(a.scored), len(b.scored)
