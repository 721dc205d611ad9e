"""A benchmark's board state: one short token that changes whenever anything a public page of
the benchmark shows can change (a score added or recomputed, a submission published, withdrawn,
hidden, flagged, verified, shown anonymously or revealed, a system or team renamed, a judge, a
prompt or a task added, a human-calibrated number written or deleted), and the time it last changed.

Whole responses and rendered tables are cached under it, so invalidating them is a new token,
never a search for stale entries. The token is a digest of the rows themselves, read at most once
every ``BOARD_STATE_SECONDS`` across all web processes (it is kept in the shared response cache);
the services that change what a board shows call ``board_changed`` so that the next reader gets
a new token at once. Whatever changes rows without saying so is seen within those seconds.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.db.models import Count, Max, OuterRef, Q, Subquery, Sum

from evaluation.models import (
    Benchmark,
    CalibratedScore,
    Judge,
    PromptVersion,
    Score,
    ScorerVersion,
    Submission,
    System,
    Task,
)

RESPONSE_CACHE = "responses"
SITE = "*"  # the home page's state: every board's


@dataclass(frozen=True)
class BoardState:
    token: str
    modified: float  # Unix time the token was first seen


def _cache():
    return caches[RESPONSE_CACHE]


def _key(slug: str) -> str:
    return f"board-state-v1:{slug}"


def _last_key(slug: str) -> str:
    return f"board-state-last-v1:{slug}"


def _fields(model, prefix: str = "") -> list[str]:
    return [prefix + field.attname for field in model._meta.concrete_fields]


def _per_benchmark(model, path: str, value):
    """``value`` aggregated over the model's rows of the outer benchmark, as a subquery."""
    rows = model.objects.filter(**{path: OuterRef("pk")}).order_by().values(path)
    return Subquery(rows.annotate(value=value).values("value")[:1])


def _digest(slug: str) -> str | None:
    """Every row a page of the benchmark reads, as a digest, in two queries: the benchmark with
    its scores (how many, the latest computed, how many carry slices), calibrated scores (how
    many, which, the latest computed), judges, scorer versions, prompts and tasks counted;
    then its submissions with their systems and teams (visibility, anonymity, moderation,
    status, names)."""
    sliced = Count("pk", filter=Q(slices__isnull=False))
    benchmark = list(
        Benchmark.objects.filter(slug=slug).values_list(
            *_fields(Benchmark),
            _per_benchmark(Score, "submission__benchmark", Count("pk")),
            _per_benchmark(Score, "submission__benchmark", Sum("pk")),
            _per_benchmark(Score, "submission__benchmark", Max("computed_at")),
            _per_benchmark(Score, "submission__benchmark", sliced),
            _per_benchmark(CalibratedScore, "submission__benchmark", Count("pk")),
            _per_benchmark(CalibratedScore, "submission__benchmark", Sum("pk")),
            _per_benchmark(CalibratedScore, "submission__benchmark", Max("computed_at")),
            _per_benchmark(Judge, "benchmark", Count("pk")),
            _per_benchmark(Judge, "benchmark", Max("pk")),
            _per_benchmark(ScorerVersion, "benchmark", Max("pk")),
            _per_benchmark(PromptVersion, "benchmark", Max("pk")),
            _per_benchmark(Task, "benchmark", Count("pk")),
        )
    )
    if not benchmark:
        return None
    submission_fields = [
        field
        for field in _fields(Submission)
        # Kept out: large, or never on a public page (files, progress of the pipeline).
        if field
        not in {"manifest", "options", "bundle", "heartbeat_at", "requeued_at", "tasks_ingested"}
    ]
    submissions = list(
        Submission.objects.filter(benchmark__slug=slug)
        .order_by("pk")
        .values_list(
            *submission_fields,
            *_fields(System, "system__"),
            *[f"team__{field}" for field in ("name", "slug")],
        )
    )
    return hashlib.sha256(repr((benchmark, submissions)).encode()).hexdigest()[:24]


def _read(slug: str, compute) -> BoardState | None:
    cache = _cache()
    found = cache.get(_key(slug))
    if found is not None:
        return found
    token = compute()
    if token is None:
        return None
    last = cache.get(_last_key(slug))
    state = last if last is not None and last.token == token else BoardState(token, time.time())
    if state is not last:
        cache.set(_last_key(slug), state, None)
    seconds = settings.BOARD_STATE_SECONDS
    if seconds > 0:
        cache.set(_key(slug), state, seconds)
    return state


def board_state(*, slug: str) -> BoardState | None:
    """The board state of the benchmark with this slug; None when there is none."""

    return _read(slug, lambda: _digest(slug))


def site_state() -> BoardState:
    """The state of every board together (the home page lists them all)."""

    def compute() -> str:
        slugs = list(Benchmark.objects.order_by("slug").values_list("slug", flat=True))
        states = [board_state(slug=slug) for slug in slugs]
        text = repr([(slug, state.token) for slug, state in zip(slugs, states, strict=True)])
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    return _read(SITE, compute)


def board_changed(
    *, benchmark_id: int | None = None, submission_id: int | None = None, slug: str = ""
) -> None:
    """Say that what a benchmark's pages show has changed (the benchmark given by its id, its
    slug or one of its submissions): once the current transaction commits, the next reader of
    any of its pages (and of the home page) reads a new state."""
    if not slug:
        found = (
            Benchmark.objects.filter(pk=benchmark_id)
            if benchmark_id is not None
            else Benchmark.objects.filter(submissions__pk=submission_id)
        )
        slug = found.values_list("slug", flat=True).first()
    if not slug:
        return

    def forget():
        _cache().delete_many([_key(slug), _key(SITE)])

    transaction.on_commit(forget)
