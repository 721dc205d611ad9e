"""What a submission's numbers rest on, to cite and to check: a permalink to its score as it
was computed (it survives re-scoring, with the history of its numbers), and every task's outcome
and judgment as CSV or JSON."""

from __future__ import annotations

import json

from django.http import Http404, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from evaluation.benchmarks import get_plugin
from evaluation.exports import csv_lines
from evaluation.held_out import task_results_for
from evaluation.models import ScoreRecord, TaskJudgment
from leaderboard.selectors import board_columns
from leaderboard.selectors_submissions import score_tables
from leaderboard.views import throttled_like_the_api
from leaderboard.views_submissions import _visible_submission

OUTCOME_FIELDS = (
    "task_id",
    "present",
    "kind",
    "slot",
    "label",
    "state",
    "verdict",
    "decided_without_call",
    "model",
    "prompt_version",
    "attempts",
    "latency_ms",
    "reasoning",
    "error",
    "output",
)


@require_safe
def score_record_page(request, pk: int, record_id: int):
    """One set of numbers as they were computed, with the judge, prompts and processing behind
    them, and every other set the submission has had."""
    submission = _visible_submission(request, pk)
    record = get_object_or_404(ScoreRecord, pk=record_id, submission=submission)
    history = list(
        ScoreRecord.objects.filter(submission=submission).order_by("-computed_at", "-pk")
    )
    columns = board_columns(benchmark=submission.benchmark)
    for other in history:
        other.cells = [(c, c.value(other.results)) for c in columns]
    return render(
        request,
        "leaderboard/score_record.html",
        {
            "submission": submission,
            "record": record,
            "tables": score_tables(submission=submission, results=record.results),
            "history": history,
            "columns": columns,
            "latest": history[0].pk == record.pk if history else True,
        },
    )


def _cell(value):
    """A CSV cell: numbers stay numbers and text stays text (csv_lines guards formulas)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def outcome_rows(submission, *, user) -> list[dict]:
    """One row per judged slot of every task this viewer may see (held-out tasks: staff only)
    under the submission's own judge (a task with no slot gets one row), with the plug-in's task
    columns."""
    plugin = get_plugin(submission.benchmark.plugin)
    results = task_results_for(user=user, submission=submission)
    links: dict[int, list[TaskJudgment]] = {}
    for link in (
        TaskJudgment.objects.filter(task_result__in=results, judge_id=submission.judge_id)
        .select_related("judgment", "judgment__prompt_version")
        .order_by("kind", "slot")
    ):
        links.setdefault(link.task_result_id, []).append(link)
    rows = []
    for result in results.select_related("task").order_by("task__task_id"):
        columns = {}
        for column in plugin.task_columns:
            source = {"spec": result.task.spec, "data": result.data, "detection": result.detection}
            found = source[column.source]
            columns[column.label] = found.get(column.field) if isinstance(found, dict) else None
        base = {
            "task_id": result.task.task_id,
            "present": bool(result.files) or bool(result.data),
            **columns,
        }
        for link in links.get(result.pk, []) or [None]:
            rows.append({**base, **_slot(link)})
    return rows


def _slot(link: TaskJudgment | None) -> dict:
    if link is None:
        return {"state": "not judged"}
    judgment = link.judgment
    if judgment is None:
        fixed = link.fixed or {}
        return {
            "kind": link.kind,
            "slot": link.slot,
            "label": link.label,
            "state": "fixed",
            "verdict": fixed.get("verdict"),
            "decided_without_call": True,
            "output": fixed,
        }
    return {
        "kind": link.kind,
        "slot": link.slot,
        "label": link.label,
        "state": judgment.status,
        "verdict": judgment.verdict,
        "decided_without_call": False,
        "model": judgment.model,
        "prompt_version": judgment.prompt_version.version,
        "attempts": judgment.attempts,
        "latency_ms": judgment.latency_ms,
        "reasoning": judgment.reasoning,
        "error": judgment.error,
        "output": judgment.output,
        "raw_output": judgment.raw_output,
    }


@require_safe
@throttled_like_the_api
def submission_outcomes(request, pk: int, fmt: str):
    """Every task's outcome and judgment under the submission's judge, as CSV or JSON."""
    submission = _visible_submission(request, pk)
    if fmt not in ("csv", "json"):
        raise Http404("csv or json")
    plugin = get_plugin(submission.benchmark.plugin)
    rows = outcome_rows(submission, user=request.user)
    name = f"submission-{submission.pk}-outcomes.{fmt}"
    if fmt == "json":
        response = JsonResponse(
            {
                "submission": submission.pk,
                "benchmark": submission.benchmark.slug,
                "judge": submission.judge.slug if submission.judge else None,
                "rules_version": plugin.rules_version,
                "rows": rows,
            },
            json_dumps_params={"ensure_ascii": False},
        )
    else:
        fields = [
            *OUTCOME_FIELDS[:2],
            *(c.label for c in plugin.task_columns),
            *OUTCOME_FIELDS[2:],
        ]
        lines = ([_cell(row.get(field)) for field in fields] for row in rows)
        response = StreamingHttpResponse(
            csv_lines(fields, lines), content_type="text/csv; charset=utf-8"
        )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
