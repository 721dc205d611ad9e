"""Reads behind the API. Everything derived from a submission starts from evaluation's
`submissions_visible_to`, the privacy rule."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from evaluation.benchmarks import get_plugin
from evaluation.held_out import held_out_column_band, sees_held_out
from evaluation.identity import viewer_for
from evaluation.models import (
    Benchmark,
    CalibratedScore,
    Judge,
    Score,
    Submission,
    System,
    TaskJudgment,
    TaskResult,
)
from evaluation.scorer import current_scorer, older_parts
from evaluation.selectors import (
    current_prompts,
    judge_usage,
    submissions_visible_to,
)
from leaderboard.selectors import board_columns, every_split_columns
from leaderboard.selectors_calibrated import Calibrated, study_label


def submission_list(*, user, filters: dict | None = None) -> QuerySet[Submission]:
    filters = filters or {}
    submissions = submissions_visible_to(user=user).select_related(
        "benchmark", "system", "team", "judge"
    )
    if filters.get("benchmark"):
        submissions = submissions.filter(benchmark__slug=filters["benchmark"])
    if filters.get("system") is not None:
        # An anonymous submission is never found through its system.
        submissions = submissions.filter(system_id=filters["system"]).exclude(
            viewer_for(user).hidden_q()
        )
    if filters.get("status"):
        submissions = submissions.filter(status=filters["status"])
    return submissions.order_by("-created_at", "-pk")


def benchmark_list() -> QuerySet[Benchmark]:
    return Benchmark.objects.annotate(task_count=Count("tasks")).order_by("name", "pk")


def benchmark_declaration(*, benchmark: Benchmark) -> dict:
    """What the benchmark's plug-in declares, for API clients to read its results."""
    plugin = get_plugin(benchmark.plugin)
    return {
        "plugin": plugin.slug,
        "rules_version": plugin.rules_version,
        "metrics": [
            {
                "key": m.key,
                "label": m.label,
                "group": m.group,
                "type": m.type,
                "better": "higher" if m.higher_is_better else "lower",
                "chance": m.chance,
                "interval": m.interval,
                "decimals": m.decimals,
                "unit": m.unit,
            }
            for m in plugin.metrics
        ],
        "splits": [{"key": s.key, "label": s.label} for s in plugin.splits],
        "row_groups": [{"key": g.key, "label": g.label} for g in plugin.row_groups],
        "rank_keys": list(plugin.rank_keys),
        "judge_kinds": [{"key": k.key, "label": k.label} for k in plugin.judge_kinds],
        "task_filters": [
            {"name": f.name, "label": f.label, "type": f.type} for f in plugin.task_filters
        ],
        "steps": [{"name": s.name, "scope": s.scope, "label": s.label} for s in plugin.steps],
        "upload": {
            "label": plugin.upload.label,
            "suffixes": list(plugin.upload.suffixes),
            "options": [
                {"name": o.name, "label": o.label, "choices": [c for c, _ in o.choices]}
                for o in plugin.upload.options
            ],
        },
    }


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
    shown = submissions_visible_to(user=user).exclude(viewer_for(user).hidden_q())
    return System.objects.filter(pk__in=shown.values("system_id")).order_by("name")


def system_submissions(*, user, system: System) -> QuerySet[Submission]:
    return submission_list(user=user).filter(system=system).exclude(viewer_for(user).hidden_q())


def submission_scores(*, submission: Submission, user=None) -> list[dict]:
    """Results per judge, with the tokens its judgments used and their cost where priced. A
    judgment shared by several tasks (identical prompts) is counted once."""
    staff = bool(user is not None and user.is_authenticated and user.is_staff)
    rows: dict[int, list[CalibratedScore]] = {}
    for row in CalibratedScore.objects.filter(submission=submission):
        rows.setdefault(row.judge_id, []).append(row)
    columns = {c.key: c for c in every_split_columns(benchmark=submission.benchmark)}
    scored = []
    for score in Score.objects.filter(submission=submission).select_related("judge"):
        calibrated = {}
        for row in rows.get(score.judge_id, []):
            found = Calibrated.of(row).as_scored(
                column=columns.get(row.metric), results=score.results
            )
            calibrated[row.metric] = {**found.numbers(), "study": study_label(found, staff=staff)}
        usage = judge_usage(submission=submission, judge=score.judge)
        scored.append(
            {
                "judge": score.judge.slug,
                "official": score.judge.is_official,
                "offline": score.judge.is_offline,
                "results": score.results,
                "held_out_results": _held_out_shown(score.held_out_results, submission, user),
                "scorer": score.scorer,
                "older": older_parts(
                    score.scorer,
                    current_scorer(benchmark=submission.benchmark, judge=score.judge),
                ),
                "judgments_total": score.judgments_total,
                "judgments_failed": score.judgments_failed,
                "tokens": {"input": usage.input_tokens, "output": usage.output_tokens},
                "cost_usd": None if usage.cost_usd is None else round(float(usage.cost_usd), 6),
                "computed_at": score.computed_at,
                "calibrated": calibrated,
            }
        )
    scored.sort(
        key=lambda item: (item["judge"] != getattr(submission.judge, "slug", None), item["judge"])
    )
    return scored


def task_judgments(*, task_result: TaskResult, judge_slug: str = "") -> QuerySet[TaskJudgment]:
    links = task_result.task_judgments.select_related(
        "judge", "judgment", "judgment__prompt_version"
    ).order_by("-judge__is_official", "judge__slug", "kind", "slot")
    if judge_slug:
        links = links.filter(judge__slug=judge_slug)
    return links


def _held_out_shown(results: dict | None, submission: Submission, user) -> dict | None:
    """Held-out results as this user may read them: staff exactly; everyone else the band each
    of the board's metrics falls in (evaluation.held_out.held_out_band), never a number."""
    if results is None or sees_held_out(user):
        return results
    columns = board_columns(benchmark=submission.benchmark)
    tasks = submission.benchmark.tasks.filter(held_out=True).count()
    return {"bands": {c.key: held_out_column_band(c, results, tasks=tasks) for c in columns}}
