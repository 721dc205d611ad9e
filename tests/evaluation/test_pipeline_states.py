"""States a submission passes through when things go wrong or are redone: a stage that fails
ends FAILED with a message for people (never the exception's text) and is retried from where it
stopped; a re-score keeps the numbers on the board, marked, until the new ones replace them; a
score with failed judgments is retried on its own after a pause and marked until then."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.models import Judgment, Membership, Score, Submission, Team
from evaluation.services import submission_create
from evaluation.services.pipeline import submissions_sweep
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bundle(toy_partial):
    return toy_partial


@pytest.fixture
def owner(client):
    user = User.objects.create_user("owner", password="pw-owner-1234")
    team = Team.objects.create(name="Lab", slug="lab")
    Membership.objects.create(team=team, user=user, role="owner")
    client.force_login(user)
    return team


def test_a_failed_stage_is_failed_with_a_message_and_retried_from_there(
    eager, toybench, bundle, owner, client, monkeypatch
):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail /srv/db")

    monkeypatch.setattr(type(toy.plugin), "run_submission_step", broken)
    with pytest.raises(RuntimeError):
        submission_create(
            benchmark=toybench,
            bundle_path=bundle,
            system_name="Broken",
            judge=toybench.judges.get(slug="offline"),
            allow_partial=True,
            team=owner,
        )
    submission = Submission.objects.get(system__name="Broken")
    assert submission.status == "failed"
    assert "processing failed (RuntimeError)" in submission.error
    assert "secret internal detail" not in submission.error
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "secret internal detail" not in page and "Retry from where it failed" in page
    # Ingest had finished: a retry runs the processing step again, not the ingest.
    ingested = submission.task_results.count()
    monkeypatch.undo()
    client.post(f"/submissions/{submission.pk}/retry/")
    submission.refresh_from_db()
    assert submission.status == "scored" and submission.task_results.count() == ingested
    assert Score.objects.filter(submission=submission).exists()


def test_the_board_keeps_a_row_while_it_is_rescored(eager, toybench, bundle, client):
    submission = submission_create(
        benchmark=toybench,
        bundle_path=bundle,
        system_name="Rescored",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
        publish=True,
    )
    submission.refresh_from_db()
    assert submission.status == "scored"

    def board_row():
        board = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=offline").json()
        return next((e for e in board["entries"] if e["system"] == "Rescored"), None)

    before = board_row()
    # A re-score has started: the submission is judging again under its own judge.
    Submission.objects.filter(pk=submission.pk).update(status="judging")
    during = board_row()
    assert during is not None and during["results"] == before["results"]
    assert during["flags"]["rescoring"] is True and before["flags"]["rescoring"] is False
    page = client.get("/benchmarks/toy-bench/?judge=offline").content.decode()
    assert "re-scoring" in page


def test_failed_judgments_are_retried_after_a_pause_and_marked(
    eager, toybench, bundle, client, settings
):
    submission = submission_create(
        benchmark=toybench,
        bundle_path=bundle,
        system_name="Outage",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
        publish=True,
    )
    # A judge outage left two judgments failed when the score was aggregated.
    used = Judgment.objects.filter(uses__task_result__submission=submission).distinct()
    broken = list(used.order_by("pk").values_list("pk", flat=True)[:2])
    Judgment.objects.filter(pk__in=broken).update(status="failed", verdict=None)
    from evaluation.services.pipeline import judging_finish

    Submission.objects.filter(pk=submission.pk).update(status="judging")
    judging_finish(submission_id=submission.pk, judge_id=submission.judge_id)
    submission.refresh_from_db()
    assert submission.status == "scored" and submission.retry_failed_at is not None
    pause = settings.FAILED_RETRY_PAUSE_SECONDS
    assert submission.retry_failed_at > timezone.now() + timedelta(seconds=pause - 30)

    board = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=offline").json()
    row = next(e for e in board["entries"] if e["system"] == "Outage")
    assert row["failed_judgments"] == 2 and row["flags"]["retrying_failed"] is True
    csv_text = client.get("/benchmarks/toy-bench/leaderboard.csv?judge=offline").content.decode()
    header = csv_text.splitlines()[0].split(",")
    line = next(line for line in csv_text.splitlines() if "Outage" in line).split(",")
    assert line[header.index("failed_judgments")] == "2"

    # Not yet due: the sweeper leaves it alone.
    submissions_sweep()
    assert used.filter(status="failed").count() == 2
    # Due: the failed ones are asked again (the offline judge answers at once) and the mark goes.
    Submission.objects.filter(pk=submission.pk).update(retry_failed_at=timezone.now())
    submissions_sweep()
    submission.refresh_from_db()
    assert used.filter(status="failed").count() == 0
    assert submission.failed_retries == 1 and submission.retry_failed_at is None
    row = next(
        e
        for e in client.get("/api/benchmarks/toy-bench/leaderboard/?judge=offline").json()[
            "entries"
        ]
        if e["system"] == "Outage"
    )
    assert row["failed_judgments"] == 0 and row["flags"]["retrying_failed"] is False


def test_work_a_dead_worker_held_is_requeued_once_per_lease(eager, toybench, bundle, monkeypatch):
    """A worker that heartbeats the submission but dies holding a judgment: the sweeper re-queues
    the submission as soon as the lease lapsed, not after a stall period, and not twice within
    one lease period."""
    from django.conf import settings

    from evaluation.services import pipeline

    submission = submission_create(
        benchmark=toybench,
        bundle_path=bundle,
        system_name="Dead",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
    )
    sent = []
    monkeypatch.setattr(
        pipeline, "submission_resume", lambda *, submission: sent.append(submission.pk)
    )
    now = timezone.now()
    held = Judgment.objects.filter(uses__task_result__submission=submission).first()
    Judgment.objects.filter(pk=held.pk).update(
        status="running", lease_owner="dead", lease_until=now + timedelta(seconds=5)
    )
    # The submission looks alive (a recent heartbeat): only the lapsed lease gives it away.
    Submission.objects.filter(pk=submission.pk).update(
        status="judging", heartbeat_at=now, requeued_at=None
    )
    assert submissions_sweep() == [] and sent == []  # the lease still runs

    Judgment.objects.filter(pk=held.pk).update(lease_until=now - timedelta(seconds=1))
    assert submissions_sweep() == [submission.pk]
    Submission.objects.filter(pk=submission.pk).update(requeued_at=timezone.now())
    assert submissions_sweep() == []  # already re-queued within this lease period
    lease = settings.JUDGE_LEASE_SECONDS
    assert lease < settings.PIPELINE_STALL_SECONDS
    Submission.objects.filter(pk=submission.pk).update(
        requeued_at=timezone.now() - timedelta(seconds=lease + 1)
    )
    assert submissions_sweep() == [submission.pk]  # a lease later, still lapsed: again
