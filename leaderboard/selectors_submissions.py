"""Reads behind the submission and task pages: queue position, who may manage, the pipeline
checklist, the score table and the task drill-down, all from the plug-in's declarations."""

from __future__ import annotations

import hashlib
import math
from contextlib import nullcontext
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.http import Http404
from django.utils import timezone
from django.utils.text import capfirst

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import Timeline, TimelineSpan
from evaluation.identity import Viewer
from evaluation.models import (
    Judgment,
    Membership,
    ScoreRecord,
    Submission,
    TaskJudgment,
    TaskResult,
)
from evaluation.run_config import FIELDS as RUN_CONFIG_FIELDS
from evaluation.run_config import config_rows
from evaluation.selectors import slot_sort_key
from evaluation.services.files import open_upload, task_input, task_reads_upload
from evaluation.services.pipeline import judged_slots
from evaluation.services.submissions import submission_files_gone
from leaderboard.selectors import board_columns

S = Submission.Status
# What still holds a place in the pipeline ahead of a newer submission.
QUEUE_STATUSES = (S.QUEUED, S.INGESTING, S.DETECTING, S.JUDGING)
FINAL_STATUSES = (S.SCORED, S.FAILED)
# A timeline never has more tick marks than this, whatever its times.
MAX_TICKS = 12
# Nor more spans in one lane than this: a page draws them all (neighbours merge beyond it).
MAX_SPANS_PER_LANE = 400
# A word chip's text at the timeline's font (.7em of 15 px) takes about this many pixels a
# character, plus its padding: the track is drawn wide enough for a typical word to fit its chip
# (it scrolls in its box), never wider than a full lane of twelve-letter words.
CHIP_CHAR_PX = 6.5
CHIP_PADDING_PX = 4
MAX_TRACK_PX = MAX_SPANS_PER_LANE * (12 * CHIP_CHAR_PX + CHIP_PADDING_PX)
# A task's drill-down, once read and laid out, is kept this long while nothing it shows changes.
TASK_PAGE_CACHE_SECONDS = 3600
SETTLED = (Judgment.Status.DONE, Judgment.Status.FAILED)


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
    """Staff and the submission's team may retry it and see its spending; of those, only
    staff and the team's owners may change what others see of it (publish, unpublish,
    anonymity, delete: evaluation.selectors.submission_change_refusal)."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return (
        submission.team_id is not None
        and Membership.objects.filter(team_id=submission.team_id, user=user).exists()
    )


PIPELINE = (S.QUEUED, S.INGESTING, S.DETECTING, S.JUDGING, S.AGGREGATING, S.SCORED)


def submission_steps(*, submission: Submission, progress: dict) -> list[dict]:
    """The pipeline as a checklist: each step done, current, waiting or failed."""
    plugin = get_plugin(submission.benchmark.plugin)
    judged = progress["judgments_done"] + progress["judgments_failed"]
    processing = "; ".join(step.label for step in plugin.steps) or "nothing to process"
    details = [
        ("Validate", f"{plugin.upload.label} accepted", S.QUEUED),
        (
            "Ingest",
            f"Tasks ingested: {progress['tasks_ingested']} / {progress['tasks_total']}",
            S.INGESTING,
        ),
        ("Process", processing, S.DETECTING),
        ("Judge", f"Judged: {judged} / {progress['judgments_total']}", S.JUDGING),
        ("Score", "the results under this judge", S.AGGREGATING),
    ]
    if submission.status == S.FAILED:
        processed = submission.steps_done >= len(plugin.steps)
        reached = [
            True,
            submission.task_results.exists(),
            processed,
            processed and progress["judgments_total"] > 0 and judged == progress["judgments_total"],
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


def submission_stall(*, submission: Submission) -> dict | None:
    """How long an active submission has gone without a sign of a worker, when that is longer
    than the sweeper waits before re-queueing it (None while it moves, or once it is final)."""
    if submission.status in FINAL_STATUSES or submission.is_reported:
        return None
    last = submission.heartbeat_at or submission.created_at
    quiet = (timezone.now() - last).total_seconds()
    limit = (
        settings.PIPELINE_QUEUED_STALL_SECONDS
        if submission.status == S.QUEUED
        else settings.PIPELINE_STALL_SECONDS
    )
    if quiet < limit:
        return None
    return {"minutes": int(quiet // 60), "seconds": int(quiet), "since": last}


@dataclass(frozen=True)
class ScoreTable:
    """One split's metrics as the submission page shows them."""

    split: str
    label: str
    groups: list[tuple[str, int]]
    columns: list
    results: dict | None


def score_tables(*, submission: Submission, results: dict | None) -> list[ScoreTable]:
    plugin = get_plugin(submission.benchmark.plugin)
    tables = []
    for split in plugin.splits or (None,):
        key = split.key if split else ""
        if split is not None and (results or {}).get(key) is None:
            continue
        columns = board_columns(benchmark=submission.benchmark, split=key)
        groups: dict[str, int] = {}
        for column in columns:
            groups[column.group] = groups.get(column.group, 0) + 1
        tables.append(
            ScoreTable(key, split.label if split else "", list(groups.items()), columns, results)
        )
    return tables


@dataclass(frozen=True)
class RunDisclosure:
    """What a submission says produced its outputs, as this viewer may read it: its run
    configuration's fields (label, text), whether the system saw the benchmark's data, and the
    note on that. For a viewer the submission is hidden from, the configuration and note are
    emptied by the core's redaction (evaluation.identity) and ``hidden`` says why."""

    config: dict
    rows: list[tuple[str, str, str]]
    contamination: str
    contamination_label: str
    note: str
    hidden: bool


def run_disclosure(*, submission: Submission, viewer: Viewer) -> RunDisclosure:
    shown = viewer.redacted(
        submission,
        {"run_config": submission.run_config, "contamination_note": submission.contamination_note},
    )
    return RunDisclosure(
        config=shown["run_config"],
        rows=config_rows(shown["run_config"]),
        contamination=submission.contamination,
        contamination_label=submission.get_contamination_display(),
        note=shown["contamination_note"],
        hidden=viewer.hides(submission),
    )


def run_config_comparison(*, a: Submission, b: Submission, viewer: Viewer) -> list[dict]:
    """Two submissions' run configurations field by field, as this viewer may read each
    (run_disclosure): {"field", "label", "a", "b", "differs"} for every field either gives, then
    whether each saw the benchmark's data. A hidden side reads as hidden, never compared."""
    first, second = (
        run_disclosure(submission=a, viewer=viewer),
        run_disclosure(submission=b, viewer=viewer),
    )
    shown_a, shown_b = (
        {field: (label, text) for field, label, text in disclosure.rows}
        for disclosure in (first, second)
    )
    rows = []
    for field in RUN_CONFIG_FIELDS:
        if field not in shown_a and field not in shown_b:
            continue
        label = (shown_a.get(field) or shown_b.get(field))[0]
        text_a, text_b = (shown.get(field, ("", ""))[1] for shown in (shown_a, shown_b))
        rows.append({"field": field, "label": label, "a": text_a, "b": text_b})
    rows.append(
        {
            "field": "contamination",
            "label": "Benchmark data in training",
            "a": capfirst(first.contamination_label),
            "b": capfirst(second.contamination_label),
        }
    )
    hidden = first.hidden or second.hidden
    for row in rows:
        row["differs"] = not hidden and row["a"] != row["b"]
    return rows


def submission_facts(*, submission: Submission) -> list[tuple[str, object]]:
    """What the submitter declared and the processing found about the whole submission, as
    the plug-in labels it."""
    plugin = get_plugin(submission.benchmark.plugin)
    known = {**(submission.options or {}), **(submission.facts or {})}
    return [(label, known[key]) for key, label in plugin.facts if key in known]


# --- Task page -------------------------------------------------------------------------------


TICK_STEPS = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


def _tick_step(duration: float) -> float:
    """The first of TICK_STEPS leaving at most MAX_TICKS steps over the duration; beyond 12
    hours, 1, 2 or 5 x 10^k hours. The tick count never depends on how large the values are."""
    for step in TICK_STEPS:
        if duration / step <= MAX_TICKS:
            return step
    hours = duration / 3600 / MAX_TICKS
    power = 10.0 ** math.floor(math.log10(hours))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= hours) * 3600


def _drawn(spans) -> list:
    """A lane's spans as drawn: at most MAX_SPANS_PER_LANE, neighbours merged in equal runs
    when there are more (the merged span covers them all and says how many it holds)."""
    if len(spans) <= MAX_SPANS_PER_LANE:
        return list(spans)
    ordered = sorted(spans, key=lambda span: float(span.start))
    size = math.ceil(len(ordered) / MAX_SPANS_PER_LANE)
    drawn = []
    for first in range(0, len(ordered), size):
        run = ordered[first : first + size]
        text = " ".join(str(span.text) for span in run if span.text)
        drawn.append(
            TimelineSpan(
                start=float(run[0].start),
                end=max(float(span.end) for span in run),
                text=f"{text[:60]}… ({len(run)} spans)" if len(text) > 60 else text,
                css=run[0].css,
            )
        )
    return drawn


def timeline_layout(timeline: Timeline | None) -> dict:
    """Percent positions for drawing every lane on one time axis, with a bounded number of
    ticks however large the times are."""
    if timeline is None:
        return {}
    ends = [span.end for lane in timeline.lanes for span in lane.spans]
    ends += [time for time, _ in timeline.markers]
    duration = max((float(end) for end in ends), default=0.0) + 0.5
    if duration <= 0.5 or not math.isfinite(duration):
        return {}

    def left(seconds: float) -> float:
        return round(100 * (max(0.0, min(seconds, duration)) / duration), 3)

    lanes = []
    for lane in timeline.lanes:
        spans = []
        for span in _drawn(lane.spans):
            start = max(0.0, float(span.start))
            spans.append(
                {
                    "text": span.text,
                    "css": span.css,
                    "start": start,
                    "end": float(span.end),
                    "left": left(start),
                    "width": round(max(0.15, left(float(span.end)) - left(start)), 3),
                }
            )
        lanes.append({"label": lane.label, "player": lane.player, "spans": spans})
    step = _tick_step(duration)
    count = min(MAX_TICKS, int(duration // step)) + 1
    # For each word, the track width at which its text fits its chip; the median word's rules.
    needed = sorted(
        (len(span["text"]) * CHIP_CHAR_PX + CHIP_PADDING_PX) * duration / seconds
        for lane in lanes
        for span in lane["spans"]
        if span["text"] and (seconds := span["end"] - span["start"]) > 0
    )
    middle = needed[len(needed) // 2] if needed else 0.0
    ticks = [round(i * step, 3) for i in range(count)]
    return {
        "duration": duration,
        "min_width": round(min(middle, MAX_TRACK_PX)),  # px; 0: the box's width will do
        "lanes": lanes,
        "markers": [
            {"time": time, "label": label, "left": left(time)} for time, label in timeline.markers
        ],
        "ticks": [{"t": t, "left": left(t)} for t in ticks],
    }


def task_page_context(*, task_result: TaskResult) -> dict:
    """The plug-in's drill-down of one task (its template, context and clips to sign): read from
    its rows (and from the upload, when a file of the task is kept in it) and laid out once,
    then kept while nothing it shows changes (the task's steps, the submission's judge and that
    judge's judgments of the task). It holds no viewer's data: callers decide who may see the
    task, and sign its clips and name its system per viewer."""
    submission = task_result.submission
    if submission_files_gone(submission=submission):
        # A failed submission's files go after their keep time (failed_files_purge).
        raise Http404("this submission's files were deleted after it failed")
    links = TaskJudgment.objects.filter(task_result=task_result, judge_id=submission.judge_id)
    state = links.aggregate(
        links=Count("pk"),
        settled=Count("pk", filter=Q(judgment__status__in=SETTLED)),
        latest=Max("judgment__completed_at"),
    )
    key = "task-page-v1:" + hashlib.sha256(
        repr(
            (task_result.pk, task_result.steps_done, task_result.detected, submission.pk,
             task_result.task.spec, task_result.task.assets,
             submission.created_at.isoformat(), submission.bundle_sha256, submission.judge_id,
             submission.benchmark.plugin, sorted(state.items())),
        ).encode()
    ).hexdigest()  # fmt: skip
    context = cache.get(key)
    if context is None:
        plugin = get_plugin(submission.benchmark.plugin)
        judged, _, _ = judged_slots(links=links)
        # The upload is opened only when a file is read from it: a task whose page is made of
        # its rows (and the addresses of its audio) shows with storage away.
        opened = open_upload(submission) if task_reads_upload(task_result) else nullcontext()
        with opened as archive:
            task = task_input(task_result, archive)
            context = plugin.task_context(task, judged=judged.get(task_result.pk, {}))
        context["timeline"] = timeline_layout(context.get("timeline"))
        cache.set(key, context, TASK_PAGE_CACHE_SECONDS)
    return dict(context)


def task_judgment_groups(*, task_result: TaskResult, judge_id: int | None) -> list[dict]:
    """Every judged slot of this task, grouped by judge, the submission's judge first. A
    judgment shared with other submissions (the cache) is shown as this submission's: the time
    it was linked here, never another submission's times."""
    links = TaskJudgment.objects.filter(task_result=task_result).select_related(
        "judge", "judgment", "judgment__prompt_version"
    )
    groups: dict[int, dict] = {}

    def order(link: TaskJudgment) -> tuple:
        return (link.judge_id != judge_id, link.judge.slug, link.kind, slot_sort_key(link.slot))

    for link in sorted(links, key=order):
        group = groups.setdefault(
            link.judge_id,
            {"judge": link.judge, "primary": link.judge_id == judge_id, "items": []},
        )
        group["items"].append(link)
    return list(groups.values())


def duplicate_bundles(*, submission: Submission, user) -> list[Submission]:
    """Earlier submissions of the same team with the very same upload (SHA-256), for the team's
    own members (and staff): another team's uploads are never compared or named."""
    if not submission.bundle_sha256 or submission.team_id is None:
        return []
    if not user_may_manage(user=user, submission=submission):
        return []
    return list(
        Submission.objects.filter(
            team_id=submission.team_id,
            bundle_sha256=submission.bundle_sha256,
            created_at__lte=submission.created_at,
        )
        .exclude(pk=submission.pk)
        .select_related("system")
        .order_by("created_at", "pk")[:10]
    )


def score_records(*, submission: Submission) -> list:
    """The numbers the submission's own judge has given it over time, newest first."""
    return list(
        ScoreRecord.objects.filter(submission=submission, judge_id=submission.judge_id)
        .select_related("judge")
        .order_by("-computed_at", "-pk")
    )
