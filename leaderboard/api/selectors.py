"""Reads behind the API. Everything derived from a submission starts from evaluation's
`submissions_visible_to`, the privacy rule."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum

from evaluation.models import (
    Benchmark,
    Judge,
    Judgment,
    Score,
    Submission,
    System,
    TaskJudgment,
    TaskResult,
)
from evaluation.selectors import current_prompts, submissions_visible_to


def submission_list(*, user, filters: dict | None = None) -> QuerySet[Submission]:
    filters = filters or {}
    submissions = submissions_visible_to(user=user).select_related(
        "benchmark", "system", "team", "judge"
    )
    if filters.get("benchmark"):
        submissions = submissions.filter(benchmark__slug=filters["benchmark"])
    if filters.get("system") is not None:
        submissions = submissions.filter(system_id=filters["system"])
    if filters.get("status"):
        submissions = submissions.filter(status=filters["status"])
    return submissions.order_by("-created_at", "-pk")


def benchmark_list() -> QuerySet[Benchmark]:
    return Benchmark.objects.annotate(task_count=Count("tasks")).order_by("name", "pk")


def benchmark_families(*, benchmark: Benchmark) -> list[dict]:
    """Tasks per family: how many, how many where the agent should speak, speaker-name ones."""
    return list(
        benchmark.tasks.values("family")
        .annotate(
            tasks=Count("pk"),
            should_speak=Count("pk", filter=Q(should_speak=True)),
            speaker_name=Count("pk", filter=Q(is_speaker_name=True)),
        )
        .order_by("family")
    )


def benchmark_judges(*, benchmark: Benchmark) -> QuerySet[Judge]:
    return benchmark.judges.order_by("-is_official", "slug")


def prompt_versions(*, benchmark: Benchmark) -> dict[str, dict]:
    """The prompt template version each judge kind uses now (part of every judge identity)."""
    return {
        kind: {"version": prompt.version, "sha256": prompt.sha256}
        for kind, prompt in current_prompts(benchmark=benchmark).items()
    }


def visible_systems(*, user) -> QuerySet[System]:
    """Systems with at least one submission this user may see: a system named only by private
    work stays as private as that work."""
    return System.objects.filter(
        pk__in=submissions_visible_to(user=user).values("system_id")
    ).order_by("name")


def system_submissions(*, user, system: System) -> QuerySet[Submission]:
    return submission_list(user=user).filter(system=system)


def submission_scores(*, submission: Submission) -> list[dict]:
    """Results per judge, with the tokens its judgments used and their cost where priced. A
    judgment shared by several tasks (identical prompts) is counted once."""
    scored = []
    for score in Score.objects.filter(submission=submission).select_related("judge"):
        judgment_ids = TaskJudgment.objects.filter(
            task_result__submission=submission, judge=score.judge, judgment__isnull=False
        ).values("judgment_id")
        tokens = Judgment.objects.filter(pk__in=judgment_ids).aggregate(
            input=Sum("input_tokens"), output=Sum("output_tokens")
        )
        tokens = {key: value or 0 for key, value in tokens.items()}
        scored.append(
            {
                "judge": score.judge.slug,
                "official": score.judge.is_official,
                "offline": score.judge.is_offline,
                "results": score.results,
                "judgments_total": score.judgments_total,
                "judgments_failed": score.judgments_failed,
                "tokens": tokens,
                "cost_usd": _cost(score.judge, tokens),
                "computed_at": score.computed_at,
            }
        )
    scored.sort(
        key=lambda item: (item["judge"] != getattr(submission.judge, "slug", None), item["judge"])
    )
    return scored


def _cost(judge: Judge, tokens: dict) -> float | None:
    if judge.price_input_per_mtok is None or judge.price_output_per_mtok is None:
        return None
    million = Decimal(1_000_000)
    cost = (
        Decimal(tokens["input"]) * judge.price_input_per_mtok
        + Decimal(tokens["output"]) * judge.price_output_per_mtok
    ) / million
    return round(float(cost), 6)


def submission_tasks(*, submission: Submission, filters: dict | None = None) -> QuerySet:
    filters = filters or {}
    rows = submission.task_results.select_related("task").order_by("task__task_id")
    if filters.get("family"):
        rows = rows.filter(task__family=filters["family"])
    for name, field in (
        ("spoke", "spoke"),
        ("should_speak", "task__should_speak"),
        ("correct", "turn_taking_correct"),
    ):
        if filters.get(name) is not None:
            rows = rows.filter(**{field: filters[name]})
    return rows


def task_judgments(*, task_result: TaskResult, judge_slug: str = "") -> QuerySet[TaskJudgment]:
    links = task_result.task_judgments.select_related(
        "judge", "judgment", "judgment__prompt_version"
    ).order_by("-judge__is_official", "judge__slug", "kind")
    if judge_slug:
        links = links.filter(judge__slug=judge_slug)
    return links
