"""The submission page (live status, scores, judge and cost, per-task drill-down) and the task
page (the plug-in's drill-down, audio, every judgment). Every view starts from
submissions_visible_to: what a viewer may not see is a 404. The reads are in
selectors_submissions.py."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from evaluation.benchmarks import get_plugin
from evaluation.held_out import task_results_for
from evaluation.identity import viewer_for
from evaluation.models import Score, Submission, TaskResult
from evaluation.selectors import (
    judge_usage,
    submission_change_refusal,
    submission_progress,
    submission_spend_held,
    submission_spending,
    submissions_visible_to,
    task_results_filtered,
    task_verdicts,
    workers_silent,
)
from evaluation.services import failed_judgments_retry, submission_resume
from evaluation.services import submissions as submission_services
from evaluation.services.spending import spend_release
from leaderboard.audio import clip_for
from leaderboard.response_cache import reader_cached
from leaderboard.selectors_calibrated import submission_calibrated
from leaderboard.selectors_submissions import (
    FINAL_STATUSES,
    duplicate_bundles,
    run_disclosure,
    score_records,
    score_tables,
    submission_facts,
    submission_queue_ahead,
    submission_stall,
    submission_steps,
    task_judgment_groups,
    task_page_context,
    user_may_manage,
)

S = Submission.Status
TASKS_PER_PAGE = 50
YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


def _visible_submission(request, pk: int) -> Submission:
    visible = (
        submissions_visible_to(user=request.user)
        .filter(is_reported=False, pk=pk)
        .values_list("pk", flat=True)
    )
    submission = get_object_or_404(
        Submission.objects.select_related("benchmark", "system", "judge", "team"),
        pk__in=visible,
    )
    # A paper under review is "Anonymous" to everyone outside its team and staff.
    viewer = viewer_for(request.user)
    submission.identity_hidden = viewer.hides(submission)
    submission.shown_name = viewer.name(submission)
    return submission


class TaskFilterForm(forms.Form):
    """The plug-in's task filters, plus the verdict under the submission's judge."""

    verdict = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any"),
            ("correct", "judged correct"),
            ("wrong", "judged wrong"),
            ("none", "no verdict yet / failed"),
        ],
    )
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, submission: Submission):
        super().__init__(data)
        self.plugin_filters = get_plugin(submission.benchmark.plugin).task_filters
        for task_filter in self.plugin_filters:
            if task_filter.type == "bool":
                choices = YES_NO
            elif task_filter.choices:
                choices = [("", "any"), *task_filter.choices]
            else:
                lookup = f"spec__{task_filter.field}"
                values = (
                    submission.benchmark.tasks.order_by(lookup)
                    .values_list(lookup, flat=True)
                    .distinct()
                    if task_filter.source == "spec"
                    else []
                )
                choices = [("", "any")] + [(str(v), str(v)) for v in values if v is not None]
            self.fields[task_filter.name] = forms.ChoiceField(
                required=False, choices=choices, label=task_filter.label
            )
        # The filters first, in the plug-in's order.
        self.order_fields([f.name for f in self.plugin_filters] + ["verdict", "page"])

    def filters(self) -> dict:
        data = self.cleaned_data
        found = {"verdict": data.get("verdict")}
        for task_filter in self.plugin_filters:
            value = data.get(task_filter.name)
            if task_filter.type == "bool" and value:
                value = value == "yes"
            found[task_filter.name] = value
        return found


# --- Views -----------------------------------------------------------------------------------


def _progress_context(request, submission: Submission) -> dict:
    progress = submission_progress(submission=submission)
    final = submission.status in FINAL_STATUSES
    may_manage = user_may_manage(user=request.user, submission=submission)
    return {
        "submission": submission,
        "progress": progress,
        "steps": submission_steps(submission=submission, progress=progress),
        "queue_ahead": submission_queue_ahead(submission=submission),
        "final": final,
        "stall": submission_stall(submission=submission),
        "no_worker": None if final else workers_silent(),
        "may_manage": may_manage,
        # Judging held at a spending limit, with the figures: the team's business (and staff's).
        "spend_held": submission_spend_held(submission=submission) if may_manage else [],
    }


def _column(row: TaskResult, column) -> object:
    source = {"spec": row.task.spec, "data": row.data, "detection": row.detection}[column.source]
    return source.get(column.field) if isinstance(source, dict) else None


@reader_cached("submission")
@require_safe
def submission_page(request, pk: int):
    submission = _visible_submission(request, pk)
    plugin = get_plugin(submission.benchmark.plugin)
    form = TaskFilterForm(request.GET, submission=submission)
    filters = form.filters() if form.is_valid() else {}
    rows = task_results_filtered(submission=submission, filters=filters, user=request.user)
    page = Paginator(rows, TASKS_PER_PAGE).get_page(
        (form.cleaned_data.get("page") if form.is_valid() else None) or 1
    )
    verdicts = task_verdicts(rows=list(page.object_list), judge_id=submission.judge_id)
    for row in page.object_list:
        row.verdicts = verdicts[row.pk]
        row.cells = [(column, _column(row, column)) for column in plugin.task_columns]
    query = request.GET.copy()
    query.pop("page", None)
    score = Score.objects.filter(submission=submission, judge_id=submission.judge_id).first()
    progress = _progress_context(request, submission)
    context = {
        **progress,
        # Members who are not owners see the owners' actions disabled, with this reason.
        "change_refusal": submission_change_refusal(user=request.user, submission=submission)
        if progress["may_manage"]
        else "",
        # What judging costs the team is its own business (and staff's).
        "spending": submission_spending(submission=submission) if progress["may_manage"] else [],
        "plugin": plugin,
        "score": score,
        "tables": score_tables(submission=submission, results=score.results if score else None),
        "facts": submission_facts(submission=submission),
        "disclosure": run_disclosure(submission=submission, viewer=viewer_for(request.user)),
        "usage": judge_usage(submission=submission, judge=submission.judge),
        "form": form,
        "page": page,
        "task_columns": plugin.task_columns,
        "filter_query": query.urlencode(),
        "retried": int(retried) if (retried := request.GET.get("retried", "")).isdigit() else None,
        "records": score_records(submission=submission),
        "calibrated": submission_calibrated(submission=submission, judge_id=submission.judge_id),
        # A study's name is staff's working title: others read "a calibration study".
        "study_names": bool(request.user.is_authenticated and request.user.is_staff),
        "duplicates": duplicate_bundles(submission=submission, user=request.user),
    }
    response = render(
        request, "leaderboard/submission.html", context, status=200 if form.is_valid() else 400
    )
    # Stored for visitors once final: the board state follows its status, not its progress.
    response.reader_storable = progress["final"]
    return response


# --- What the team does with its own submission -----------------------------------------------

MANAGE_ACTIONS = {
    "publish": (
        "Publish",
        "Everyone will see it on the board, in the exports and charts, once it is scored.",
    ),
    "unpublish": (
        "Unpublish",
        "It goes back to your team only: the board, exports and charts stop showing it.",
    ),
    "anonymize": (
        "Show anonymously",
        "Outside your team it reads “Anonymous (under review)”: no system name, team, facts or "
        "links, until you reveal it.",
    ),
    "reveal": ("Reveal", "Its system, team and links show again to everyone who may see it."),
    "delete": (
        "Delete",
        "The submission, its scores, its task results and every file stored for it are deleted "
        "for good; judgments no other submission uses go too. This cannot be undone.",
    ),
}


def _manage(action: str, submission: Submission, user) -> str:
    if action == "publish":
        submission_services.submission_publish(submission=submission, by=user)
        return "Published."
    if action == "unpublish":
        submission_services.submission_unpublish(submission=submission, by=user)
        return "Unpublished: only your team sees it now."
    if action in ("anonymize", "reveal"):
        submission_services.submission_set_anonymous(
            submission=submission, by=user, anonymous=action == "anonymize"
        )
        return "Shown anonymously to others." if action == "anonymize" else "Revealed."
    # Named before it goes: a deleted row has no primary key left.
    named = f"Submission #{submission.pk} ({submission.system.name})"
    submission_services.submission_delete(submission=submission, by=user)
    return f"{named} deleted with its files."


@require_http_methods(["GET", "POST"])
def submission_manage(request, pk: int, action: str):
    """Publish, unpublish, show anonymously, reveal or delete: GET asks to confirm, POST does
    it. The owners of the submission's team and staff only; its other members are told why."""
    submission = _visible_submission(request, pk)
    if action not in MANAGE_ACTIONS:
        raise Http404("no such action")
    if not user_may_manage(user=request.user, submission=submission):
        return HttpResponseForbidden("only the submission's team and staff may change it")
    refusal = submission_change_refusal(user=request.user, submission=submission)
    if refusal:
        return HttpResponseForbidden(refusal, content_type="text/plain; charset=utf-8")
    label, consequence = MANAGE_ACTIONS[action]
    error = ""
    if request.method == "POST":
        try:
            done = _manage(action, submission, request.user)
        except (DjangoValidationError, PermissionDenied) as exc:
            error = " ".join(getattr(exc, "messages", [str(exc)]))
        else:
            if action == "delete":
                target = reverse("leaderboard", args=[submission.benchmark.slug])
            else:
                target = reverse("submission", args=[submission.pk])
            messages.success(request, done)
            return redirect(target)
    return render(
        request,
        "leaderboard/submission_manage.html",
        {
            "submission": submission,
            "action": action,
            "label": label,
            "consequence": consequence,
            "error": error,
        },
        status=409 if error else 200,
    )


@require_safe
def submission_progress_fragment(request, pk: int):
    submission = _visible_submission(request, pk)
    response = render(
        request,
        "leaderboard/fragments/submission_progress.html",
        _progress_context(request, submission),
    )
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def submission_retry(request, pk: int):
    """Re-run what failed: the failed stage of a failed submission, or the failed judgments of a
    scored one. Nothing settled runs again."""
    submission = _visible_submission(request, pk)
    if not user_may_manage(user=request.user, submission=submission):
        return HttpResponseForbidden("only the submission's team and staff may retry it")
    if submission_stall(submission=submission) is not None:
        # No worker has touched it for a while: queue the stage it stopped in again.
        submission_resume(submission=submission)
        return redirect(reverse("submission", args=[submission.pk]))
    if submission.status not in FINAL_STATUSES:
        return HttpResponse(
            f"submission {submission.pk} is still {submission.get_status_display().lower()}; "
            "retry once it has finished",
            status=409,
            content_type="text/plain",
        )
    if submission.status == S.FAILED:
        if not submission_resume(submission=submission):
            return HttpResponse(
                f"submission {submission.pk} cannot be retried: its files were deleted "
                f"{settings.FAILED_FILES_KEEP_DAYS:g} days after it failed; upload it again",
                status=409,
                content_type="text/plain",
            )
        return redirect(reverse("submission", args=[submission.pk]))
    count = failed_judgments_retry(submission=submission)
    return redirect(f"{reverse('submission', args=[submission.pk])}?retried={count}")


@require_POST
def submission_release_spending(request, pk: int):
    """Staff let judging held at a spending limit go past it, and queue it again."""
    submission = _visible_submission(request, pk)
    if not request.user.is_staff:
        return HttpResponseForbidden("only staff may release judging past a spending limit")
    if not spend_release(submission=submission, by=request.user):
        raise Http404("no spending estimate to release")
    submission.refresh_from_db()
    if submission.status in FINAL_STATUSES:
        submission_resume(submission=submission)
    messages.success(request, "Released past the spending limits: judging is queued again.")
    return redirect(reverse("submission", args=[submission.pk]))


@reader_cached("submission", signed_urls=True)
@require_safe
def task_page(request, pk: int, task_id: str):
    submission = _visible_submission(request, pk)
    task_result = get_object_or_404(
        task_results_for(user=request.user, submission=submission).select_related(
            "task", "submission__benchmark", "submission__judge"
        ),
        task__task_id=task_id,
    )
    plugin = get_plugin(submission.benchmark.plugin)
    context = task_page_context(task_result=task_result)
    clips = [
        clip_for(
            key=clip.key,
            user=request.user,
            label=clip.label,
            submission_id=submission.pk,
            markers=[{"time": time, "label": label} for time, label in clip.markers],
            name=clip.name,
        )
        for clip in context.pop("clips", [])
    ]
    response = render(
        request,
        "leaderboard/task.html",
        {
            "submission": submission,
            "row": task_result,
            "task": task_result.task,
            "plugin": plugin,
            "plugin_template": plugin.task_template or "leaderboard/fragments/task_default.html",
            "plugin_context": context,
            "clips": clips,
            "judgment_groups": task_judgment_groups(
                task_result=task_result, judge_id=submission.judge_id
            ),
        },
    )
    # As the submission page: stored for visitors once final. Its clips' signed URLs expire,
    # which reader_cached(signed_urls=True) bounds.
    response.reader_storable = submission.status in FINAL_STATUSES
    return response
