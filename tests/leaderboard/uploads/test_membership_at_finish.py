"""Who may submit is checked when the upload starts and again when the worker finishes it: a
member removed meanwhile (or an owner no longer one, when the upload asked to publish) gets the
upload rejected with that reason, and nothing of it is stored. Asking to publish at all is for
the team's owners (and staff), in the browser and through the API."""

from __future__ import annotations

import pytest

from evaluation.models import Membership, Submission
from leaderboard.accounts.services import api_token_create, membership_remove
from leaderboard.uploads import tasks
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)


def uploaded():
    return Submission.objects.filter(is_reported=False)


def stored_files(root) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.fixture
def queued(monkeypatch):
    """The broker: finish_upload.delay records the message instead of sending it."""
    messages: list[tuple] = []
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: messages.append(args))
    return messages


def sent_and_queued(client, user, data: bytes, queued, **fields) -> dict:
    """The user starts an upload, sends every byte and asks to finish; the finish waits in the
    queue."""
    client.force_login(user)
    response = client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=len(data), **fields)
    )
    assert response.status_code == 201, response.content
    state = response.json()
    assert put_chunk(client, state, data, 0).status_code == 200
    finished = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert finished.status_code == 202, finished.content
    assert queued[-1] == (state["id"],)
    return state


def test_a_member_removed_while_the_finish_waits_gets_nothing_submitted(
    client, people, toybench, make_bundle, queued, tmp_path
):
    state = sent_and_queued(client, people.alice2, make_bundle().read_bytes(), queued)
    membership = Membership.objects.get(team=people.alpha, user=people.alice2)
    membership_remove(membership=membership, by=people.alice)
    assert tasks.finish_upload.apply(args=queued[-1]).get() == "rejected"
    upload = Upload.objects.get(pk=state["id"])
    assert upload.error == "you are no longer a member of team Alpha Lab; nothing was submitted"
    assert upload.submission_id is None and upload.finished_at is not None
    assert uploaded().count() == 0
    # Neither the upload's bytes nor a stored bundle is left.
    assert stored_files(tmp_path / "media") == []
    # The team's owner reads why on the upload's page.
    client.force_login(people.alice)
    page = client.get(state["urls"]["page"]).content.decode()
    assert "Upload rejected:</strong> you are no longer a member of team Alpha Lab" in page


def test_an_owner_demoted_while_a_publishing_finish_waits_gets_nothing_submitted(
    client, people, toybench, make_bundle, queued, tmp_path
):
    state = sent_and_queued(client, people.alice, make_bundle().read_bytes(), queued, publish="on")
    Membership.objects.filter(team=people.alpha, user=people.alice2).update(
        role=Membership.Role.OWNER
    )
    Membership.objects.filter(team=people.alpha, user=people.alice).update(
        role=Membership.Role.MEMBER
    )
    assert tasks.finish_upload.apply(args=queued[-1]).get() == "rejected"
    upload = Upload.objects.get(pk=state["id"])
    assert upload.error == (
        "you are no longer an owner of team Alpha Lab, and only its owners may publish; "
        "nothing was submitted: upload again without publishing"
    )
    assert uploaded().count() == 0
    assert stored_files(tmp_path / "media") == []


def test_a_member_still_in_the_team_submits_without_publishing(
    client, people, toybench, make_bundle, queued
):
    state = sent_and_queued(client, people.alice2, make_bundle().read_bytes(), queued)
    assert tasks.finish_upload.apply(args=queued[-1]).get() == "accepted"
    submission = uploaded().get()
    assert submission.submitted_by == people.alice2 and not submission.is_published
    assert Upload.objects.get(pk=state["id"]).error == ""


def test_only_owners_may_ask_to_publish_when_starting(client, people, toybench, tmp_path):
    client.force_login(people.alice2)
    refused = client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=10, publish="on")
    )
    assert refused.status_code == 403
    assert refused.json()["error"] == (
        "only owners of team Alpha Lab may publish a submission; leave publishing off and ask "
        "an owner to publish it once it is scored"
    )
    assert not Upload.objects.exists()
    assert client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=10)
    ).status_code == (201)
    client.force_login(people.alice)
    owner = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=10, publish="on"))
    assert owner.status_code == 201


def test_only_owners_may_ask_to_publish_through_the_api(client, people, toybench, make_bundle):
    secret = api_token_create(user=people.alice2, name="ci")[1]
    with make_bundle().open("rb") as handle:
        response = client.post(
            "/api/submissions/",
            {
                "benchmark": "toy-bench",
                "system": "API Agent",
                "team": "alpha",
                "judge": "offline",
                "allow_partial": "true",
                "publish": "true",
                "bundle": handle,
            },
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )
    assert response.status_code == 403
    assert response.json()["error"].startswith("only owners of team Alpha Lab may publish")
    assert uploaded().count() == 0 and not Upload.objects.exists()
