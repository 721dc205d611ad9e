"""The submit page in real headless Chromium against a live server: a bundle goes up in chunks
(one of them lost on the way and sent again), the progress bar reaches 100%, and the browser
lands on the scored submission. Screenshots are kept in test-artifacts/."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

from evaluation.models import Submission
from leaderboard.uploads import tasks
from leaderboard.uploads.models import Upload
from tests.conftest import REPO
from tests.leaderboard.uploads.conftest import S3_PART, put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts"
CHUNK = 256 * 1024


def logged_in_page(browser, live_server, user):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies(
        [
            {
                "name": django_settings.SESSION_COOKIE_NAME,
                "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return context.new_page()


def fill_form(page, bundle: Path, system: str) -> None:
    page.select_option("#id_team", "alpha")
    page.fill("#id_system_name", system)
    page.select_option("#id_system_type", "small")
    page.select_option("#id_judge", "offline")
    page.check("#id_allow_partial")
    page.set_input_files("#bundle-file", str(bundle))


def test_upload_in_the_browser_with_progress_and_scoring(
    browser, live_server, people, toybench, make_bundle, settings, eager
):
    settings.UPLOAD_CHUNK_BYTES = CHUNK
    bundle = make_bundle("browser", audio_bytes=6 * CHUNK + 5000)
    size = bundle.stat().st_size
    chunks = -(-size // CHUNK)
    assert chunks == 7
    ARTIFACTS.mkdir(exist_ok=True)
    page = logged_in_page(browser, live_server, people.alice)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # The first attempt at the third chunk is lost on the way; the page must send it again.
    sent: list[str] = []

    def lose_once(route):
        offset = re.search(r"offset=(\d+)", route.request.url).group(1)
        sent.append(offset)
        if offset == str(2 * CHUNK) and sent.count(offset) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/chunk/?offset=*", lose_once)
    # When the page asks the server to finish, every byte is up: record the bar at that moment.
    at_finish: dict = {}

    def on_finish(route):
        at_finish["value"] = page.evaluate("document.getElementById('upload-progress').value")
        at_finish["text"] = page.inner_text("#upload-progress-text")
        page.screenshot(path=str(ARTIFACTS / "upload-progress-100.png"))
        route.continue_()

    page.route("**/finish/", on_finish)

    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, bundle, "Browser Agent")
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=60_000)

    assert errors == []
    assert at_finish["value"] == 100
    assert at_finish["text"].startswith("100% (")
    # Every chunk once, the lost one twice.
    assert sent == [str(i * CHUNK) for i in range(3)] + [str(i * CHUNK) for i in range(2, chunks)]
    submission = Submission.objects.get(is_reported=False)
    assert page.url == f"{live_server.url}/submissions/{submission.pk}/"
    assert "Status: scored" in page.inner_text("p.status")
    assert submission.bundle_sha256 == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert submission.team == people.alpha and submission.system.name == "Browser Agent"
    page.screenshot(path=str(ARTIFACTS / "upload-scored-submission.png"), full_page=True)
    assert Upload.objects.get().status == "accepted"


def test_rejected_bundle_in_the_browser_lists_its_problems(
    browser, live_server, people, toybench, make_bundle, settings, monkeypatch
):
    """The finish goes to a worker: the page says so and polls the upload's state until the
    worker (here the test, once the page waits) has rejected the bundle."""
    queued: list[tuple] = []
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: queued.append(args))
    settings.UPLOAD_CHUNK_BYTES = CHUNK
    bundle = make_bundle("broken", broken=True)
    ARTIFACTS.mkdir(exist_ok=True)
    page = logged_in_page(browser, live_server, people.alice)
    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, bundle, "Broken Agent")
    page.click("#upload-button")
    page.wait_for_function(
        "document.getElementById('upload-message').innerText.includes('A worker is checking')",
        timeout=30_000,
    )
    assert Upload.objects.get().status == "finishing" and len(queued) == 1
    page.screenshot(path=str(ARTIFACTS / "upload-finishing.png"), full_page=True)
    assert tasks.finish_upload.apply(args=queued[0]).get() == "rejected"
    page.wait_for_selector("#validation-report table", timeout=30_000)
    report = page.inner_text("#validation-report")
    assert "Bundle rejected" in report and "line 1: not JSON" in report
    assert "(whole bundle)" in report and "answers.jsonl" in report
    assert "rejected and nothing was queued" in page.inner_text("#upload-message")
    page.screenshot(path=str(ARTIFACTS / "upload-rejected-report.png"), full_page=True)
    assert not Submission.objects.filter(is_reported=False).exists()
    upload = Upload.objects.get()
    assert upload.status == "rejected"
    # The report stays on the upload's status page.
    page.click("#upload-page-link")
    page.wait_for_url(f"{live_server.url}/uploads/{upload.pk}/")
    assert "Status: rejected" in page.inner_text("p.status")
    assert "line 1: not JSON" in page.inner_text("#validation-report")
    page.screenshot(path=str(ARTIFACTS / "upload-rejected-status-page.png"), full_page=True)


def test_a_refused_upload_says_why_in_one_sentence(
    browser, live_server, people, toybench, make_bundle
):
    """The server's reason ends with its own full stop; the page's message adds none."""
    page = logged_in_page(browser, live_server, people.alice)
    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, make_bundle("good"), "")
    page.evaluate("document.getElementById('id_system_name').removeAttribute('required')")
    page.click("#upload-button")
    page.wait_for_function(
        "document.getElementById('upload-message').innerText.includes('Upload stopped')",
        timeout=30_000,
    )
    message = page.inner_text("#upload-message")
    assert "This field is required." in message and ".." not in message, message


def test_an_interrupted_upload_resumes_where_the_server_stopped(
    browser, live_server, people, toybench, make_bundle, settings, eager
):
    settings.UPLOAD_CHUNK_BYTES = CHUNK
    bundle = make_bundle("resume", audio_bytes=4 * CHUNK)
    page = logged_in_page(browser, live_server, people.alice)
    sent: list[int] = []
    held: list = []

    def hold_the_third_chunk(route):
        offset = int(re.search(r"offset=(\d+)", route.request.url).group(1))
        sent.append(offset)
        if offset == 2 * CHUNK and not held:
            held.append(route)  # never answered: the page is reloaded meanwhile
            return
        route.continue_()

    page.route("**/chunk/?offset=*", hold_the_third_chunk)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, bundle, "Resuming Agent")
    page.click("#upload-button")
    for _ in range(400):
        if held:
            break
        page.wait_for_timeout(50)
    assert held and Upload.objects.get().received == 2 * CHUNK
    page.reload()  # leaving mid-upload asks first
    assert dialogs == ["beforeunload"]

    sent.clear()
    fill_form(page, bundle, "Resuming Agent")
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=60_000)
    # The same file again: the page asked the server and went on from byte 2 * CHUNK.
    assert sent[0] == 2 * CHUNK
    assert Upload.objects.count() == 1
    submission = Submission.objects.get(is_reported=False)
    assert submission.bundle_sha256 == hashlib.sha256(bundle.read_bytes()).hexdigest()


def test_upload_straight_to_s3_in_the_browser(
    browser, live_server, people, toybench, make_bundle, bucket
):
    s3, name = bucket
    # What a production bucket needs for browser uploads: PUT from the site's origin.
    s3.put_bucket_cors(
        Bucket=name,
        CORSConfiguration={
            "CORSRules": [
                {
                    "AllowedOrigins": [live_server.url],
                    "AllowedMethods": ["PUT"],
                    "AllowedHeaders": ["*"],
                    "MaxAgeSeconds": 600,
                }
            ]
        },
    )
    bundle = make_bundle("s3", audio_bytes=2 * S3_PART + 1000)
    page = logged_in_page(browser, live_server, people.alice)
    puts: list[str] = []
    page.on(
        "request",
        lambda request: puts.append(request.url) if request.method == "PUT" else None,
    )
    page.goto(f"{live_server.url}/benchmarks/toy-bench/submit/")
    fill_form(page, bundle, "Direct Agent")
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=60_000)

    endpoint = s3.meta.endpoint_url
    assert all(url.startswith(f"{endpoint}/{name}/uploads/") for url in puts), puts
    assert sorted(re.search(r"partNumber=(\d+)", url).group(1) for url in puts) == ["1", "2", "3"]
    submission = Submission.objects.get(is_reported=False)
    assert "Status: scored" in page.inner_text("p.status")
    stored = s3.get_object(Bucket=name, Key=submission.bundle.name)["Body"].read()
    assert stored == bundle.read_bytes()
    upload = Upload.objects.get()
    assert upload.method == "s3" and upload.status == "accepted"
    page.screenshot(path=str(ARTIFACTS / "upload-s3-scored-submission.png"))


def test_the_status_page_follows_a_finish_until_the_submission_opens(
    browser, live_server, people, toybench, make_bundle, eager, monkeypatch
):
    queued: list[tuple] = []
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: queued.append(args))
    data = make_bundle("polled").read_bytes()
    client = Client()
    client.force_login(people.alice)
    state = client.post(
        "/benchmarks/toy-bench/submit/start/", start_fields(size=len(data), filename="polled.zip")
    ).json()
    assert put_chunk(client, state, data, 0).status_code == 200
    assert client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json").status_code == 202
    page = logged_in_page(browser, live_server, people.alice)
    page.goto(f"{live_server.url}{state['urls']['page']}")
    assert "A worker is checking the bundle" in page.inner_text("#upload-finishing")
    assert tasks.finish_upload.apply(args=queued[0]).get() == "accepted"
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=30_000)
    assert Submission.objects.get(is_reported=False).pk == int(page.url.rstrip("/").split("/")[-1])
