"""Retry failed judgments over the API, against a local judge server that answers every prompt
with nonsense the first time and with a verdict the second."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from evaluation.models import Score, Submission
from evaluation.services import submission_create
from tests.conftest import completion, copy_examples, zip_tree

pytestmark = pytest.mark.django_db


def nonsense_then_verdict(body, call):
    if call == 1:
        return 200, {}, completion("I would rather not say", prompt_tokens=40, completion_tokens=2)
    verdict = {"correct": True, "consistent": True, "reasoning": "fine", "extracted_name": "Ben"}
    return 200, {}, completion(json.dumps(verdict), prompt_tokens=100, completion_tokens=5)


@pytest.fixture
def failing(
    world, eager, judge_server, mpbench, mpbench_dir, tmp_path, django_capture_on_commit_callbacks
):
    judge = mpbench.judges.get(slug="official")
    judge.base_url = judge_server.url
    judge.price_input_per_mtok = Decimal("2.5")
    judge.price_output_per_mtok = Decimal("10")
    judge.save()
    judge_server.responder = nonsense_then_verdict
    bundle = zip_tree(copy_examples(mpbench_dir, tmp_path / "again"), tmp_path / "again.zip")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(
            benchmark=mpbench,
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
    assert len(prompts) == len(distinct) > 0  # one call per distinct prompt, all unparseable
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
    # Tokens of the answers that count (the second ones): 100 in, 5 out per judgment.
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


def test_retry_waits_until_the_submission_is_scored(world, mpbench, mpbench_dir, tmp_path):
    bundle = zip_tree(copy_examples(mpbench_dir, tmp_path / "q"), tmp_path / "q.zip")
    queued = submission_create(  # no commit in this test transaction: it stays queued
        benchmark=mpbench,
        bundle_path=bundle,
        system_name="Queued Agent",
        judge=mpbench.judges.get(slug="offline"),
        allow_partial=True,
        team=world.lab_a,
    )
    assert Submission.objects.get(pk=queued.pk).status == "queued"
    response = world.client("alice").post(f"/api/submissions/{queued.pk}/retry-failed/")
    assert response.status_code == 409
    assert "is queued" in response.json()["detail"]
