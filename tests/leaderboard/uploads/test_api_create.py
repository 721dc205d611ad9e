"""POST /api/submissions/: a multipart bundle, token or session auth, answered at once (202)
with the upload's state, which GET /api/uploads/<id>/ keeps telling while a worker validates
the bundle and creates the submission (upload_finish, run here as the worker runs it);
Idempotency-Key, the validation report on rejection, 429 at the team's limits."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from evaluation.models import Membership, Submission, System
from leaderboard.accounts.services import api_token_create
from leaderboard.uploads.models import Upload
from leaderboard.uploads.services import upload_finish

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/submissions/"


def uploaded():
    return Submission.objects.filter(is_reported=False)


def post(client, bundle: Path, *, key: str | None = None, token: str | None = None, **fields):
    data = {
        "benchmark": "toy-bench",
        "system": "API Agent",
        "team": "alpha",
        "judge": "offline",
        "allow_partial": "true",
    }
    data.update(fields)
    headers = {}
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    with bundle.open("rb") as handle:
        return client.post(URL, {**data, "bundle": handle}, **headers)


def finished(client, response, **headers) -> dict:
    """The worker's part, as the queued task runs it; then the state the client polls."""
    assert response.status_code == 202, response.content
    upload_finish(upload_id=response.json()["id"])
    state = client.get(response["Location"], **headers)
    assert state.status_code == 200
    return state.json()


@pytest.fixture
def alice_token(people) -> str:
    return api_token_create(user=people.alice, name="ci")[1]


def test_token_create_streams_the_bundle_and_a_worker_makes_the_submission(
    client, people, toybench, make_bundle, alice_token, eager
):
    bundle = make_bundle(audio_bytes=3 * 1024 * 1024)  # beyond Django's in-memory threshold
    response = post(client, bundle, token=alice_token, publish="true", system_type="large")
    # Eager here, as a one-process site runs: the worker has finished by the time it answers.
    assert response.status_code == 202, response.content
    body = response.json()
    upload = Upload.objects.get()
    assert body["id"] == str(upload.pk)
    assert response["Location"] == body["url"] == f"http://testserver/api/uploads/{upload.pk}/"
    submission = uploaded().get()
    assert body["status"] == "accepted" and body["report"]["ok"] is True
    assert body["submission"] == {
        "id": submission.pk,
        "url": f"http://testserver/api/submissions/{submission.pk}/",
        "page": f"http://testserver/submissions/{submission.pk}/",
        "status": "scored",
    }
    assert (body["team"], body["system"], body["benchmark"]) == ("alpha", "API Agent", "toy-bench")
    assert body["size"] == bundle.stat().st_size
    submission.refresh_from_db()
    assert submission.status == "scored" and submission.submitted_by == people.alice
    assert submission.is_published and submission.is_partial
    assert submission.missing_task_count == 6 - 3  # toybench's six tasks, three answered
    assert submission.row_group == "large"
    assert submission.bundle_size == bundle.stat().st_size
    # The upload's own bytes are gone; the submission holds its copy.
    assert upload.method in ("chunked", "s3")
    polled = client.get(body["url"], HTTP_AUTHORIZATION=f"Bearer {alice_token}")
    assert polled.json() == body


def test_the_request_answers_before_the_bundle_is_checked(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    response = post(client, make_bundle())
    assert response.status_code == 202
    assert response.json()["status"] == "finishing" and response.json()["submission"] is None
    assert uploaded().count() == 0
    state = finished(client, response)
    assert state["status"] == "accepted" and state["submission"]["id"] == uploaded().get().pk


def test_same_key_same_request_returns_the_original(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    bundle = make_bundle()
    first = post(client, bundle, key="run-42")
    state = finished(client, first)
    again = post(client, bundle, key="run-42")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"] and again.json() == state
    assert uploaded().count() == 1 and Upload.objects.count() == 1
    # A replay creates nothing, so the team's limits do not stand in its way.
    people.alpha.max_concurrent_evaluations = 0
    people.alpha.save()
    assert post(client, bundle, key="run-42").status_code == 200
    assert post(client, bundle, key="run-43").status_code == 429
    people.alpha.max_concurrent_evaluations = None
    people.alpha.save()
    # Without a key, the same request makes a second submission.
    finished(client, post(client, bundle))
    assert uploaded().count() == 2


def test_same_key_different_request_is_a_conflict(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    bundle = make_bundle()
    assert post(client, bundle, key="run-42").status_code == 202
    renamed = post(client, bundle, key="run-42", system="Another Name")
    assert renamed.status_code == 409 and "different" in renamed.json()["error"]
    other_bundle = make_bundle("other", audio_bytes=1000)
    assert post(client, other_bundle, key="run-42").status_code == 409
    assert Upload.objects.count() == 1


def test_keys_belong_to_one_team(client, people, toybench, make_bundle):
    bundle = make_bundle()
    client.force_login(people.alice)
    first = post(client, bundle, key="shared")
    assert first.status_code == 202
    client.force_login(people.bob)
    assert post(client, bundle, key="shared", team="beta").status_code == 202
    assert Upload.objects.filter(idempotency_key="shared").count() == 2
    # A teammate repeating the request gets the team's original; the other team cannot see it.
    client.force_login(people.alice2)
    replay = post(client, bundle, key="shared")
    assert replay.status_code == 200 and replay.json()["id"] == first.json()["id"]
    client.force_login(people.bob)
    assert client.get(first["Location"]).status_code == 404


def test_a_key_used_outside_the_api_is_a_conflict(client, people, toybench, make_bundle):
    system = System.objects.create(name="By hand")
    Submission.objects.create(
        benchmark=toybench, system=system, team=people.alpha, idempotency_key="cli-1"
    )
    client.force_login(people.alice)
    assert post(client, make_bundle(), key="cli-1").status_code == 409


def test_a_rejected_bundle_keeps_its_report_and_nothing_else(
    client, people, toybench, make_bundle, tmp_path
):
    client.force_login(people.alice)
    state = finished(client, post(client, make_bundle(broken=True), key="try-1"))
    assert state["status"] == "rejected" and state["submission"] is None
    report = state["report"]
    assert report["ok"] is False
    assert [(p["task"], p["file"]) for p in report["problems"]] == [(None, "answers.jsonl")]
    assert uploaded().count() == 0
    assert [p for p in (tmp_path / "media").rglob("*") if p.is_file()] == []
    # The key names that request: the fixed bundle goes through under a key of its own.
    assert post(client, make_bundle("fixed"), key="try-1").status_code == 409
    assert finished(client, post(client, make_bundle("fixed"), key="try-2"))["status"] == (
        "accepted"
    )


def test_limits_answer_429_with_the_reason_and_store_nothing(
    client, people, toybench, make_bundle, tmp_path
):
    people.alpha.max_submissions_per_day = 1
    people.alpha.save()
    system = System.objects.create(name="Earlier")
    earlier = Submission.objects.create(
        benchmark=toybench, system=system, team=people.alpha, status="scored"
    )
    made_at = timezone.now() - timedelta(hours=23)
    Submission.objects.filter(pk=earlier.pk).update(created_at=made_at)
    client.force_login(people.alice)
    response = post(client, make_bundle())
    assert response.status_code == 429
    body = response.json()
    assert body["limit"] == "submissions_per_day" and body["allowed"] == 1
    assert "limit of 1 submissions per day" in body["error"]
    assert body["retry_after"] == (made_at + timedelta(hours=24)).isoformat()
    # About an hour from now, in seconds.
    assert 3500 <= int(response["Retry-After"]) <= 3601
    assert uploaded().count() == 1 and Upload.objects.count() == 0
    assert [p for p in (tmp_path / "media").rglob("*") if p.is_file()] == []


def test_anonymous_and_bad_tokens_get_401(client, people, toybench, make_bundle):
    bundle = make_bundle()
    assert post(client, bundle).status_code == 401
    assert post(client, bundle, token="fb_nonsense").status_code == 401
    assert Upload.objects.count() == 0


def test_it_validates_team_membership(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    response = post(client, make_bundle(), team="beta")
    assert response.status_code == 403 and "not a member" in response.json()["error"]
    client.force_login(people.charlie)
    assert post(client, make_bundle(), team="alpha").status_code == 403
    assert Upload.objects.count() == 0


def test_team_may_be_left_out_by_members_of_one_team(client, people, toybench, make_bundle):
    client.force_login(people.bob)
    bundle = make_bundle()
    with bundle.open("rb") as handle:
        response = client.post(
            URL,
            {"benchmark": "toy-bench", "system": "Solo", "allow_partial": "true", "bundle": handle},
        )
    finished(client, response)
    assert uploaded().get().team == people.beta
    # A member of two teams must say which one submits.
    Membership.objects.create(team=people.alpha, user=people.bob)
    response = post(client, bundle, team="", system="Solo 2")
    assert response.status_code == 400 and "which team" in response.json()["error"]


def test_field_errors(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    bundle = make_bundle()
    assert post(client, bundle, benchmark="nope").status_code == 400
    assert "no judge" in post(client, bundle, judge="nobody").json()["error"]
    assert post(client, bundle, key="k" * 101).status_code == 400
    missing = client.post(URL, {"benchmark": "toy-bench", "system": "x"})
    assert missing.status_code == 400 and "bundle" in missing.json()["fields"]


def test_reads_on_the_same_path_still_list_submissions(client, people, toybench):
    response = client.get(URL)
    assert response.status_code == 200


def test_a_judge_is_required_where_there_is_no_official_one(client, people, toybench, make_bundle):
    toybench.judges.filter(is_official=True).delete()
    client.force_login(people.alice)
    bundle = make_bundle()
    with bundle.open("rb") as handle:
        response = client.post(
            URL, {"benchmark": "toy-bench", "system": "x", "team": "alpha", "bundle": handle}
        )
    assert response.status_code == 400 and "no official judge" in response.json()["error"]
    assert Upload.objects.count() == 0


def test_an_upload_state_is_its_teams_only(client, people, toybench, make_bundle):
    client.force_login(people.alice)
    response = post(client, make_bundle())
    for other in (people.charlie, people.bob):
        client.force_login(other)
        assert client.get(response["Location"]).status_code == 404
    client.logout()
    assert client.get(response["Location"]).status_code == 401
    client.force_login(people.alice2)  # a teammate
    assert client.get(response["Location"]).status_code == 200
