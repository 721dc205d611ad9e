"""Browser uploads on S3 storage: presigned multipart parts sent straight to the bucket (a moto
server speaking HTTP on loopback), then validated and submitted by the server."""

from __future__ import annotations

import httpx
import pytest

from evaluation.models import Submission
from leaderboard.uploads import storage
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import S3_PART as PART
from tests.leaderboard.uploads.conftest import start_fields

pytestmark = pytest.mark.django_db(transaction=True)


def keys(client, name) -> set[str]:
    return {obj["Key"] for obj in client.list_objects_v2(Bucket=name).get("Contents", [])}


def open_multiparts(client, name) -> list:
    return client.list_multipart_uploads(Bucket=name).get("Uploads", [])


def start(client, data: bytes, **fields) -> dict:
    response = client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=len(data), **fields)
    )
    assert response.status_code == 201, response.content
    return response.json()


def part_urls(client, state: dict, numbers: list[int]) -> dict[int, str]:
    response = client.post(
        state["urls"]["parts"], {"parts": numbers}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return {int(n): url for n, url in response.json()["urls"].items()}


def send_part(url: str, data: bytes, number: int) -> None:
    chunk = data[(number - 1) * PART : number * PART]
    response = httpx.put(url, content=chunk, timeout=30)
    assert response.status_code == 200, response.text


def test_parts_go_straight_to_the_bucket_then_finish_scores_it(
    client, people, toybench, make_bundle, bucket
):
    s3, name = bucket
    data = make_bundle(audio_bytes=2 * PART + 12345).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    assert state["method"] == "s3" and state["part_bytes"] == PART and state["part_count"] == 3
    upload = Upload.objects.get(pk=state["id"])
    assert upload.s3_key == f"uploads/{upload.pk}.zip" and upload.s3_upload_id
    assert [u["Key"] for u in open_multiparts(s3, name)] == [upload.s3_key]

    urls = part_urls(client, state, [1, 2, 3])
    assert all(url.startswith(s3.meta.endpoint_url) for url in urls.values())
    send_part(urls[3], data, 3)  # parts may arrive in any order
    send_part(urls[1], data, 1)
    resumed = client.get(state["urls"]["state"]).json()
    assert resumed["parts_done"] == [1, 3]
    assert resumed["received"] == len(data) - PART
    early = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert early.status_code == 409 and "1 of 3 parts have not arrived" in early.json()["error"]
    send_part(urls[2], data, 2)

    finish = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert finish.status_code == 200, finish.content
    submission = Submission.objects.get(pk=finish.json()["submission"])
    assert submission.status == "scored", submission.error
    assert submission.team == people.alpha and submission.bundle_size == len(data)
    stored = s3.get_object(Bucket=name, Key=submission.bundle.name)["Body"].read()
    assert stored == data
    # The assembled upload object is gone once the submission holds its own copy.
    assert upload.s3_key not in keys(s3, name)
    assert open_multiparts(s3, name) == []
    upload.refresh_from_db()
    assert upload.status == "accepted" and upload.s3_upload_id == ""


def test_a_part_of_the_wrong_size_is_sent_again(client, people, toybench, make_bundle, bucket):
    data = make_bundle(audio_bytes=PART + 100).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    urls = part_urls(client, state, [1, 2])
    httpx.put(urls[1], content=data[: PART - 10], timeout=30)  # cut short
    send_part(urls[2], data, 2)
    assert client.get(state["urls"]["state"]).json()["parts_done"] == [2]
    refused = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert refused.status_code == 409 and "part 1 holds" in refused.json()["error"]
    send_part(urls[1], data, 1)
    assert client.post(state["urls"]["finish"]).status_code == 302


def test_rejected_bundle_leaves_nothing_in_the_bucket(
    client, people, toybench, make_bundle, bucket
):
    s3, name = bucket
    data = make_bundle(broken=True).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    assert state["part_count"] == 1
    send_part(part_urls(client, state, [1])[1], data, 1)
    response = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert response.status_code == 422
    assert "line 1: not JSON" in response.json()["report_html"]
    assert Submission.objects.filter(is_reported=False).count() == 0
    assert keys(s3, name) == set() and open_multiparts(s3, name) == []
    assert Upload.objects.get(pk=state["id"]).status == "rejected"


def test_cancel_aborts_the_multipart_upload(client, people, toybench, make_bundle, bucket):
    s3, name = bucket
    data = make_bundle(audio_bytes=PART + 100).read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    send_part(part_urls(client, state, [1])[1], data, 1)
    assert len(open_multiparts(s3, name)) == 1
    assert client.post(state["urls"]["cancel"]).json()["status"] == "cancelled"
    assert open_multiparts(s3, name) == [] and keys(s3, name) == set()
    gone = client.post(state["urls"]["parts"], {"parts": [2]}, content_type="application/json")
    assert gone.status_code == 409


def test_part_numbers_are_checked(client, people, toybench, make_bundle, bucket):
    data = make_bundle().read_bytes()
    client.force_login(people.alice)
    state = start(client, data)
    for body in ({"parts": [0]}, {"parts": [2]}, {"parts": []}):
        response = client.post(state["urls"]["parts"], body, content_type="application/json")
        assert response.status_code == 400, body
    assert (
        client.post(state["urls"]["parts"], "nope", content_type="application/json").status_code
        == 400
    )
    # Chunks are for the filesystem default only.
    chunk = client.put(
        f"{state['urls']['chunk']}?offset=0",
        data=data[:10],
        content_type="application/octet-stream",
    )
    assert chunk.status_code == 400


def test_part_size_grows_for_very_large_bundles():
    # 10,000 parts of 16 MiB hold 156.25 GiB; beyond that parts grow in whole MiB.
    assert storage.s3_part_bytes(10 * 1024**3) == 16 * 1024 * 1024
    size = 200 * 1024**3
    part = storage.s3_part_bytes(size)
    assert part % (1024 * 1024) == 0 and part * 10_000 >= size > (part - 1024 * 1024) * 10_000
    assert storage.s3_part_size(11, 5, 3) == 1 and storage.s3_part_size(10, 5, 2) == 5


def test_the_sweep_aborts_stale_multipart_uploads_under_every_prefix_but_open_ones(
    client, people, toybench, make_bundle, bucket, settings
):
    """What a store cut mid-put or mid-copy leaves (under bundles/, submissions/...) is aborted
    once older than FLOORBOARD_MULTIPART_ABORT_HOURS; a browser upload still open is kept."""
    from leaderboard.uploads.tasks import sweep_incomplete_multipart_uploads

    s3, name = bucket
    left = [
        s3.create_multipart_upload(Bucket=name, Key=key)["UploadId"]
        for key in ("bundles/7-abc.zip", "submissions/7/t/response.wav", "healthz/x.txt")
    ]
    s3.upload_part(Bucket=name, Key="bundles/7-abc.zip", UploadId=left[0], PartNumber=1, Body=b"x")
    client.force_login(people.alice)
    state = start(client, make_bundle().read_bytes())
    open_key = Upload.objects.get(pk=state["id"]).s3_key
    # Younger than the age, nothing is touched (the S3 server dates every upload 2010-11-10,
    # so an age of a century is what makes them young).
    settings.MULTIPART_ABORT_HOURS = 100 * 365 * 24
    assert sweep_incomplete_multipart_uploads() == 0
    assert len(open_multiparts(s3, name)) == 4
    # Past it: all but the open upload's are aborted.
    settings.MULTIPART_ABORT_HOURS = 1
    assert sweep_incomplete_multipart_uploads() == 3
    assert [u["Key"] for u in open_multiparts(s3, name)] == [open_key]
    assert keys(s3, name) == set()
