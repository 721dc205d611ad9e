"""Per-team limits: submissions per rolling 24 hours and evaluations in progress. Failed
submissions count against neither; concurrent creates never exceed them (PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from evaluation.models import Membership, Submission, System, Team
from evaluation.selectors import team_limit_refusal
from evaluation.services import submissions as submission_services
from evaluation.services.submissions import LimitReached, submission_create_within_limits
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def made(benchmark, team, *, status: str, at: datetime, name: str = "Earlier") -> Submission:
    system, _ = System.objects.get_or_create(name=name)
    submission = Submission.objects.create(
        benchmark=benchmark, system=system, team=team, status=status
    )
    Submission.objects.filter(pk=submission.pk).update(created_at=at)
    return submission


def limits(team, *, per_day: int | None, concurrent: int | None) -> None:
    team.max_submissions_per_day = per_day
    team.max_concurrent_evaluations = concurrent
    team.save()


def test_daily_limit_names_the_limit_and_when_it_frees(people, toybench):
    team = people.alpha
    limits(team, per_day=2, concurrent=10)
    made(toybench, team, status="scored", at=NOW - timedelta(hours=30))  # outside the window
    made(toybench, team, status="scored", at=NOW - timedelta(hours=23))
    made(toybench, team, status="scored", at=NOW - timedelta(hours=1))
    made(toybench, team, status="failed", at=NOW - timedelta(hours=2))  # does not count
    refusal = team_limit_refusal(team=team, now=NOW)
    assert refusal.limit == "submissions_per_day" and refusal.allowed == 2
    # Of the two counted, the older (made 23 h ago) leaves the 24 h window in 1 h.
    assert refusal.retry_after == NOW + timedelta(hours=1)
    assert "limit of 2 submissions per day" in refusal.message
    assert "2026-03-02 13:00 UTC, in 1 h 0 min" in refusal.message
    limits(team, per_day=3, concurrent=10)
    assert team_limit_refusal(team=team, now=NOW) is None
    # Another team's submissions are not counted against this one.
    limits(people.beta, per_day=1, concurrent=1)
    assert team_limit_refusal(team=people.beta, now=NOW) is None


def test_far_over_the_limit_a_slot_frees_when_enough_have_left(people, toybench):
    # The limit was lowered to 1 with three counted: the count must fall below 1, so all three
    # must leave the window; the newest (made 3 h ago) leaves in 21 h.
    limits(people.alpha, per_day=1, concurrent=10)
    for hours in (20, 10, 3):
        made(toybench, people.alpha, status="scored", at=NOW - timedelta(hours=hours))
    refusal = team_limit_refusal(team=people.alpha, now=NOW)
    assert refusal.retry_after == NOW + timedelta(hours=21)


def test_failed_submissions_count_against_neither_limit(people, toybench):
    limits(people.alpha, per_day=1, concurrent=1)
    made(toybench, people.alpha, status="failed", at=NOW - timedelta(minutes=5))
    made(toybench, people.alpha, status="failed", at=NOW - timedelta(minutes=1))
    assert team_limit_refusal(team=people.alpha, now=NOW) is None


def test_concurrent_limit_counts_unfinished_evaluations(people, toybench):
    limits(people.alpha, per_day=10, concurrent=1)
    running = made(toybench, people.alpha, status="judging", at=NOW - timedelta(minutes=5))
    refusal = team_limit_refusal(team=people.alpha, now=NOW)
    assert refusal.limit == "concurrent_evaluations" and refusal.retry_after is None
    assert f"(#{running.pk}) is scored or fails" in refusal.message
    assert "limit of 1 concurrent evaluations" in refusal.message
    Submission.objects.filter(pk=running.pk).update(status="scored")
    assert team_limit_refusal(team=people.alpha, now=NOW) is None


def test_site_defaults_apply_when_the_team_sets_none(people, toybench, settings):
    settings.MAX_SUBMISSIONS_PER_DAY = 1
    settings.MAX_CONCURRENT_EVALUATIONS = 5
    assert team_limit_refusal(team=people.alpha, now=NOW) is None
    made(toybench, people.alpha, status="scored", at=NOW - timedelta(hours=2))
    refusal = team_limit_refusal(team=people.alpha, now=NOW)
    assert refusal.limit == "submissions_per_day" and refusal.allowed == 1
    settings.MAX_SUBMISSIONS_PER_DAY = 5
    settings.MAX_CONCURRENT_EVALUATIONS = 0
    assert team_limit_refusal(team=people.alpha, now=NOW).limit == "concurrent_evaluations"


def test_the_page_refuses_to_start_at_the_limit(client, people, toybench):
    limits(people.alpha, per_day=10, concurrent=1)
    made(toybench, people.alpha, status="queued", at=datetime.now(UTC))
    client.force_login(people.alice)
    response = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=1000))
    assert response.status_code == 429
    assert response.json()["limit"] == "concurrent_evaluations"
    assert "concurrent evaluations" in response.json()["error"]
    assert Upload.objects.count() == 0


def test_finish_at_the_limit_keeps_the_upload_for_later(
    client, people, toybench, make_bundle, eager, settings
):
    settings.UPLOAD_CHUNK_BYTES = 1024 * 1024
    limits(people.alpha, per_day=10, concurrent=1)
    data = make_bundle().read_bytes()
    client.force_login(people.alice)
    state = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=len(data))).json()
    assert put_chunk(client, state, data, 0).status_code == 200
    # A teammate's submission starts meanwhile and takes the only slot.
    blocker = made(toybench, people.alpha, status="judging", at=datetime.now(UTC))
    refused = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert refused.status_code == 429
    assert f"#{blocker.pk}" in refused.json()["error"]
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "uploading" and "concurrent evaluations" in upload.error
    page = client.get(state["urls"]["page"]).content.decode()
    assert "Validate and submit again" in page and "concurrent evaluations" in page
    Submission.objects.filter(pk=blocker.pk).update(status="failed")
    again = client.post(state["urls"]["finish"])  # the status page's plain form
    submission = Submission.objects.get(team=people.alpha, status="scored")
    assert again.status_code == 302 and again["Location"] == f"/submissions/{submission.pk}/"


# --- Races (PostgreSQL) ----------------------------------------------------------------------


@pytest.mark.services
@pytest.mark.parametrize(
    ("per_day", "concurrent", "expected", "refused_by"),
    [(3, 100, 3, "submissions_per_day"), (100, 2, 2, "concurrent_evaluations")],
)
def test_ten_simultaneous_creates_never_exceed_the_limit(
    postgres,
    people,
    toybench,
    make_bundle,
    monkeypatch,
    settings,
    per_day,
    concurrent,
    expected,
    refused_by,
):
    limits(people.alpha, per_day=per_day, concurrent=concurrent)
    # The team's limits are under test here; the account's (same defaults) are set out of reach.
    settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT = 100
    settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT = 100
    # Nothing is queued: the submissions stay "queued", which counts as in progress.
    monkeypatch.setattr(submission_services, "enqueue_on_commit", lambda *args: None)
    bundle = make_bundle()
    judge = toybench.judges.get(slug="offline")
    start = threading.Barrier(10)
    outcomes: list[str] = []

    def create(index: int) -> None:
        try:
            start.wait()
            submission_create_within_limits(
                team=people.alpha,
                benchmark=toybench,
                bundle_path=bundle,
                system_name=f"Racer {index}",
                system_type="",
                judge=judge,
                allow_partial=True,
                submitted_by=people.alice,
                publish=False,
                idempotency_key="",
            )
            outcomes.append("created")
        except LimitReached as exc:
            outcomes.append(exc.refusal.limit)
        except Exception as exc:  # noqa: BLE001 - reported in the assertion below
            outcomes.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(outcomes) == sorted(["created"] * expected + [refused_by] * (10 - expected))
    assert Submission.objects.filter(team=people.alpha).count() == expected


@pytest.mark.services
def test_simultaneous_creates_through_two_teams_keep_the_account_limit(
    postgres, people, toybench, make_bundle, monkeypatch, settings
):
    """The account's limit holds across its teams under the user row lock."""
    settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT = 3
    settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT = 100
    second = Team.objects.create(name="Second Lab", slug="second")
    Membership.objects.create(team=second, user=people.alice)
    for team in (people.alpha, second):
        limits(team, per_day=100, concurrent=100)
    monkeypatch.setattr(submission_services, "enqueue_on_commit", lambda *args: None)
    bundle = make_bundle()
    judge = toybench.judges.get(slug="offline")
    start = threading.Barrier(10)
    outcomes: list[str] = []

    def create(index: int) -> None:
        try:
            start.wait()
            submission_create_within_limits(
                team=people.alpha if index % 2 else second,
                benchmark=toybench,
                bundle_path=bundle,
                system_name=f"Racer {index}",
                system_type="",
                judge=judge,
                allow_partial=True,
                submitted_by=people.alice,
                publish=False,
                idempotency_key="",
            )
            outcomes.append("created")
        except LimitReached as exc:
            outcomes.append(exc.refusal.limit)
        except Exception as exc:  # noqa: BLE001 - reported in the assertion below
            outcomes.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(outcomes) == sorted(["created"] * 3 + ["submissions_per_day"] * 7)
    assert Submission.objects.filter(submitted_by=people.alice).count() == 3
