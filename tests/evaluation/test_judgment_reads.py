"""Reads of one submission's links and judgments go table by table (evaluation/selectors.py):
a join from judgments through links to task results, planned from PostgreSQL statistics that
predate the submission, compared every link with every task result for each judgment."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.evaluation.test_link_chunks import _submit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("batch", [1, 2000])
def test_judgment_reads_never_join_task_results_with_links_and_read_what_a_join_reads(
    eager, toybench, judge_server, toy_partial, monkeypatch, batch
):
    """With one id per batch too (every read merges its batches): no statement names both the
    task results and the links, and each read gives what one join over them gives."""
    from django.db import connection
    from django.db.models import Count, Q
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from evaluation import scorer, selectors
    from evaluation.models import Judgment, TaskJudgment
    from evaluation.services import judging, pipeline, spending

    monkeypatch.setattr(selectors, "ID_BATCH", batch)
    submission = _submit(toybench, judge_server, toy_partial, "Reads")
    judge = submission.judge
    links = TaskJudgment.objects.filter(task_result__submission=submission, judge=judge)
    used = Judgment.objects.filter(pk__in=links.values("judgment_id")).order_by("pk")
    ids = list(used.values_list("pk", flat=True))
    assert len(ids) >= 4
    now = timezone.now()
    # One of each state the reads tell apart: pending, a dead worker's (lease lapsed), a live
    # worker's, failed; the rest done.
    Judgment.objects.filter(pk=ids[0]).update(status="pending")
    Judgment.objects.filter(pk=ids[1]).update(
        status="running", lease_until=now - timedelta(minutes=1)
    )
    Judgment.objects.filter(pk=ids[2]).update(
        status="running", lease_until=now + timedelta(minutes=5)
    )
    Judgment.objects.filter(pk=ids[3]).update(status="failed")

    with CaptureQueriesContext(connection) as queries:
        claimable = judging.claimable_ids(submission_id=submission.pk, judge_id=judge.pk)
        still_open = judging.judgments_open(submission_id=submission.pk, judge_id=judge.pk)
        calls = spending.calls_to_make(submission=submission, judge=judge)
        versions: set = set()
        _, total, failed = pipeline.task_outcomes(
            submission=submission, judge=judge, versions=versions
        )
        named = selectors.prompt_versions_named(versions)
        identity = scorer.score_scorer(submission=submission, judge=judge)
        progress = selectors.submission_progress(submission=submission)
        usage = selectors.judge_usage(submission=submission, judge=judge)
    joined = [
        query["sql"]
        for query in queries.captured_queries
        if "evaluation_taskresult" in query["sql"] and "evaluation_taskjudgment" in query["sql"]
    ]
    assert joined == []

    assert claimable == [ids[0], ids[1]]
    assert still_open
    expected_calls = (
        used.filter(pk__in=[ids[0], ids[1]]).values("kind").annotate(n=Count("pk")).order_by("kind")
    )
    assert [(group["kind"], group["n"]) for group in calls] == [
        (group["kind"], group["n"]) for group in expected_calls
    ]
    assert total == links.filter(judgment__isnull=False).count()
    assert failed == links.filter(judgment__status="failed").count() >= 1
    expected_progress = links.aggregate(
        done=Count("pk", filter=Q(judgment__status="done")),
        failed=Count("pk", filter=Q(judgment__status="failed")),
        skipped=Count("pk", filter=Q(judgment__isnull=True)),
    )
    assert progress["judgments_done"] == expected_progress["done"]
    assert progress["judgments_failed"] == expected_progress["failed"]
    assert progress["empty_responses"] == expected_progress["skipped"]
    assert usage.judgments == len(ids)
    kinds = sorted(set(used.values_list("kind", flat=True)))
    assert sorted(identity["prompts"]) == kinds
    assert [kind for kind, _, _ in usage.prompt_versions] == kinds
    # The versions read with the outcomes (the score's identity and record) are the join's.
    assert named == sorted(
        set(used.values_list("kind", "prompt_version__version", "prompt_version__sha256"))
    )
    assert named == selectors.prompt_versions_used(submission_id=submission.pk, judge_id=judge.pk)
    assert len(named) == len(kinds)

    Judgment.objects.filter(pk__in=ids[:3]).update(status="done", lease_until=None)
    assert judging.failed_judgments_reset(submission=submission, judge=judge) == 1
    assert Judgment.objects.get(pk=ids[3]).status == "pending"
    Judgment.objects.filter(pk=ids[3]).update(status="done")
    assert not judging.judgments_open(submission_id=submission.pk, judge_id=judge.pk)
