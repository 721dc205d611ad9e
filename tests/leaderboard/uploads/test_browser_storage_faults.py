"""A browser upload straight to an http:// object store, under the production content policy,
with the store cut mid-upload by a proxy the test controls: the page keeps the same upload
while storage is away (it does not start over from 0%), and resumes it, sending only the parts
the store does not hold, once storage answers."""

from __future__ import annotations

import re

import pytest

from evaluation.models import Submission
from leaderboard.uploads import storage
from leaderboard.uploads.models import Upload
from tests.config.test_storage_settings import directive, settings_of
from tests.leaderboard.uploads.conftest import S3_PART
from tests.leaderboard.uploads.test_browser import fill_form, logged_in_page

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def production_policy_bucket(proxied_bucket, live_server, settings, monkeypatch, eager):
    """The bucket behind the proxy, with CORS for the site's origin, and the content policy
    production builds for that endpoint (the real settings, in a subprocess)."""
    client, bucket, proxy = proxied_bucket
    client.put_bucket_cors(
        Bucket=bucket,
        CORSConfiguration={
            "CORSRules": [
                {
                    "AllowedOrigins": [live_server.url],
                    "AllowedMethods": ["PUT", "GET"],
                    "AllowedHeaders": ["*"],
                    "ExposeHeaders": ["ETag"],
                    "MaxAgeSeconds": 600,
                }
            ]
        },
    )
    policy = settings_of(
        AWS_STORAGE_BUCKET_NAME=bucket,
        AWS_S3_ENDPOINT_URL=proxy.url,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
    )["csp"]
    assert proxy.url in directive(policy, "connect-src") and proxy.url.startswith("http://")
    settings.CONTENT_SECURITY_POLICY = policy
    monkeypatch.setattr(storage, "S3_PART_BYTES", S3_PART)
    return client, bucket, proxy


def test_a_cut_store_keeps_the_upload_and_it_resumes_when_storage_returns(
    browser, live_server, people, toybench, make_bundle, production_policy_bucket
):
    client, bucket, proxy = production_policy_bucket
    bundle = make_bundle("cut", audio_bytes=2 * S3_PART + 1000)
    page = logged_in_page(browser, live_server, people.alice)
    blocked: list[str] = []
    page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    puts: list[str] = []
    finished: list[str] = []
    page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)

    def first_part_landed(request):
        if request.method == "PUT" and not finished:
            finished.append(request.url)
            proxy.cut()  # the store goes away once one part is there

    page.on("requestfinished", first_part_landed)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, bundle, "Cut Agent")
    page.click("#upload-button")
    for _ in range(600):
        if finished:
            break
        page.wait_for_timeout(50)
    assert finished and finished[0].startswith(f"{proxy.url}/{bucket}/uploads/")
    upload = Upload.objects.get()
    page.reload()  # the person tries again while the store is still cut

    fill_form(page, bundle, "Cut Agent")
    page.click("#upload-button")
    for _ in range(400):  # the policy allows no eval: the page is read from here
        if "Upload stopped" in page.inner_text("#upload-message"):
            break
        page.wait_for_timeout(50)
    assert "Storage unavailable" in page.inner_text("#upload-message")
    assert Upload.objects.count() == 1  # the same upload, kept to resume
    assert Upload.objects.get().status == Upload.Status.UPLOADING

    # The parts the store holds (the first, and any other that landed before the cut took):
    # read from the store itself, beside the proxy.
    upload = Upload.objects.get()
    held = {
        str(part["PartNumber"])
        for part in client.list_parts(
            Bucket=bucket, Key=upload.s3_key, UploadId=upload.s3_upload_id
        ).get("Parts", [])
    }
    proxy.resume()
    puts.clear()
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=60_000)
    assert Upload.objects.count() == 1 and Upload.objects.get().pk == upload.pk
    sent = sorted({re.search(r"partNumber=(\d+)", url).group(1) for url in puts})
    landed = re.search(r"partNumber=(\d+)", finished[0]).group(1)
    assert landed in held
    # Only the parts the store did not hold.
    assert sent == sorted({"1", "2", "3"} - held) and sent, (sent, held)
    submission = Submission.objects.get(is_reported=False)
    stored = client.get_object(Bucket=bucket, Key=submission.bundle.name)["Body"].read()
    assert stored == bundle.read_bytes()
    assert not blocked, blocked  # the policy let every part through to the http:// store


def test_audio_plays_from_an_http_store_under_the_production_policy(
    browser, live_server, production_policy_bucket, settings, tmp_path
):
    from evaluation.models import TaskResult
    from tests.conftest import demo_runs_scored, every_plugin_board

    client, bucket, proxy = production_policy_bucket
    benchmark, plugin = every_plugin_board("mp-bench", settings, tmp_path, name="play")
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    row = next(
        row
        for row in TaskResult.objects.filter(submission=submission).select_related("task")
        if "response.wav" in (row.files or {})
    )
    page = browser.new_context().new_page()
    blocked: list[str] = []
    page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    media: list[str] = []
    page.on(
        "requestfinished", lambda r: media.append(r.url) if r.url.startswith(proxy.url) else None
    )
    page.goto(f"{live_server.url}/submissions/{submission.pk}/tasks/{row.task.task_id}/")
    player = '[data-floorboard-player][data-name="response.wav"]'
    page.click(f"{player} .fb-play")
    played = 0.0
    for _ in range(200):  # the policy allows no eval in the page: read it from here
        played = page.evaluate(f"document.querySelector('{player} audio').currentTime")
        if played > 0.2:
            break
        page.wait_for_timeout(50)
    assert played > 0.2
    assert any(f"/{bucket}/submissions/{submission.pk}/" in url for url in media), media
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in next(u for u in media if "/submissions/" in u)
    assert not blocked, blocked
