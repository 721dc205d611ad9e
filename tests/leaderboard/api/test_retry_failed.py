"""Retry failed judgments over the API, on the example plug-in (toy-bench), against a local judge
server that refuses every prompt the first time (HTTP 400: not retried, the judgment fails) and
grades it the second. (The toy scores an unparseable answer as an outcome, so a refusal is what
leaves its judgments failed.)"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from evaluation.models import Score, Submission
from evaluation.services import submission_create
from tests.conftest import completion, toy_upload

# toy_upload answers q1 to q3; each answer is graded twice (accuracy, style): six prompts.
PROMPTS = 6

pytestmark = pytest.mark.django_db


def refused_then_graded(body, call):
    if call == 1:
        return 400, {}, {"error": {"message": "bad request"}}
    grade = {"score": 1.0, "why": "fine"}
    return 200, {}, completion(json.dumps(grade), prompt_tokens=100, completion_tokens=5)


@pytest.fixture
def failing(world, eager, judge_server, tmp_path, django_capture_on_commit_callbacks):
    benchmark = world.published.benchmark  # the module's toy-bench (accounts/people.py)
    judge = benchmark.judges.get(slug="official")
    judge.base_url = judge_server.url
    judge.price_input_per_mtok = Decimal("2.5")
    judge.price_output_per_mtok = Decimal("10")
    judge.save()
    judge_server.responder = refused_then_graded
    bundle = toy_upload(tmp_path / "again.zip")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(
            benchmark=benchmark,
            bundle_path=bundle,
            system_name="Flaky Judge Agent",
            judge=judge,
            allow_partial=True,
            team=world.lab_a,
        )
    return submission


def test_retry_requeues_exactly_the_failed_judgments(
    world, failing, judge_server, django_capture_on_commit_callbacks
):
    prompts = judge_server.prompts()
    distinct = set(prompts)
    assert len(prompts) == len(distinct) == PROMPTS  # one call per distinct prompt, all refused
    client = world.client("bob")
    before = client.get(f"/api/submissions/{failing.pk}/").json()
    assert before["status"] == "scored"
    assert before["progress"]["judgments_failed"] == len(distinct)
    assert before["scores"][0]["judgments_failed"] == len(distinct)

    assert (
        world.client("charlie").post(f"/api/submissions/{failing.pk}/retry-failed/").status_code
        == 404
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/submissions/{failing.pk}/retry-failed/")
    assert response.status_code == 202
    assert response.json() == {
        "submission": failing.pk,
        "judge": "official",
        "requeued": len(distinct),
    }
    # Each prompt was asked exactly once more, and nothing else.
    assert sorted(judge_server.prompts()) == sorted(prompts * 2)

    after = client.get(f"/api/submissions/{failing.pk}/").json()
    assert after["status"] == "scored"
    assert after["progress"]["judgments_failed"] == 0
    [score] = after["scores"]
    assert score["judgments_failed"] == 0
    # Tokens of the answers that count (the refusals had none): 100 in, 5 out per judgment.
    n = len(distinct)
    assert score["tokens"] == {"input": 100 * n, "output": 5 * n}
    assert score["cost_usd"] == pytest.approx((100 * n * 2.5 + 5 * n * 10) / 1_000_000)
    assert score["results"] == Score.objects.get(submission=failing, judge__slug="official").results

    with django_capture_on_commit_callbacks(execute=True):
        again = world.client("staff").post(f"/api/submissions/{failing.pk}/retry-failed/")
    assert again.status_code == 202 and again.json()["requeued"] == 0


def test_retry_names_a_judge_or_refuses(world, failing, django_capture_on_commit_callbacks):
    client = world.client("alice")
    path = f"/api/submissions/{failing.pk}/retry-failed/"
    unknown = client.post(path, {"judge": "gpt-9"}, format="json")
    assert unknown.status_code == 400 and "gpt-9" in unknown.json()["judge"]
    unscored = client.post(path, {"judge": "offline"}, format="json")
    assert unscored.status_code == 409
    assert "offline has not scored" in unscored.json()["detail"]


def test_retry_waits_until_the_submission_is_scored(world, tmp_path):
    benchmark = world.published.benchmark
    queued = submission_create(  # no commit in this test transaction: it stays queued
        benchmark=benchmark,
        bundle_path=toy_upload(tmp_path / "q.zip"),
        system_name="Queued Agent",
        judge=benchmark.judges.get(slug="offline"),
        allow_partial=True,
        team=world.lab_a,
    )
    assert Submission.objects.get(pk=queued.pk).status == "queued"
    response = world.client("alice").post(f"/api/submissions/{queued.pk}/retry-failed/")
    assert response.status_code == 409
    assert "is queued" in response.json()["detail"]
