"""A browser finish goes through the finish_upload Celery task: the request queues it and answers
202; the page polls the upload's state; the worker validates, puts the bundle into bundles/ by
the store itself (a link, an in-bucket copy) and holds the team's row lock only to count and
insert. A finish that fails leaves no bundle and no submission behind."""

from __future__ import annotations

import contextlib

import pytest
from django.db import DataError

from evaluation.models import Submission
from evaluation.services import submissions
from leaderboard.uploads import services, storage, tasks
from leaderboard.uploads.models import Upload
from leaderboard.uploads.selectors import open_uploads_refusal
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)


def uploaded():
    return Submission.objects.filter(is_reported=False)


def sent(client, people, data: bytes) -> dict:
    client.force_login(people.alice)
    state = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=len(data))).json()
    if state["method"] == "chunked":
        assert put_chunk(client, state, data, 0).status_code == 200
    return state


def finish(client, state):
    return client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")


def stored_files(root) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.fixture
def queued(monkeypatch):
    """The broker: finish_upload.delay records the message instead of sending it."""
    messages: list[tuple] = []
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: messages.append(args))
    return messages


def test_the_request_queues_the_finish_and_a_worker_completes_it(
    client, people, toybench, make_bundle, queued, monkeypatch
):
    data = make_bundle().read_bytes()
    state = sent(client, people, data)
    response = finish(client, state)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "finishing" and body["finishing"] is True
    assert body["submission"] is None and body["state"] == state["urls"]["state"]
    assert queued == [(state["id"],)]
    # Nothing was validated or stored by the request.
    assert uploaded().count() == 0
    polled = client.get(state["urls"]["state"])
    assert polled["Cache-Control"] == "no-store"
    assert polled.json()["status"] == "finishing" and polled.json()["outcome"]["finishing"]
    # Finishing counts as open (the user's cap) and cannot be finished or cancelled meanwhile.
    assert Upload.objects.get(pk=state["id"]).status == "finishing"
    assert finish(client, state).status_code == 409
    assert client.post(state["urls"]["cancel"]).status_code == 409

    seen = []
    real_validate = services.bundle_validate

    def validate(**kwargs):
        seen.append(Upload.objects.get(pk=state["id"]).status)
        return real_validate(**kwargs)

    monkeypatch.setattr(services, "bundle_validate", validate)
    # What the worker runs for the message.
    assert tasks.finish_upload.apply(args=queued[0]).get() == "accepted"
    assert seen == ["validating"]
    # The same message delivered again finds nothing to do.
    assert tasks.finish_upload.apply(args=queued[0]).get() is None

    submission = uploaded().get()
    outcome = client.get(state["urls"]["state"]).json()["outcome"]
    assert outcome["status"] == "accepted" and outcome["finishing"] is False
    assert outcome["submission"] == submission.pk
    assert outcome["redirect"] == f"/submissions/{submission.pk}/"
    with submission.bundle.open("rb") as handle:
        assert handle.read() == data
    assert submission.bundle.name.startswith("bundles/") and submission.bundle_size == len(data)
    assert not storage.partial_path(state["id"]).exists()
    # The status page says a worker is on it only while one is.
    page = client.get(state["urls"]["page"]).content.decode()
    assert "Status: <strong>accepted</strong>" in page and "upload_status.js" not in page


def test_the_status_page_polls_while_finishing(client, people, toybench, make_bundle, queued):
    state = sent(client, people, make_bundle().read_bytes())
    assert finish(client, state).status_code == 202
    page = client.get(state["urls"]["page"]).content.decode()
    assert "Status: <strong>finishing</strong>" in page
    assert f'data-state-url="{state["urls"]["state"]}"' in page and "upload_status.js" in page
    # The page's plain form (no JSON) goes to that page.
    Upload.objects.filter(pk=state["id"]).update(status="uploading")
    plain = client.post(state["urls"]["finish"])
    assert plain.status_code == 302 and plain["Location"] == state["urls"]["page"]


def test_a_rejected_bundle_leaves_nothing_and_frees_the_users_slot(
    client, people, toybench, make_bundle, queued, tmp_path, settings
):
    settings.UPLOAD_MAX_OPEN_PER_USER = 1
    state = sent(client, people, make_bundle(broken=True).read_bytes())
    assert finish(client, state).status_code == 202
    assert open_uploads_refusal(user=people.alice, adding=1) is not None
    assert tasks.finish_upload.apply(args=queued[0]).get() == "rejected"
    outcome = client.get(state["urls"]["state"]).json()["outcome"]
    assert outcome["status"] == "rejected" and "line 1: not JSON" in outcome["report_html"]
    assert outcome["redirect"] == state["urls"]["page"]
    assert uploaded().count() == 0
    assert stored_files(tmp_path / "media") == []
    assert open_uploads_refusal(user=people.alice, adding=1) is None


def test_a_failure_after_the_bundle_was_placed_leaves_no_bundle_and_no_submission(
    client, people, toybench, make_bundle, queued, tmp_path, monkeypatch
):
    data = make_bundle().read_bytes()
    state = sent(client, people, data)
    assert finish(client, state).status_code == 202

    def refused(**kwargs):
        raise DataError("value too long for type character varying(200) in bundles/")

    monkeypatch.setattr(submissions, "submission_create", refused)
    assert tasks.finish_upload.apply(args=queued[0]).get() == "uploading"
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "uploading" and upload.error == services.FINISH_FAILED
    assert uploaded().count() == 0
    # No bundle under bundles/; the upload's own bytes are kept, to finish again.
    assert stored_files(tmp_path / "media") == [f"uploads/partial/{state['id']}.part"]
    outcome = client.get(state["urls"]["state"]).json()["outcome"]
    assert outcome["status"] == "uploading" and outcome["error"] == services.FINISH_FAILED
    assert "varying" not in str(outcome)
    monkeypatch.undo()
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: queued.append(args))
    assert finish(client, state).status_code == 202
    assert tasks.finish_upload.apply(args=queued[-1]).get() == "accepted"
    assert len(stored_files(tmp_path / "media" / "bundles")) == 1


def test_a_broker_that_cannot_take_the_message_reopens_the_upload(
    client, people, toybench, make_bundle, monkeypatch
):
    from kombu.exceptions import OperationalError

    def unreachable(*args):
        raise OperationalError("Error 111 connecting to redis:6379")

    monkeypatch.setattr(tasks.finish_upload, "delay", unreachable)
    state = sent(client, people, make_bundle().read_bytes())
    response = finish(client, state)
    assert response.status_code == 500
    assert response.json()["error"] == services.QUEUE_FAILED
    assert Upload.objects.get(pk=state["id"]).status == "uploading"


# --- What happens under the lock --------------------------------------------------------------


@pytest.fixture
def journal(monkeypatch):
    """Records, in order, the team lock being taken and released and every touch of the bytes:
    validation, hashing, and each call into the upload storage and the default storage."""
    events: list[str] = []

    def record(owner, name, label=None):
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            events.append(label or name)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapped)

    for name in ("bundle_validate", "file_sha256"):
        record(services, name)
    record(submissions, "bundle_store")
    for name in (
        "partial_place",
        "partial_delete",
        "multipart_complete",
        "object_download",
        "object_copy",
        "object_delete",
        "object_size",
        "parts_uploaded",
    ):
        record(storage, name)
    from django.core.files.storage import FileSystemStorage
    from storages.backends.s3 import S3Storage

    for backend in (FileSystemStorage, S3Storage):
        for name in ("_save", "_open", "delete"):
            record(backend, name, f"storage.{name.strip('_')}")
    real_locked = submissions.limits_locked

    @contextlib.contextmanager
    def locked(**kwargs):
        with real_locked(**kwargs):
            events.append("lock")
            yield
            events.append("unlock")

    monkeypatch.setattr(submissions, "limits_locked", locked)
    return events


def under_the_lock(events: list[str]) -> list[str]:
    """What happened between taking the first lock and releasing the last, locks aside."""
    assert "lock" in events and "unlock" in events, events
    first, last = events.index("lock"), len(events) - 1 - events[::-1].index("unlock")
    return [event for event in events[first:last] if event not in ("lock", "unlock")]


def test_the_lock_is_held_only_for_counting_chunked(
    client, people, toybench, make_bundle, queued, journal
):
    state = sent(client, people, make_bundle().read_bytes())
    assert finish(client, state).status_code == 202
    journal.clear()
    assert tasks.finish_upload.apply(args=queued[0]).get() == "accepted"
    assert under_the_lock(journal) == []
    before = journal[: journal.index("lock")]
    assert before == ["bundle_validate", "file_sha256", "partial_place"]
    # The partial file goes once the submission exists, never copied through this process.
    assert journal[journal.index("unlock") + 1 :] == ["partial_delete"]
    assert "storage.save" not in journal


def test_the_lock_is_held_only_for_counting_s3(
    client, people, toybench, make_bundle, bucket, queued, journal
):
    import httpx

    from tests.leaderboard.uploads.conftest import S3_PART

    s3, name = bucket
    data = make_bundle(audio_bytes=S3_PART + 1000).read_bytes()
    state = sent(client, people, data)
    assert state["method"] == "s3" and state["part_count"] == 2
    urls = client.post(
        state["urls"]["parts"], {"parts": [1, 2]}, content_type="application/json"
    ).json()["urls"]
    for number, url in urls.items():
        piece = data[(int(number) - 1) * S3_PART : int(number) * S3_PART]
        assert httpx.put(url, content=piece, timeout=30).status_code == 200
    assert finish(client, state).status_code == 202
    journal.clear()
    assert tasks.finish_upload.apply(args=queued[0]).get() == "accepted"
    assert under_the_lock(journal) == []
    before = journal[: journal.index("lock")]
    assert before.index("multipart_complete") < before.index("object_download")
    # The bundle is copied inside the bucket, never uploaded again from this process (what
    # follows the unlock is the submission's own pipeline, eager here).
    assert before[-1] == "object_copy" and "storage.save" not in before, journal
    submission = uploaded().get()
    keys = {obj["Key"] for obj in s3.list_objects_v2(Bucket=name).get("Contents", [])}
    # The upload's object and its multipart are gone; the bundle is the submission's.
    assert not any(key.startswith("uploads/") for key in keys)
    assert submission.bundle.name in keys
    assert s3.get_object(Bucket=name, Key=submission.bundle.name)["Body"].read() == data


def test_an_api_upload_is_checked_by_the_worker_as_a_browser_upload_is(
    client, people, toybench, make_bundle, queued, journal, tmp_path
):
    """The web request only moves the request's file into place and queues the finish: no
    validation, hashing into bundles/, or storing there happens in it."""
    from leaderboard.accounts.services import api_token_create

    token = api_token_create(user=people.alice, name="ci")[1]
    with make_bundle().open("rb") as handle:
        response = client.post(
            "/api/submissions/",
            {
                "benchmark": "toy-bench",
                "system": "API Agent",
                "team": "alpha",
                "judge": "offline",
                "allow_partial": "true",
                "bundle": handle,
            },
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
    assert response.status_code == 202, response.content
    assert journal == [] and uploaded().count() == 0
    assert [args[0] for args in queued] == [response.json()["id"]]
    assert tasks.finish_upload.apply(args=queued[0]).get() == "accepted"
    assert under_the_lock(journal) == []
    before = journal[: journal.index("lock")]
    assert before == ["bundle_validate", "file_sha256", "partial_place"]
    assert journal[journal.index("unlock") + 1 :] == ["partial_delete"]
    assert uploaded().get().status == "queued"
    assert stored_files(tmp_path / "media") == [uploaded().get().bundle.name]


def test_an_api_create_refused_at_the_limit_leaves_no_bundle(
    client, people, toybench, make_bundle, tmp_path
):
    from leaderboard.accounts.services import api_token_create

    people.alpha.max_submissions_per_day = 0
    people.alpha.save()
    token = api_token_create(user=people.alice, name="ci")[1]
    with make_bundle().open("rb") as handle:
        response = client.post(
            "/api/submissions/",
            {
                "benchmark": "toy-bench",
                "system": "API Agent",
                "team": "alpha",
                "allow_partial": "true",
                "bundle": handle,
            },
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
    assert response.status_code == 429, response.content
    assert stored_files(tmp_path / "media") == []
