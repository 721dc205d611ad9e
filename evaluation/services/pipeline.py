"""The scoring pipeline: ingest -> processing steps -> judging -> aggregation.

Every stage is bounded work a Celery task can repeat: stages are claimed with conditional
updates, rows are upserted on their natural keys, work items (task results in a step, judgments)
are claimed with leases that a heartbeat renews while their worker lives, and a worker message
stops after ``FLOORBOARD_WORK_SECONDS`` and queues its own continuation. A periodic sweeper
re-queues whatever a dead worker left: a submission whose heartbeat went quiet, or whose leases
lapsed. So with either broker a killed worker's submission finishes on another worker, and no
stored answer is asked for again. How a stage is queued, claimed, kept alive and failed is in
work.py; the judge calls are in judging.py.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import close_old_connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import JudgedSlot, TaskOutcome
from evaluation.board_state import board_changed
from evaluation.bulk import instance_values, rows_insert
from evaluation.held_out import held_out_ids, held_out_missing
from evaluation.models import (
    Judge,
    Judgment,
    Score,
    SpendEstimate,
    Submission,
    Task,
    TaskResult,
    UploadFindings,
)
from evaluation.scorer import current_scorer, score_scorer, scorer_log
from evaluation.selectors import (
    hook_facts,
    judgments_open,
    prompt_versions_named,
    submission_links,
    upload_limits,
)
from evaluation.services import judging
from evaluation.services.files import TASK_INPUT_COLUMNS, open_upload, task_input, upload_held
from evaluation.services.records import score_record_add
from evaluation.services.spending import (
    judge_priced,
    spend_check,
    spend_estimate_done,
    spend_held,
)
from evaluation.services.work import (
    ACTIVE,
    RETRIED,
    after_commit,
    enqueue_on_commit,
    failing,
    heartbeat,
    runs_inline,
    stage_claim,
    stale_before,
    submission_fail,
)
from evaluation.slices import (
    Contributions,
    board_results_from,
    contributions_json,
    slice_results,
)
from evaluation.stored import open_stored_seekable, read_once

logger = logging.getLogger(__name__)

S = Submission.Status


# --- Ingest ---------------------------------------------------------------------------------


def _findings_versions(plugin) -> dict:
    return {
        "rules": plugin.rules_version,
        "steps": [[step.name, step.version] for step in plugin.steps],
    }


def findings_keep(submission: Submission, plugin, findings: dict) -> None:
    """Keep what validation found for the first step (UploadContents.findings) until ingest."""
    if findings and plugin.steps and plugin.steps[0].scope == "submission":
        text = json.dumps({"versions": _findings_versions(plugin), "tasks": findings})
        UploadFindings.objects.create(submission=submission, text=text)


def _findings_take(submission: Submission, plugin) -> dict:
    """The findings kept for this submission's first step, per task id: none when there are
    none, or when they were kept under other rules or steps (a deploy between upload and
    ingest). The caller deletes them once its step's findings are stored."""
    text = (
        UploadFindings.objects.filter(submission=submission).values_list("text", flat=True).first()
    )
    if text is None:
        return {}
    found = json.loads(text)
    return found["tasks"] if found["versions"] == _findings_versions(plugin) else {}


def _task_file_key(submission: Submission, task_id: str, relative: str) -> str:
    return f"submissions/{submission.pk}/{task_id}/{relative}"


def submission_ingest(*, submission_id: int) -> bool:
    """Read the stored upload once: copy audio to storage (streaming, one object per file),
    keep the rest as references into the upload, and create one task result per task of the
    benchmark (missing tasks get one with no files). A first step over the whole submission
    runs here on them, before they are written, so that they are written once with its
    findings; it gets what validation found for it (UploadFindings), dropped once the rows are
    written. If it fails they are written as ingested: after a database error steps_start
    runs the step again; after any other error the submission fails at that step, and a
    retry starts from there."""
    if not stage_claim(submission_id, from_statuses=[S.QUEUED], to_status=S.INGESTING):
        return False
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    plugin = get_plugin(submission.benchmark.plugin)
    tasks = {
        task_id: Task(pk=pk, task_id=task_id, spec=spec, assets=assets)
        for pk, task_id, spec, assets in submission.benchmark.tasks.values_list(
            "pk", "task_id", "spec", "assets"
        )
    }
    found: dict[str, tuple[dict, dict]] = {}
    with heartbeat(submission_id), open_stored_seekable(submission.bundle.name) as handle:
        specs = {task_id: task.spec for task_id, task in tasks.items()}
        for count, ingested in enumerate(
            plugin.ingest(handle, tasks=specs, limits=upload_limits(submission.benchmark)), 1
        ):
            files = dict(ingested.files)
            for relative, opener, size in ingested.store:
                with opener() as member, read_once(member) as source:
                    files[relative] = {
                        "size": size,
                        "key": default_storage.save(
                            _task_file_key(submission, ingested.task_id, relative),
                            File(source, name=relative),
                        ),
                    }
            found[ingested.task_id] = (files, ingested.data)
            if count % 100 == 0:
                Submission.objects.filter(pk=submission_id).update(tasks_ingested=count)
    rows = [
        TaskResult(submission_id=submission_id, task=task, files=files, data=data)
        for task_id, task in sorted(tasks.items())
        for files, data in [found.get(task_id, ({}, {}))]
    ]
    # The first step, the spending plan and linking, run in turn by this task, read the
    # upload's directory once.
    with upload_held(submission):
        done, facts, failure = 0, {}, None
        first = plugin.steps[0] if plugin.steps else None
        if first is not None and first.scope == "submission":
            submission.facts = {}  # what a fresh ingest starts from
            try:
                validated = _findings_take(submission, plugin)
                facts = _step_findings(submission, plugin, first, 0, rows, validated)
                done = 1
            except RETRIED:
                pass
            except Exception as exc:
                failure = exc  # raised once what ingest did is stored: a retry starts from there
        with transaction.atomic():
            _rows_store(rows, ("files", "data", "detection", "steps_done", "detected"))
            Submission.objects.filter(pk=submission_id).update(
                tasks_ingested=len(found), status=S.DETECTING, steps_done=done, facts=facts
            )
            # Handed on once: a step run again reads the upload.
            UploadFindings.objects.filter(submission_id=submission_id).delete()
        if failure is not None:
            with failing(submission_id, "processing"):
                raise failure
        after_commit(lambda: steps_start(submission_id=submission_id, here=True))
    return True


# --- Processing steps -----------------------------------------------------------------------


def steps_start(*, submission_id: int, here: bool = False) -> None:
    """Queue the next processing step (fanned out for a per-task step), or judging when every
    step has run. ``here``: run a step over the whole submission, and judging once every step
    has run, in this process instead (_stage_here), as ingest's worker does."""
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    if submission.status != S.DETECTING:
        return
    plugin = get_plugin(submission.benchmark.plugin)
    index = submission.steps_done
    if index >= len(plugin.steps):
        judge_id = submission.judge_id
        with transaction.atomic():
            # The last step marked its rows already; this marks those of a plug-in with none.
            submission.task_results.filter(detected=False).update(detected=True)
            if not here:
                enqueue_on_commit("judge_submission", submission_id, judge_id)
        if here:
            # submission_judge leaves the stage free for its own task after a database error.
            _stage_here(
                lambda: submission_judge(submission_id=submission_id, judge_id=judge_id),
                submission_id=submission_id,
                stage="judging",
                queued=("judge_submission", submission_id, judge_id),
            )
        return
    step = plugin.steps[index]
    if here and step.scope == "submission":
        _stage_here(
            lambda: step_run(submission_id=submission_id, index=index, here=True),
            submission_id=submission_id,
            stage="processing",
            queued=("run_step", submission_id, index),
        )
        return
    copies = 1
    if step.scope == "task":
        count = submission.task_results.count()
        copies = max(1, min(settings.PIPELINE_PARALLEL_TASKS, math.ceil(count / step.chunk_size)))
    for _ in range(copies):
        enqueue_on_commit("run_step", submission_id, index)


def _stage_here(run: Callable[[], None], *, submission_id: int, stage: str, queued: tuple) -> None:
    """Run the next stage in this process instead of queueing it: the worker that has just
    finished a stage goes on into the next, which saves a broker round trip per stage. The
    stage reads what it needs from the database, as its own task does. A database error
    queues its own task instead (``queued``: the task's name and arguments), to try again;
    any other error fails the submission at ``stage``."""
    try:
        with failing(submission_id, stage):
            run()
    except RETRIED:
        enqueue_on_commit(*queued)


def _step_finished(submission_id: int, index: int, here: bool = False) -> None:
    """Advance past step ``index`` once no task still needs it; one worker wins. ``here``: see
    steps_start."""
    if TaskResult.objects.filter(submission_id=submission_id, steps_done__lte=index).exists():
        return
    moved = Submission.objects.filter(
        pk=submission_id, status=S.DETECTING, steps_done=index
    ).update(steps_done=index + 1)
    if moved:
        steps_start(submission_id=submission_id, here=here)


def step_run(*, submission_id: int, index: int, here: bool = False) -> None:
    """Run step ``index`` (``here``: see steps_start)."""
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    if submission.status != S.DETECTING or submission.steps_done != index:
        return  # a message from before: that step is done (or the submission moved on)
    plugin = get_plugin(submission.benchmark.plugin)
    step = plugin.steps[index]
    if step.scope == "submission":
        _submission_step(submission, plugin, step, index)
        _step_finished(submission_id, index, here)
        return
    done = _task_step(submission, plugin, step, index)
    if done:
        _step_finished(submission_id, index)
    else:
        enqueue_on_commit("run_step", submission_id, index)  # out of time: carry on


def _submission_step(submission: Submission, plugin, step, index: int) -> None:
    rows = list(
        submission.task_results.select_related("task")
        .only("submission_id", *TASK_INPUT_COLUMNS)  # _rows_store writes back by its key
        .order_by("task__task_id")
    )
    facts = _step_findings(submission, plugin, step, index, rows)
    with transaction.atomic():
        _rows_store(rows, ("detection", "steps_done", "detected"))
        Submission.objects.filter(pk=submission.pk).update(facts={**submission.facts, **facts})


def _step_findings(
    submission: Submission, plugin, step, index: int, rows, validated: dict | None = None
) -> dict:
    """Run step ``index``, over the whole submission, on ``rows`` in memory: each row gets its
    findings and marks (only once the plug-in has returned). ``validated``: what validation
    found, per task id, handed to the first step at ingest. Returns the facts found; nothing
    is written."""
    with heartbeat(submission.pk), open_upload(submission) as archive:
        inputs = [task_input(row, archive) for row in rows]
        for task in inputs:
            task.validated = (validated or {}).get(task.task_id)
        facts, found = plugin.run_submission_step(step, inputs, facts=hook_facts(submission))
    # Every row's findings first: a malformed one leaves every row as it was.
    detections = [{**row.detection, **found.get(row.task.task_id, {})} for row in rows]
    for row, detection in zip(rows, detections, strict=True):
        row.detection = detection
        row.steps_done = index + 1
        row.detected = row.steps_done >= len(plugin.steps)
    return facts


def _rows_store(rows: list[TaskResult], fields: tuple[str, ...]) -> None:
    """Write these fields of task results (loaded, or made in memory): an upsert on the natural
    key (bulk_update builds a CASE per row and field, slow past a few hundred)."""
    columns = ("submission_id", "task_id", *fields)
    rows_insert(
        TaskResult,
        columns,
        (instance_values(row, columns) for row in rows),
        unique=("submission", "task"),
        update=fields,
    )


def _task_step(submission: Submission, plugin, step, index: int) -> bool:
    """Take tasks still needing this step in chunks, under a lease, until none is left or the
    message's time is up. True when no task needs the step any more."""
    owner = uuid.uuid4().hex
    deadline = time.monotonic() + settings.PIPELINE_WORK_SECONDS

    def renew():
        TaskResult.objects.filter(lease_owner=owner).update(
            lease_until=timezone.now() + timedelta(seconds=settings.JUDGE_LEASE_SECONDS)
        )

    with heartbeat(submission.pk, renew=renew), open_upload(submission) as archive:
        while time.monotonic() < deadline:
            rows = _rows_claim(submission.pk, index, owner, step.chunk_size)
            if not rows:
                break
            try:
                found = plugin.run_task_step_batch(
                    step, [task_input(row, archive) for row in rows], facts=hook_facts(submission)
                )
            except Exception:
                # Its rows go back at once (storage away, say), not when the lease lapses: the
                # stage's next try takes them up again instead of finding them all held.
                TaskResult.objects.filter(lease_owner=owner).update(
                    lease_owner="", lease_until=None
                )
                raise
            for row in rows:
                row.detection = {**row.detection, **found.get(row.task.task_id, {})}
                row.steps_done = index + 1
                row.detected = row.steps_done >= len(plugin.steps)
                row.lease_owner, row.lease_until = "", None
            _rows_store(rows, ("detection", "steps_done", "detected", "lease_owner", "lease_until"))
    return not TaskResult.objects.filter(
        submission_id=submission.pk, steps_done__lte=index
    ).exists()


def _rows_claim(submission_id: int, index: int, owner: str, limit: int) -> list[TaskResult]:
    now = timezone.now()
    free = Q(steps_done=index) & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    candidates = list(
        TaskResult.objects.filter(submission_id=submission_id)
        .filter(free)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    TaskResult.objects.filter(pk__in=candidates).filter(free).update(
        lease_owner=owner,
        lease_until=now + timedelta(seconds=settings.JUDGE_LEASE_SECONDS),
    )
    return list(
        TaskResult.objects.filter(pk__in=candidates, lease_owner=owner).select_related("task")
    )


# --- Judging and aggregation ----------------------------------------------------------------


def submission_judge(*, submission_id: int, judge_id: int) -> None:
    """Find the calls linking will leave and check their spending estimate before anything is
    queued; then link every judged slot to its judgment, starting the calls of the first
    chunks while the rest are linked (or aggregate at once when the cache or the offline judge
    settled them all). After a database error the stage is left free for its retry."""
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    judge = Judge.objects.select_related("benchmark").get(pk=judge_id)
    claimed = submission.judge_id == judge.pk
    if claimed and not stage_claim(
        submission_id, from_statuses=[S.DETECTING, S.SCORED, S.FAILED], to_status=S.JUDGING
    ):
        return
    try:
        _judging_run(submission, judge)
    except RETRIED:
        if claimed:
            # Its retry may take the stage at once: no worker is on it any more.
            Submission.objects.filter(pk=submission_id, status=S.JUDGING).update(heartbeat_at=None)
        raise


def _judging_run(submission: Submission, judge: Judge) -> None:
    """submission_judge's work once it holds the stage."""
    submission_id, judge_id = submission.pk, judge.pk
    plan = None
    if not judge.is_offline:
        with heartbeat(submission_id):
            plan = judging.judgments_plan(submission=submission, judge=judge)
    estimate = spend_check(
        submission=submission, judge=judge, to_call=plan.groups if plan else None
    )
    if plan and plan.open_count and estimate.state == SpendEstimate.State.HELD:
        _judging_hold(submission, judge)
        return
    if plan is None or not plan.open_count:
        with heartbeat(submission_id):
            link = judging.judgments_link(submission=submission, judge=judge, plan=plan)
            open_count = sum(len(opened) for opened in link)
        if open_count:
            # Put back to pending since the plan was read (a retry): called as usual.
            _judge_work_queue(submission_id, judge, open_count)
        else:
            judging_finish(submission_id=submission_id, judge_id=judge_id)
        return
    # This task calls too; more workers join once every slot is linked (before that, one
    # could find nothing open and aggregate too early). The judgments linking creates are
    # leased to this task's calls as they are created.
    lease = judging.Lease(owner=uuid.uuid4().hex)
    settled = judging.judgments_work(
        submission_id=submission_id,
        judge_id=judge_id,
        deadline=time.monotonic() + settings.PIPELINE_WORK_SECONDS,
        link=judging.judgments_link(submission=submission, judge=judge, lease=lease, plan=plan),
        lease=lease,
        on_linked=lambda: _judge_work_queue(submission_id, judge, plan.open_count, extra=True),
    )
    if settled:
        judging_finish(submission_id=submission_id, judge_id=judge_id, settled=True)
    elif spend_held(submission_id=submission_id, judge_id=judge_id):
        _judging_hold(submission, judge, error=SPEND_STOPPED)  # its charges passed the bound
    else:
        enqueue_on_commit("judge_work", submission_id, judge_id)  # out of time: carry on


def _judge_work_queue(submission_id: int, judge: Judge, open_count: int, extra=False) -> None:
    """Queue workers' shares of the calls: one per four rounds of the judge's concurrency,
    up to PIPELINE_PARALLEL_TASKS (one fewer when the caller is calling too; none more when
    tasks run in this process, inline or eager, where the caller's own loop makes every
    call)."""
    if extra and (runs_inline() or current_app.conf.task_always_eager):
        return
    batch = max(1, judge.concurrency or settings.JUDGE_CONCURRENCY)
    copies = max(1, min(settings.PIPELINE_PARALLEL_TASKS, math.ceil(open_count / (4 * batch))))
    for _ in range(copies - 1 if extra else copies):
        enqueue_on_commit("judge_work", submission_id, judge.pk)


SPEND_HELD = (
    "Judging held at a judge spending limit: no judge call was made. The estimate, the limit, "
    "what was spent and how to raise it are under “Judge spending” on this page (for the "
    "submission's team and staff). Retry once the limit is raised, or staff release it."
)
SPEND_STOPPED = (
    "Judging stopped at a judge spending limit: its calls were charged past what its estimate "
    "or the spending limit leaves room for, and no further judge call was made. What was "
    "charged, the estimate, the limit and how to go on are under “Judge spending” on this page "
    "(for the submission's team and staff). Retry once the limit is raised, or staff release it."
)
SPEND_UNPRICED = (
    "Judging held: judge {judge} has no price, and judge spending is limited on this site, so "
    "no judge call was made. Staff set the judge's prices (0 is a price); then retry."
)


def _judging_hold(submission: Submission, judge: Judge, error: str = SPEND_HELD) -> None:
    """Past a spending limit no call is queued (or, ``error`` SPEND_STOPPED, none more). Under
    its own judge a submission with no score yet fails (retry once the limit is raised or staff
    released it); a re-score goes back to the numbers it had. The amounts stay on the estimate,
    out of the public error text."""
    if submission.judge_id != judge.pk:
        return
    if not judge_priced(judge):
        error = SPEND_UNPRICED.format(judge=judge.slug)
    if Score.objects.filter(submission=submission, judge=judge).exists():
        Submission.objects.filter(pk=submission.pk, status=S.JUDGING).update(status=S.SCORED)
        board_changed(benchmark_id=submission.benchmark_id)
    else:
        submission_fail(submission_id=submission.pk, error=error)


def judge_run(*, submission_id: int, judge_id: int) -> None:
    """One worker's share of the calls; the one that settles the last judgment aggregates."""
    submission = Submission.objects.filter(pk=submission_id).values("status", "judge_id").first()
    if submission is None:
        return
    if submission["judge_id"] == judge_id and submission["status"] != S.JUDGING:
        return  # already aggregated, or failed: nothing to do
    deadline = time.monotonic() + settings.PIPELINE_WORK_SECONDS
    if judging.judgments_work(submission_id=submission_id, judge_id=judge_id, deadline=deadline):
        judging_finish(submission_id=submission_id, judge_id=judge_id, settled=True)
    elif spend_held(submission_id=submission_id, judge_id=judge_id):
        # Its charges passed the bound (spending.spend_room): held, not carried on.
        _judging_hold(
            Submission.objects.get(pk=submission_id),
            Judge.objects.get(pk=judge_id),
            error=SPEND_STOPPED,
        )
    else:
        enqueue_on_commit("judge_work", submission_id, judge_id)  # out of time: carry on


def judging_finish(*, submission_id: int, judge_id: int, settled: bool = False) -> Score | None:
    """Aggregate once every judgment is settled (``settled``: the caller has just seen them
    all settled). Under the submission's own judge the status goes JUDGING -> AGGREGATING ->
    SCORED, and only a stored score makes it SCORED."""
    if not settled and judgments_open(submission_id=submission_id, judge_id=judge_id):
        return None
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    judge = Judge.objects.get(pk=judge_id)
    primary = submission.judge_id == judge_id
    if primary and not stage_claim(
        submission_id, from_statuses=[S.JUDGING], to_status=S.AGGREGATING
    ):
        return None
    with heartbeat(submission_id):
        score = submission_aggregate(submission=submission, judge=judge)
    spend_estimate_done(submission_id=submission_id, judge_id=judge_id)
    if primary:
        retry = None
        if score.judgments_failed and submission.failed_retries < settings.FAILED_RETRY_ATTEMPTS:
            retry = timezone.now() + timedelta(seconds=settings.FAILED_RETRY_PAUSE_SECONDS)
        Submission.objects.filter(pk=submission_id, status=S.AGGREGATING).update(
            status=S.SCORED, error="", finished_at=timezone.now(), retry_failed_at=retry
        )
        board_changed(submission_id=submission_id)
    return score


def judged_slots(*, links, versions: set | None = None) -> tuple[dict[int, dict], int, int]:
    """Stored outcomes per task result from TaskJudgment rows: ({row: {(kind, slot): JudgedSlot}},
    judgments used, judgments failed). ``versions``: gets the (kind, prompt version id) of
    every judgment read, by the same statement (see prompt_versions_named)."""
    judged: dict[int, dict] = {}
    total = failed = 0
    rows = links.values_list(
        "task_result_id",
        "kind",
        "slot",
        "fixed",
        "judgment_id",
        "judgment__status",
        "judgment__verdict",
        "judgment__output",
        "judgment__kind",
        "judgment__prompt_version_id",
    )
    for row_pk, kind, slot, fixed, judgment_id, status, verdict, output, *version in rows:
        if judgment_id is None:
            outcome = JudgedSlot("fixed", (fixed or {}).get("verdict"), fixed)
        else:
            if versions is not None:
                versions.add(tuple(version))
            total += 1
            failed += status == Judgment.Status.FAILED
            outcome = JudgedSlot(
                status, verdict if status == Judgment.Status.DONE else None, output
            )
        judged.setdefault(row_pk, {})[(kind, slot)] = outcome
    return judged, total, failed


def task_outcomes(
    *, submission: Submission, judge: Judge, versions: set | None = None
) -> tuple[list[TaskOutcome], int, int]:
    """Every task's outcome under one judge, from stored detections and judgments: (outcomes,
    judgments used, judgments failed), in the database's order of task ids (its collation,
    which Python's sort of them need not match). ``versions``: see judged_slots."""
    judged: dict[int, dict] = {}
    total = failed = 0
    for links in submission_links(submission_id=submission.pk, judge_id=judge.pk):
        found, used, failed_here = judged_slots(links=links, versions=versions)
        judged.update(found)
        total, failed = total + used, failed + failed_here
    # Values, not model instances: a thousand rows are read at each aggregation.
    stored = submission.task_results.order_by("task__task_id").values_list(
        "pk", "task__task_id", "task__spec", "data", "detection", "files"
    )
    outcomes = [
        TaskOutcome(
            task_id=task_id,
            spec=spec,
            data=data,
            detection=detection,
            judged=judged.get(pk, {}),
            present=bool(files) or bool(data),
        )
        for pk, task_id, spec, data, detection, files in stored
    ]
    return outcomes, total, failed


def submission_aggregate(*, submission: Submission, judge: Judge) -> Score:
    """Recompute the results from stored detections and judgments; never calls a judge. The
    score also keeps what each task adds to each metric (see evaluation/slices.py), the scorer
    behind it, and the held-out tasks' results apart (see evaluation/held_out.py). Its slice
    results follow in a task of their own (slices_store): the board's numbers do not wait for
    them, and a slice shows the row as not available meanwhile."""
    plugin = get_plugin(submission.benchmark.plugin)
    versions: set[tuple] = set()
    outcomes, total, failed = task_outcomes(submission=submission, judge=judge, versions=versions)
    held = held_out_ids(benchmark=submission.benchmark)
    hidden = [outcome for outcome in outcomes if outcome.task_id in held]
    if hidden:
        outcomes = [outcome for outcome in outcomes if outcome.task_id not in held]
    # Held-out results only for an upload holding every held-out task: from a few chosen ones,
    # even a rounded result would say how each of them was judged.
    whole = bool(hidden) and not held_out_missing(submission=submission)
    facts = hook_facts(submission)
    contributions = score_contributions(plugin, outcomes, facts)
    benchmark = submission.benchmark
    # Read with the outcomes, for the score's identity and its record.
    used = prompt_versions_named(versions)
    scorer_log(
        benchmark=benchmark, judge=judge, identity=current_scorer(benchmark=benchmark, judge=judge)
    )
    score, _ = Score.objects.update_or_create(
        submission=submission,
        judge=judge,
        defaults={
            "results": score_results(plugin, outcomes, facts, contributions),
            "held_out_results": plugin.aggregate(hidden, facts=facts) if whole else None,
            "contributions": contributions,
            # Made from the contributions just replaced: stored again by slices_store.
            "slices": None,
            "scorer": score_scorer(submission=submission, judge=judge, used=used),
            "judgments_total": total,
            "judgments_failed": failed,
        },
    )
    # The score's history: a re-score keeps the numbers it replaces.
    score_record_add(score=score, used=used)
    board_changed(benchmark_id=benchmark.pk)
    if contributions is not None:
        enqueue_on_commit("store_slices", score.pk)
    return score


def score_contributions(plugin, outcomes, facts) -> dict | None:
    """What each task adds to each metric, as stored on a score; None when the plug-in
    declares no contributions."""
    return contributions_json(
        (outcome.task_id, found, outcome.present)
        for outcome, found in zip(
            outcomes, plugin.task_contributions(outcomes, facts=facts), strict=True
        )
    )


def score_results(plugin, outcomes, facts, contributions: dict | None) -> dict:
    """plugin.aggregate(outcomes): for a plug-in that keeps the core's (the board from the
    contributions, BenchmarkPlugin.aggregate), from ``contributions``, what
    score_contributions has just made of the same outcomes, rather than making them again."""
    if not plugin.overrides("aggregate"):
        return board_results_from(plugin, contributions)
    return plugin.aggregate(outcomes, facts=facts)


def contributions_slices(plugin, contributions: dict | None, specs) -> dict | None:
    """Every slice's results from stored contributions; ``specs``: (task id, spec) pairs of at
    least the contributions' tasks."""
    found = Contributions.from_json(contributions)
    if found is None:
        return None
    scored = set(found.tasks)
    attributes = {
        task_id: plugin.task_attributes(task_id, spec)
        for task_id, spec in specs
        if task_id in scored
    }
    return slice_results(plugin, found, attributes)


def score_slices(plugin, outcomes, facts) -> tuple[dict | None, dict | None]:
    """(contributions, slice results) of one score from its outcomes; (None, None) when the
    plug-in declares no contributions."""
    stored = score_contributions(plugin, outcomes, facts)
    specs = ((outcome.task_id, outcome.spec) for outcome in outcomes)
    return stored, contributions_slices(plugin, stored, specs)


def slices_store(*, score_id: int) -> bool:
    """Store a score's slice results, made from the contributions it stores (queued once the
    score is saved). Only onto the score they were made from: a score recomputed meanwhile
    gets its own. True when stored."""
    score = (
        Score.objects.select_related("submission__benchmark")
        .defer("results", "held_out_results", "slices")
        .filter(pk=score_id)
        .first()
    )
    if score is None or score.contributions is None:
        return False
    benchmark = score.submission.benchmark
    plugin = get_plugin(benchmark.plugin)
    specs = benchmark.tasks.values_list("task_id", "spec")
    found = contributions_slices(plugin, score.contributions, specs.iterator(chunk_size=500))
    stored = bool(
        Score.objects.filter(pk=score_id, computed_at=score.computed_at).update(slices=found)
    )
    if stored:
        board_changed(benchmark_id=benchmark.pk)  # slices show the row on a slice's board
    return stored


def slices_sweep() -> list[int]:
    """Queue slice results a dead worker did not store: scores with contributions and no
    slices a stall period after they were computed. Returns the score ids."""
    missing = list(
        Score.objects.filter(
            contributions__isnull=False, slices__isnull=True, computed_at__lt=stale_before()
        ).values_list("pk", flat=True)
    )
    for score_id in missing:
        enqueue_on_commit("store_slices", score_id)
    return missing


# --- Retries, re-scoring and the sweeper ----------------------------------------------------


def submission_resume(*, submission: Submission) -> str:
    """Queue the stage a submission stopped in (a failed one, or one a dead worker left): what
    is stored is kept and nothing settled runs again. Returns the stage queued ("" when its
    files were deleted, and nothing can run again)."""
    if not submission.bundle and not submission.is_reported:
        return ""  # its files were deleted (failed_files_purge): nothing to run again
    plugin = get_plugin(submission.benchmark.plugin)
    status = submission.status
    update = {"requeued_at": timezone.now()}
    if status == S.FAILED:
        update["error"] = ""
        if not submission.task_results.exists():
            status = S.QUEUED
        elif submission.steps_done < len(plugin.steps):
            status = S.DETECTING
        else:
            status = S.JUDGING
        update["status"] = S.QUEUED if status == S.QUEUED else S.DETECTING
        if status == S.JUDGING:
            update["status"] = S.FAILED  # judging claims it from there
    Submission.objects.filter(pk=submission.pk).update(**update)
    if status in (S.QUEUED, S.INGESTING):
        Submission.objects.filter(pk=submission.pk).update(status=S.QUEUED)
        enqueue_on_commit("ingest_submission", submission.pk)
        return "ingest"
    if status == S.DETECTING:
        after_commit(lambda: steps_start(submission_id=submission.pk))
        return "processing"
    if status == S.AGGREGATING:
        enqueue_on_commit("finish_judging", submission.pk, submission.judge_id)
        return "aggregation"
    enqueue_on_commit("judge_submission", submission.pk, submission.judge_id)
    return "judging"


def failed_judgments_retry(*, submission: Submission, judge: Judge | None = None) -> int:
    """Put this submission's failed judgments back to pending and queue its judging again, with
    no check of who asks (a team's own retry: submission_retry_failed). Returns how many."""
    judge = judge or submission.judge
    count = judging.failed_judgments_reset(submission=submission, judge=judge)
    enqueue_on_commit("judge_submission", submission.pk, judge.pk)
    return count


def submission_rescore(*, submission: Submission, judge: Judge | None = None) -> None:
    """Re-run judging and aggregation in the background. Unchanged prompts hit the cache; the
    board keeps showing the current numbers until the new ones replace them."""
    enqueue_on_commit("judge_submission", submission.pk, (judge or submission.judge).pk)


def failed_judgments_retry_due() -> list[int]:
    """Scored submissions whose failed judgments are due another try (a judge outage): put
    back to pending and judged again; the numbers stay on the board, marked, meanwhile."""
    due = Submission.objects.filter(
        status=S.SCORED, retry_failed_at__isnull=False, retry_failed_at__lte=timezone.now()
    ).select_related("judge")
    retried = []
    for submission in due:
        with transaction.atomic():
            taken = Submission.objects.filter(
                pk=submission.pk, retry_failed_at=submission.retry_failed_at
            ).update(retry_failed_at=None, failed_retries=F("failed_retries") + 1)
            if taken:
                failed_judgments_retry(submission=submission)
                retried.append(submission.pk)
    return retried


def submissions_sweep() -> list[int]:
    """Re-queue what dead workers left: active submissions whose heartbeat went quiet (queued
    ones after longer: their message may simply be waiting its turn), and any whose running
    work's lease lapsed. Each is re-queued at most once per stall period. Also retries failed
    judgments that are due."""
    failed_judgments_retry_due()
    now = timezone.now()
    stale = stale_before()
    quiet = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale)
    not_recent = Q(requeued_at__isnull=True) | Q(requeued_at__lt=stale)
    # Work whose lease lapsed was held by a dead worker: re-queued once per lease period, so a
    # kill costs at most a lease and a sweep interval, not a whole stall period.
    lease_ago = now - timedelta(seconds=settings.JUDGE_LEASE_SECONDS)
    not_within_lease = Q(requeued_at__isnull=True) | Q(requeued_at__lt=lease_ago)
    queued_stale = now - timedelta(seconds=settings.PIPELINE_QUEUED_STALL_SECONDS)
    lapsed_judgments = Judgment.objects.filter(
        status=Judgment.Status.RUNNING, lease_until__lt=now
    ).values("uses__task_result__submission_id")
    lapsed_rows = TaskResult.objects.filter(lease_until__lt=now).values("submission_id")
    candidates = (
        Submission.objects.filter(status__in=ACTIVE, is_reported=False)
        .filter(
            not_recent & Q(status=S.QUEUED, created_at__lt=queued_stale) & quiet
            | not_recent & ~Q(status=S.QUEUED) & quiet
            | not_within_lease & Q(pk__in=lapsed_judgments)
            | not_within_lease & Q(pk__in=lapsed_rows)
        )
        .select_related("benchmark")
    )
    resumed = []
    for submission in candidates:
        logger.warning("re-queueing submission %s (%s)", submission.pk, submission.status)
        with transaction.atomic():
            submission_resume(submission=submission)
        resumed.append(submission.pk)
    close_old_connections()
    return resumed
