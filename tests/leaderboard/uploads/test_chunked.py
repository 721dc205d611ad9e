"""Browser uploads on the filesystem default: chunks to the server, then validate and submit."""

from __future__ import annotations

import json

import pytest

from evaluation.models import Submission, TaskResult
from leaderboard.uploads import storage
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import BROKEN_JSON, EXAMPLE_TASK, put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)

CHUNK = 64 * 1024


def uploaded():
    """Submissions made from bundles (the benchmark import adds the paper's rows too)."""
    return Submission.objects.filter(is_reported=False)


@pytest.fixture
def small_chunks(settings):
    settings.UPLOAD_CHUNK_BYTES = CHUNK


def start(client, bundle: bytes, **fields):
    response = client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=len(bundle), **fields)
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_chunks_with_a_retry_and_a_gap_then_finish_scores_it(
    client, people, toybench, make_bundle, small_chunks, eager
):
    path = make_bundle(audio_bytes=4 * CHUNK + 1000)
    data = path.read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    assert state["method"] == "chunked" and state["chunk_bytes"] == CHUNK
    assert state["received"] == 0 and state["size"] == len(data)
    upload = Upload.objects.get(pk=state["id"])
    assert (upload.team, upload.user, upload.status) == (people.alpha, people.alice, "uploading")

    chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]
    assert len(chunks) == 5  # 4 full chunks of 64 KiB and the rest
    assert put_chunk(client, state, chunks[0], 0).json() == {"received": CHUNK, "size": len(data)}
    assert put_chunk(client, state, chunks[1], CHUNK).json()["received"] == 2 * CHUNK
    # The same chunk again (its answer was lost): accepted, nothing appended.
    again = put_chunk(client, state, chunks[1], CHUNK)
    assert again.status_code == 200 and again.json()["received"] == 2 * CHUNK
    # A chunk that would leave a gap is refused with where to continue.
    gap = put_chunk(client, state, chunks[3], 3 * CHUNK)
    assert gap.status_code == 409
    assert gap.json()["received"] == 2 * CHUNK
    assert "send from byte 131,072" in gap.json()["error"]
    # Resuming: the page asks how many bytes the server holds.
    assert client.get(state["urls"]["state"]).json()["received"] == 2 * CHUNK
    for index in range(2, len(chunks)):
        response = put_chunk(client, state, chunks[index], index * CHUNK)
        assert response.status_code == 200, response.content
    partial = storage.partial_path(state["id"])
    assert partial.read_bytes() == data

    finish = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert finish.status_code == 200, finish.content
    body = finish.json()
    submission = uploaded().get()
    assert body["status"] == "accepted" and body["submission"] == submission.pk
    assert body["redirect"] == f"/submissions/{submission.pk}/"
    assert submission.status == "scored", submission.error
    assert submission.team == people.alpha and submission.submitted_by == people.alice
    assert submission.system.name == "Chunky Agent" and submission.judge.slug == "offline"
    assert not submission.is_published and submission.is_partial
    assert submission.idempotency_key == f"upload-{state['id']}"
    with submission.bundle.open("rb") as stored:
        assert stored.read() == data
    # The toy's measure step found q1's answer ("It is 2") seven characters long, and its
    # spoken answer is stored: the pipeline really ran.
    row = TaskResult.objects.get(submission=submission, task__task_id=EXAMPLE_TASK)
    assert row.detection == {"length": 7} and "answer.wav" in row.files
    assert not partial.exists()
    upload.refresh_from_db()
    assert upload.status == "accepted" and upload.submission == submission
    assert upload.report["ok"] is True

    page = client.get(body["redirect"])
    assert page.status_code == 200 and "Status: <strong>scored</strong>" in page.content.decode()
    detail = client.get(state["urls"]["page"]).content.decode()
    assert "Bundle accepted" in detail and f"/submissions/{submission.pk}/" in detail
    # Finished uploads take no more bytes and cannot be finished twice.
    assert put_chunk(client, state, chunks[0], 0).status_code == 409
    assert client.post(state["urls"]["finish"]).status_code in (302, 409)
    assert uploaded().count() == 1


def test_resent_chunk_with_other_bytes_is_refused(
    client, people, toybench, make_bundle, small_chunks
):
    data = make_bundle(audio_bytes=2 * CHUNK).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    put_chunk(client, state, data[:CHUNK], 0)
    changed = data[:10] + bytes([data[10] ^ 0xFF]) + data[11:CHUNK]
    response = put_chunk(client, state, changed, 0)
    assert response.status_code == 409 and "differ" in response.json()["error"]
    assert storage.partial_path(state["id"]).read_bytes() == data[:CHUNK]


def test_chunk_bounds(client, people, toybench, make_bundle, small_chunks):
    data = make_bundle(audio_bytes=2 * CHUNK).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    too_big = put_chunk(client, state, data[: CHUNK + 1], 0)
    assert too_big.status_code == 400 and "at most 65,536" in too_big.json()["error"]
    past_end = put_chunk(client, state, data[:100], len(data) - 50)
    assert past_end.status_code == 400 and "outside the announced" in past_end.json()["error"]
    assert client.put(state["urls"]["chunk"], data=b"x", content_type="x/y").status_code == 400
    assert Upload.objects.get(pk=state["id"]).received == 0


def test_finish_before_every_byte_arrived(client, people, toybench, make_bundle, small_chunks):
    data = make_bundle(audio_bytes=2 * CHUNK).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    put_chunk(client, state, data[:CHUNK], 0)
    response = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert response.status_code == 409
    assert f"holds 65,536 of {len(data):,} bytes" in response.json()["error"]
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "uploading" and upload.received == CHUNK
    assert uploaded().count() == 0


def test_rejected_bundle_shows_problems_and_leaves_nothing(
    client, people, toybench, make_bundle, small_chunks, settings, tmp_path, eager
):
    data = make_bundle(audio_bytes=CHUNK, broken=True).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    for offset in range(0, len(data), CHUNK):
        assert put_chunk(client, state, data[offset : offset + CHUNK], offset).status_code == 200
    response = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert response.status_code == 422
    body = response.json()
    assert body["status"] == "rejected" and body["submission"] is None
    html = body["report_html"]
    assert "Bundle rejected" in html and "answers.jsonl" in html
    assert "line 1: not JSON" in html
    assert uploaded().count() == 0
    media = tmp_path / "media"
    assert [p for p in media.rglob("*") if p.is_file()] == []
    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "rejected" and upload.submission is None
    with pytest.raises(json.JSONDecodeError):
        json.loads(BROKEN_JSON)
    message = "line 1: not JSON"
    assert upload.report["problems"] == [
        {"message": message, "task": None, "file": "answers.jsonl"}
    ]
    page = client.get(state["urls"]["page"]).content.decode()
    assert "Status: <strong>rejected</strong>" in page
    assert "<td>(whole bundle)</td><td>answers.jsonl</td>" in page
    assert message in page


def test_cancel_deletes_the_partial_file(client, people, toybench, make_bundle, small_chunks):
    data = make_bundle(audio_bytes=2 * CHUNK).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    put_chunk(client, state, data[:CHUNK], 0)
    partial = storage.partial_path(state["id"])
    assert partial.exists()
    response = client.post(state["urls"]["cancel"])
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert not partial.exists()
    assert put_chunk(client, state, data[CHUNK : 2 * CHUNK], CHUNK).status_code == 409
    assert client.post(state["urls"]["cancel"]).status_code == 409


def test_start_refuses_empty_and_oversized_bundles(client, people, toybench, settings):
    client.force_login(people.alice)
    settings.BUNDLE_MAX_UNCOMPRESSED_BYTES = 1000
    empty = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=0))
    assert empty.status_code == 400 and "size" in empty.json()["errors"]
    huge = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=10**9))
    assert huge.status_code == 400 and "the limit is 67,109,864" in huge.json()["error"]
    assert Upload.objects.count() == 0


def test_expired_uploads_lose_their_bytes(client, people, toybench, make_bundle, small_chunks):
    from datetime import timedelta

    from django.core.management import call_command

    data = make_bundle(audio_bytes=CHUNK).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    put_chunk(client, state, data[:CHUNK], 0)
    call_command("purge_uploads", "--older-than-hours", "1")
    assert Upload.objects.get(pk=state["id"]).status == "uploading"
    Upload.objects.filter(pk=state["id"]).update(
        updated_at=Upload.objects.get(pk=state["id"]).updated_at - timedelta(hours=2)
    )
    call_command("purge_uploads", "--older-than-hours", "1")
    assert Upload.objects.get(pk=state["id"]).status == "expired"
    assert not storage.partial_path(state["id"]).exists()


def test_the_form_asks_for_a_judge_where_there_is_no_official_one(client, people, toybench):
    client.force_login(people.alice)
    page = client.get("/benchmarks/toy-bench/submit/").content.decode()
    assert "the official judge" in page
    assert '<option value="alpha" selected>Alpha Lab</option>' in page  # alice's only team
    toybench.judges.filter(is_official=True).delete()
    page = client.get("/benchmarks/toy-bench/submit/").content.decode()
    assert "the official judge" not in page
    response = client.post("/benchmarks/toy-bench/submit/start/", start_fields(judge="", size=10))
    assert response.status_code == 400 and "judge" in response.json()["errors"]
    assert Upload.objects.count() == 0
