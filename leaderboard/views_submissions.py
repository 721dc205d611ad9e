"""The submission page (live status, scores, judge and cost, per-task drill-down) and the task
page (conversation, timeline, responses, audio, judgments). Every view starts from
submissions_visible_to: what a viewer may not see is a 404."""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from decimal import Decimal

from django import forms
from django.core.paginator import Paginator
from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.http import HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from evaluation.benchmarks.mpbench.detection import (
    TRANSCRIPT_PAIRS,
    Word,
    choose_pair,
    parse_transcript,
)
from evaluation.models import Judgment, Membership, Score, Submission, TaskJudgment, TaskResult
from evaluation.selectors import submission_progress, submissions_visible_to
from evaluation.services import judgments_retry_failed
from leaderboard.audio import Clip, clip_for, open_stored_seekable

S = Submission.Status
# What still holds a place in the pipeline ahead of a newer submission.
QUEUE_STATUSES = (S.QUEUED, S.INGESTING, S.DETECTING, S.JUDGING)
FINAL_STATUSES = (S.SCORED, S.FAILED)
TASKS_PER_PAGE = 50
TRANSCRIPT_MAX_BYTES = 50 * 1024 * 1024
SPOKE_VIA = {
    "post_input": "words after the input ended",
    "half_duplex": "half-duplex run: the whole response counts",
    "full_text": "no word timestamps: the whole response counts",
}
INPUT_AUDIO = "all_stitched.wav"
RESPONSE_AUDIO = "response.wav"


# --- Reads -----------------------------------------------------------------------------------


def _visible_submission(request, pk: int) -> Submission:
    visible = (
        submissions_visible_to(user=request.user)
        .filter(is_reported=False, pk=pk)
        .values_list("pk", flat=True)
    )
    return get_object_or_404(
        Submission.objects.select_related("benchmark", "system", "judge", "team"),
        pk__in=visible,
    )


def submission_queue_ahead(*, submission: Submission) -> int | None:
    """Submissions created before this one that are still queued or being processed, or None
    once this one is past the queue."""
    if submission.status not in QUEUE_STATUSES:
        return None
    return (
        Submission.objects.filter(status__in=QUEUE_STATUSES, is_reported=False)
        .filter(
            Q(created_at__lt=submission.created_at)
            | Q(created_at=submission.created_at, pk__lt=submission.pk)
        )
        .count()
    )


def user_may_manage(*, user, submission: Submission) -> bool:
    """Staff and the submission's team may retry its failed judgments."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return (
        submission.team_id is not None
        and Membership.objects.filter(team_id=submission.team_id, user=user).exists()
    )


@dataclass(frozen=True)
class JudgeUsage:
    judgments: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    prompt_versions: list[tuple[str, int, str]]


def submission_judge_usage(*, submission: Submission) -> JudgeUsage:
    """Tokens and cost of the distinct judgments behind this submission's scores, priced with
    the judge's USD per million tokens (None when a price is unknown), and the prompt versions
    they used."""
    judge = submission.judge
    used = TaskJudgment.objects.filter(
        task_result__submission=submission, judge_id=submission.judge_id, judgment__isnull=False
    ).values("judgment_id")
    judgments = Judgment.objects.filter(pk__in=used)
    totals = judgments.aggregate(
        n=Count("pk"), tokens_in=Sum("input_tokens"), tokens_out=Sum("output_tokens")
    )
    tokens_in, tokens_out = totals["tokens_in"] or 0, totals["tokens_out"] or 0
    cost = None
    if (
        judge is not None
        and judge.price_input_per_mtok is not None
        and judge.price_output_per_mtok is not None
    ):
        cost = (
            tokens_in * judge.price_input_per_mtok + tokens_out * judge.price_output_per_mtok
        ) / Decimal(1_000_000)
    versions = (
        judgments.values_list("kind", "prompt_version__version", "prompt_version__sha256")
        .distinct()
        .order_by("kind", "prompt_version__version")
    )
    return JudgeUsage(
        judgments=totals["n"],
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        prompt_versions=[(kind, version, sha[:12]) for kind, version, sha in versions],
    )


YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


class TaskFilterForm(forms.Form):
    family = forms.ChoiceField(required=False)
    turn_taking = forms.ChoiceField(
        required=False, choices=[("", "any"), ("correct", "correct"), ("wrong", "wrong")]
    )
    verdict = forms.ChoiceField(
        required=False,
        choices=[
            ("", "any"),
            ("correct", "judged correct"),
            ("wrong", "judged wrong"),
            ("none", "no verdict yet / failed"),
        ],
    )
    spoke = forms.ChoiceField(required=False, choices=YES_NO)
    should_speak = forms.ChoiceField(required=False, choices=YES_NO)
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, families: list[str]):
        super().__init__(data)
        self.fields["family"].choices = [("", "any")] + [(f, f) for f in families]


def submission_task_rows(*, submission: Submission, filters: dict):
    """The submission's task results, filtered; ordered by task id. ``verdict`` looks at every
    judgment of the task under the submission's judge: correct = all true, wrong = any false
    (an empty response judged false without a call counts), none = not judged or failed."""
    rows = submission.task_results.select_related("task").order_by("task__task_id")
    if filters.get("family"):
        rows = rows.filter(task__family=filters["family"])
    if filters.get("turn_taking"):
        rows = rows.filter(turn_taking_correct=filters["turn_taking"] == "correct")
    if filters.get("spoke"):
        rows = rows.filter(spoke=filters["spoke"] == "yes")
    if filters.get("should_speak"):
        rows = rows.filter(task__should_speak=filters["should_speak"] == "yes")
    if filters.get("verdict"):
        links = TaskJudgment.objects.filter(task_result=OuterRef("pk"), judge=submission.judge_id)
        wrong = Exists(
            links.filter(
                Q(judgment__isnull=True)
                | Q(judgment__status=Judgment.Status.DONE, judgment__verdict=False)
            )
        )
        unsettled = Exists(
            links.filter(judgment__isnull=False).exclude(judgment__status=Judgment.Status.DONE)
        )
        if filters["verdict"] == "correct":
            rows = rows.filter(Exists(links), ~wrong, ~unsettled)
        elif filters["verdict"] == "wrong":
            rows = rows.filter(wrong)
        else:
            rows = rows.filter(~wrong).filter(unsettled | ~Exists(links))
    return rows


def _verdict_state(judgment_id, status, verdict) -> str:
    if judgment_id is None:
        return "empty"
    if status == Judgment.Status.DONE:
        return "correct" if verdict else "wrong"
    return status  # pending, running or failed


def task_verdicts(*, rows: list[TaskResult], judge_id: int | None) -> dict[int, list]:
    """(kind, state) per task result, state one of correct/wrong/empty/pending/running/failed."""
    found: dict[int, list] = {row.pk: [] for row in rows}
    links = (
        TaskJudgment.objects.filter(task_result__in=[row.pk for row in rows], judge_id=judge_id)
        .order_by("kind")
        .values_list(
            "task_result_id", "kind", "judgment_id", "judgment__status", "judgment__verdict"
        )
    )
    for row_pk, kind, judgment_id, status, verdict in links:
        found[row_pk].append((kind, _verdict_state(judgment_id, status, verdict)))
    return found


# --- Task page reads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Conversation:
    speakers: list[dict]
    turns: list[dict]
    raw: str = ""  # shown as is when the metatranscript does not parse


def task_conversation(*, metatranscript: str) -> Conversation:
    """Speakers and turns of a task's metatranscript, each speaker with a colour index."""
    try:
        data = json.loads(metatranscript)
        speakers = [s for s in data.get("speakers", []) if isinstance(s, dict)]
        turns = [t for t in data.get("metatranscript", []) if isinstance(t, dict)]
    except (ValueError, AttributeError):
        return Conversation(speakers=[], turns=[], raw=metatranscript)
    colour = {str(s.get("name")): index % 6 for index, s in enumerate(speakers)}
    return Conversation(
        speakers=[{**s, "colour": colour.get(str(s.get("name")), 6)} for s in speakers],
        turns=[
            {
                "speaker": str(t.get("speaker", "")),
                "content": str(t.get("content", "")),
                "addressee": ", ".join(map(str, t.get("addressee") or [])),
                "colour": colour.get(str(t.get("speaker")), 6),
            }
            for t in turns
        ],
    )


@dataclass(frozen=True)
class TaskWords:
    input_words: list[Word]
    output_words: list[Word]
    input_end: float | None
    files: tuple[str, str] | None = None
    problem: str = ""


def task_result_words(*, task_result: TaskResult) -> TaskWords:
    """Input words, output words and input end (the largest input word end), read from the
    stored bundle: only the two transcript members the scoring rules pick for this task."""
    if task_result.submission.benchmark.plugin != "mp-bench":
        return TaskWords([], [], None, problem="no timeline for this benchmark's bundles")
    files = task_result.files
    pair = choose_pair(lambda name: (files.get(name) or {}).get("size"), TRANSCRIPT_PAIRS)
    if pair is None:
        return TaskWords([], [], None, problem="no transcript pair for this task")
    entries = [files[name].get("entry") for name in pair]
    if None in entries or not task_result.submission.bundle:
        return TaskWords([], [], None, pair, "the transcripts are not in the stored bundle")
    if any(files[name]["size"] > TRANSCRIPT_MAX_BYTES for name in pair):
        return TaskWords([], [], None, pair, "the transcripts are too large to show")
    with (
        open_stored_seekable(task_result.submission.bundle.name) as handle,
        zipfile.ZipFile(handle) as archive,
    ):
        source, output = (parse_transcript(archive.read(entry)) for entry in entries)
    input_words, output_words = source.words, output.words
    input_end = max((w.end for w in input_words), default=None)
    return TaskWords(input_words, output_words, input_end, pair)


# The axis never shows more than this many steps, whatever the timestamps.
MAX_TICKS = 12
TICK_STEPS = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


def _tick_step(duration: float) -> float:
    """The first step of TICK_STEPS leaving at most MAX_TICKS steps over the duration; beyond
    12 hours, 1, 2 or 5 x 10^k hours. The tick count never depends on how large the values are."""
    for step in TICK_STEPS:
        if duration / step <= MAX_TICKS:
            return step
    hours = duration / 3600 / MAX_TICKS
    power = 10.0 ** math.floor(math.log10(hours))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= hours) * 3600


def timeline_layout(words: TaskWords) -> dict:
    """Percent positions for drawing both word lanes on one time axis."""
    ends = [w.end for w in words.input_words + words.output_words]
    duration = max(ends, default=0.0) + 0.5
    if duration <= 0.5 or not math.isfinite(duration):
        return {}

    def place(word: Word, post: bool) -> dict:
        start = max(0.0, float(word.start))
        width = max(0.0, float(word.end) - start)
        return {
            "text": word.text,
            "start": start,
            "end": float(word.end),
            "left": round(100 * start / duration, 3),
            "width": round(max(0.15, 100 * width / duration), 3),
            "post": post,
        }

    end = words.input_end
    step = _tick_step(duration)
    ticks = [round(i * step, 2) for i in range(int(duration // step) + 1)]
    return {
        "duration": duration,
        "input": [place(w, False) for w in words.input_words],
        "output": [place(w, end is not None and w.start >= end) for w in words.output_words],
        "input_end": end,
        "input_end_left": round(100 * end / duration, 3) if end is not None else None,
        "ticks": [{"t": t, "left": round(100 * (t / duration), 3)} for t in ticks],
    }


def task_clips(*, task_result: TaskResult, user, input_end: float | None) -> list[Clip]:
    """Signed player clips for the task's stored audio: input first, then the response."""
    labels = {INPUT_AUDIO: "Input conversation", RESPONSE_AUDIO: "Agent response"}
    names = [name for name, info in task_result.files.items() if "key" in info]
    names.sort(key=lambda n: (n not in labels, list(labels).index(n) if n in labels else 0, n))
    markers = [{"time": input_end, "label": "input ends"}] if input_end is not None else []
    return [
        clip_for(
            key=task_result.files[name]["key"],
            user=user,
            label=f"{labels.get(name, name)} ({name})",
            submission_id=task_result.submission_id,
            markers=markers,
            name=name,
        )
        for name in names
    ]


def task_judgments(*, task_result: TaskResult, judge_id: int | None) -> list[dict]:
    """Every judgment of this task, grouped by judge, the submission's judge first."""
    links = TaskJudgment.objects.filter(task_result=task_result).select_related(
        "judge", "judgment", "judgment__prompt_version"
    )
    groups: dict[int, dict] = {}
    for link in sorted(links, key=lambda x: (x.judge_id != judge_id, x.judge.slug, x.kind)):
        group = groups.setdefault(
            link.judge_id,
            {"judge": link.judge, "primary": link.judge_id == judge_id, "items": []},
        )
        group["items"].append(link)
    return list(groups.values())


# --- Views -----------------------------------------------------------------------------------


PIPELINE = (S.QUEUED, S.INGESTING, S.DETECTING, S.JUDGING, S.AGGREGATING, S.SCORED)


def submission_steps(*, submission: Submission, progress: dict) -> list[dict]:
    """The pipeline as a checklist: each step done, current, waiting or failed."""
    judged = progress["judgments_done"] + progress["judgments_failed"]
    details = [
        ("Validate", "bundle accepted", S.QUEUED),
        (
            "Ingest",
            f"Tasks ingested: {progress['tasks_ingested']} / {progress['tasks_total']}",
            S.INGESTING,
        ),
        ("Detect", "who spoke, when, and the latency", S.DETECTING),
        ("Judge", f"Judged: {judged} / {progress['judgments_total']}", S.JUDGING),
        ("Score", "the table under this judge", S.AGGREGATING),
    ]
    if submission.status == S.FAILED:
        # How far it got, from what it left behind.
        reached = [
            True,
            submission.half_duplex is not None or progress["judgments_total"] > 0,
            submission.half_duplex is not None,
            progress["judgments_total"] > 0 and judged == progress["judgments_total"],
            False,
        ]
        first_missing = reached.index(False)
        states = [
            "done" if i < first_missing else "failed" if i == first_missing else "waiting"
            for i in range(len(details))
        ]
    else:
        now = PIPELINE.index(submission.status)
        states = []
        for index, (_, _, stage) in enumerate(details):
            position = PIPELINE.index(stage)
            if index == 0 or now > position:
                states.append("done")
            elif now == position:
                states.append("current")
            else:
                states.append("waiting")
    return [
        {"label": label, "detail": detail, "state": state}
        for (label, detail, _), state in zip(details, states, strict=True)
    ]


def _progress_context(request, submission: Submission) -> dict:
    progress = submission_progress(submission=submission)
    return {
        "submission": submission,
        "progress": progress,
        "steps": submission_steps(submission=submission, progress=progress),
        "queue_ahead": submission_queue_ahead(submission=submission),
        "final": submission.status in FINAL_STATUSES,
        "may_manage": user_may_manage(user=request.user, submission=submission),
    }


@require_safe
def submission_page(request, pk: int):
    submission = _visible_submission(request, pk)
    families = list(
        submission.benchmark.tasks.order_by("family").values_list("family", flat=True).distinct()
    )
    form = TaskFilterForm(request.GET, families=families)
    filters = form.cleaned_data if form.is_valid() else {}
    rows = submission_task_rows(submission=submission, filters=filters)
    page = Paginator(rows, TASKS_PER_PAGE).get_page(filters.get("page") or 1)
    verdicts = task_verdicts(rows=list(page.object_list), judge_id=submission.judge_id)
    for row in page.object_list:
        row.verdicts = verdicts[row.pk]
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        **_progress_context(request, submission),
        "score": Score.objects.filter(submission=submission, judge_id=submission.judge_id).first(),
        "usage": submission_judge_usage(submission=submission),
        "form": form,
        "page": page,
        "filter_query": query.urlencode(),
        "retried": int(retried) if (retried := request.GET.get("retried", "")).isdigit() else None,
    }
    return render(
        request, "leaderboard/submission.html", context, status=200 if form.is_valid() else 400
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
    submission = _visible_submission(request, pk)
    if not user_may_manage(user=request.user, submission=submission):
        return HttpResponseForbidden("only the submission's team and staff may retry judgments")
    if submission.status not in FINAL_STATUSES:
        return HttpResponse(
            f"submission {submission.pk} is still {submission.status}; retry once it has finished",
            status=409,
            content_type="text/plain",
        )
    count = judgments_retry_failed(submission=submission)
    return redirect(f"{reverse('submission', args=[submission.pk])}?retried={count}")


@require_safe
def task_page(request, pk: int, task_id: str):
    submission = _visible_submission(request, pk)
    task_result = get_object_or_404(
        TaskResult.objects.select_related("task", "submission__benchmark"),
        submission=submission,
        task__task_id=task_id,
    )
    words = task_result_words(task_result=task_result)
    return render(
        request,
        "leaderboard/task.html",
        {
            "submission": submission,
            "row": task_result,
            "task": task_result.task,
            "spoke_via": SPOKE_VIA.get(task_result.spoke_via, task_result.spoke_via),
            "conversation": task_conversation(metatranscript=task_result.task.metatranscript),
            "words": words,
            "timeline": timeline_layout(words),
            "clips": task_clips(
                task_result=task_result, user=request.user, input_end=words.input_end
            ),
            "judgment_groups": task_judgments(
                task_result=task_result, judge_id=submission.judge_id
            ),
        },
    )
