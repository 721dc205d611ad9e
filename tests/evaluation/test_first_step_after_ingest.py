"""A first step over the whole submission runs in ingest, on the task results ingest makes,
before they are written; ingest's worker then goes on into judging itself (pipeline.steps_start
with ``here``) rather than queueing it. On the example plug-in: its one step over the whole
submission measures each answer's length and counts the answered tasks."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from evaluation.benchmarks import get_plugin
from evaluation.models import TaskJudgment
from evaluation.services import judging
from tests.conftest import submit_offline

pytestmark = pytest.mark.django_db(transaction=True)


def _stored(submission) -> dict:
    return dict(
        submission.task_results.values_list("task__task_id", "detection").order_by("task__task_id")
    )


def _links(submission) -> list:
    return list(
        TaskJudgment.objects.filter(task_result__submission=submission)
        .order_by("task_result__task__task_id", "kind", "slot")
        .values_list("task_result__task__task_id", "kind", "slot", "judgment_id", "fixed")
    )


def test_the_step_run_after_ingest_stores_what_its_own_stage_stores(
    eager, toybench, toy_partial, monkeypatch
):
    """Run in ingest on the rows it makes, or as a stage that reads them back: the same
    detections, facts, marks, judged slots and results, and only the stage reads the task
    results for the step."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluation.services import pipeline

    # Chunks of 2, then 3: the six tasks are linked in three (2, 3, 1), as a large benchmark's
    # are in many.
    monkeypatch.setattr(judging, "FIRST_CHUNK", 2)
    monkeypatch.setattr(judging, "PREPARE_CHUNK", 3)
    with CaptureQueriesContext(connection) as queries:
        fused = submit_offline(toybench, toy_partial, "Fused")
    fused.refresh_from_db()
    assert fused.status == "scored" and fused.steps_done == 1
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "evaluation_taskresult" INNER JOIN' in q["sql"]
    ]
    detections = _stored(fused)
    links = _links(fused)
    results = fused.scores.get().results
    # Every task is measured, the missing ones as empty: "It is 2", "It is 4", "Maybe 74".
    lengths = {"q1": 7, "q2": 7, "q3": 8, "q4": 0, "q5": 0, "q6": 0}
    assert detections == {task: {"length": n} for task, n in lengths.items()}
    assert fused.facts == {"answered": 3}

    # The same step again as a stage of its own, from the stored rows.
    fused.task_results.update(detection={}, steps_done=0, detected=False)
    type(fused).objects.filter(pk=fused.pk).update(status="detecting", steps_done=0, facts={})
    with CaptureQueriesContext(connection) as again:
        pipeline.steps_start(submission_id=fused.pk)
    staged = type(fused).objects.get(pk=fused.pk)
    assert staged.status == "scored"
    assert _stored(staged) == detections
    assert staged.facts == fused.facts == {"answered": 3}
    assert not staged.task_results.filter(detected=False).exists()
    staged_reads = [
        q["sql"]
        for q in again.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "evaluation_taskresult" INNER JOIN' in q["sql"]
    ]
    # Both read the rows for linking (their ids in order, then a chunk at a time) and to
    # aggregate, last; the stage also read them, with their tasks, for the step, first.
    chunks = 3
    assert len(reads) == 1 + chunks + 1
    assert reads[0].startswith('SELECT "evaluation_taskresult"."id" AS "pk" FROM ')
    assert (
        '"evaluation_task"."spec"' in reads[-1] and '"evaluation_task"."spec"' in staged_reads[-1]
    )
    assert len(staged_reads) == 1 + len(reads)
    assert staged_reads[1:] == reads
    # Ingest's run wrote every task result once, with the step's findings: as many statements
    # as the stage's one write of its findings over the same rows (any other column count
    # takes the same number: every column is written, given or default).
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('INSERT INTO "evaluation_taskresult"')
    ]
    staged_writes = [
        q["sql"]
        for q in again.captured_queries
        if q["sql"].startswith('INSERT INTO "evaluation_taskresult"')
    ]
    assert len(writes) == len(staged_writes) >= 1
    # The same judged slots, linked to the same judgments, and the same results.
    assert _links(staged) == links and len(links) == 6 * 2
    assert staged.scores.get().results == results


def test_a_database_error_in_the_step_after_ingest_leaves_it_to_its_own_stage(
    eager, toybench, toy_partial, monkeypatch
):
    """A dropped connection is worth another try, not a failure. Failing in ingest, the task
    results are written as ingested and ingest's worker runs the step again on them, read
    back; failing there too, the step's own stage is queued and runs it a third time; the
    submission is scored, with the detections of an undisturbed run."""
    # Patched on the class: patching the shared plug-in instance would leave an attribute of
    # its own behind, hiding later tests' patches of the class.
    plugin_class = type(get_plugin("toy-bench"))
    run = plugin_class.run_submission_step
    calls = []

    def flaky(self, step, tasks, **kwargs):
        calls.append(len(tasks))
        if len(calls) <= failures:
            raise OperationalError("server closed the connection unexpectedly")
        return run(self, step, tasks, **kwargs)

    failures = 0
    monkeypatch.setattr(plugin_class, "run_submission_step", flaky)
    steady = submit_offline(toybench, toy_partial, "Steady")
    assert calls == [6]

    calls.clear()
    failures = 2
    submission = submit_offline(toybench, toy_partial, "Flaky")
    submission.refresh_from_db()
    assert calls == [6] * 3
    assert submission.status == "scored" and submission.error == ""
    assert _stored(submission) == _stored(steady)
    assert submission.facts == type(submission).objects.get(pk=steady.pk).facts


def test_a_database_error_in_judging_after_ingest_leaves_it_to_its_own_stage(
    eager, toybench, toy_partial, monkeypatch
):
    """Judging run by ingest's worker fails after it took the stage: its own stage is queued,
    takes the stage at once (no worker is on it any more), and the submission is scored."""
    from evaluation import services

    link = judging.judgments_link
    judge = services.submission_judge  # what judging's own task (judge_submission) runs
    queued = []
    calls = []

    def tracked(**kwargs):
        queued.append(True)
        try:
            return judge(**kwargs)
        finally:
            queued.pop()

    def flaky(**kwargs):
        calls.append(bool(queued))
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return link(**kwargs)

    monkeypatch.setattr(services, "submission_judge", tracked)
    monkeypatch.setattr(judging, "judgments_link", flaky)
    submission = submit_offline(toybench, toy_partial, "Flaky judging")
    submission.refresh_from_db()
    # Run by ingest's worker the first time, by judging's own task the second.
    assert calls == [False, True]
    assert submission.status == "scored" and submission.error == ""
    assert len(_links(submission)) == 6 * 2


def test_a_database_error_in_judging_leaves_the_stage_to_its_retry(
    eager, toybench, toy_partial, monkeypatch
):
    """The judging stage itself (a re-score here), failing after it took the submission: its
    retry takes the stage at once rather than after a stall period, and scores it."""
    from evaluation.services.pipeline import submission_judge

    submission = submit_offline(toybench, toy_partial, "Retried judging")
    link = judging.judgments_link
    calls = []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return link(**kwargs)

    monkeypatch.setattr(judging, "judgments_link", flaky)
    with pytest.raises(OperationalError):
        submission_judge(submission_id=submission.pk, judge_id=submission.judge_id)
    submission.refresh_from_db()
    assert submission.status == "judging" and submission.heartbeat_at is None
    submission_judge(submission_id=submission.pk, judge_id=submission.judge_id)
    submission.refresh_from_db()
    assert len(calls) == 2 and submission.status == "scored"
