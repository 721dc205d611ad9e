"""Reads of the evaluation context."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from evaluation.benchmarks.mpbench.scoring import TaskSpec
from evaluation.models import Benchmark, PromptVersion, Task


def current_prompts(*, benchmark: Benchmark) -> dict[str, PromptVersion]:
    """The newest version of each judge prompt."""
    current: dict[str, PromptVersion] = {}
    for prompt in benchmark.prompts.order_by("kind", "-version"):
        current.setdefault(prompt.kind, prompt)
    return current


def task_spec(task: Task) -> TaskSpec:
    return TaskSpec(
        task_id=task.task_id,
        family=task.family,
        should_speak=task.should_speak,
        metatranscript=task.metatranscript,
        question_text=task.question_text,
        answer_text=task.answer_text,
        is_speaker_name=task.is_speaker_name,
    )


def submission_summary(*, submission) -> dict:
    """What `submit --json` prints: id, status, the results under the submission's judge, and
    how many judgments failed."""
    from evaluation.models import Score

    score = Score.objects.filter(submission=submission, judge_id=submission.judge_id).first()
    return {
        "submission": submission.pk,
        "status": submission.status,
        "incomplete": submission.is_partial,
        "results": score.results if score else None,
        "failed_judgments": score.judgments_failed if score else 0,
        "error": submission.error or None,
    }


def submission_progress(*, submission) -> dict:
    """Counts behind the status line: tasks ingested, judgments finished and failed."""
    from django.db.models import Count, Q

    from evaluation.models import Judgment, TaskJudgment

    links = TaskJudgment.objects.filter(
        task_result__submission=submission, judge_id=submission.judge_id
    )
    counts = links.aggregate(
        total=Count("pk"),
        skipped=Count("pk", filter=Q(judgment__isnull=True)),
        done=Count("pk", filter=Q(judgment__status=Judgment.Status.DONE)),
        failed=Count("pk", filter=Q(judgment__status=Judgment.Status.FAILED)),
    )
    return {
        "tasks_total": submission.benchmark.tasks.count(),
        "tasks_ingested": submission.tasks_ingested,
        "judgments_total": counts["total"] - counts["skipped"],
        "judgments_done": counts["done"],
        "judgments_failed": counts["failed"],
        "empty_responses": counts["skipped"],
    }


def submissions_visible_to(*, user) -> QuerySet:
    """Every submission this user may see: public ones (published and not hidden, or reported
    in a paper), their teams' own, and everything for staff. The one rule behind every page,
    API endpoint, export, chart and file URL."""
    from evaluation.models import Membership, Submission

    public = Q(is_reported=True) | Q(is_published=True, is_hidden=False)
    if user is None or not user.is_authenticated:
        return Submission.objects.filter(public)
    if user.is_staff:
        return Submission.objects.all()
    # A subquery, not a join over memberships, so each submission comes back once.
    mine = Membership.objects.filter(user=user).values("team_id")
    return Submission.objects.filter(public | Q(team_id__in=mine))


def user_can_see_submission(*, user, submission) -> bool:
    return submissions_visible_to(user=user).filter(pk=submission.pk).exists()
