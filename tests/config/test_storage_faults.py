"""The site on an S3 server speaking HTTP behind a proxy the test controls: with the store hung
(connections accepted, nothing answered), /healthz and every page that does not need storage
answer within a second, on the shipped timeouts; links are SigV4 for the region in settings;
the content policy lets browsers reach the store's public address, http:// included."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from django.test import Client

from evaluation.benchmarks import registry
from evaluation.models import Submission
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

SLUGS = [*sorted(registry()), "toy-bench"]


@pytest.fixture(autouse=True)
def _no_probe_outcome_yet():
    """Each test starts before any storage probe (the outcome lives in the shared cache)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def timed_get(client: Client, path: str):
    started = time.monotonic()
    response = client.get(path)
    return response, time.monotonic() - started


def healthy(client: Client, *, within: float = 10.0) -> bool:
    """Whether /healthz reports the store ok within ``within`` seconds (a probe that answers
    after the request's wait records its outcome for the next one)."""
    from django.core.cache import cache

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        response, _ = timed_get(client, "/healthz")
        if response.json()["checks"]["storage"] == "ok":
            return True
        time.sleep(0.2)
        cache.delete("floorboard:health:storage:claim")
    return False


@pytest.mark.parametrize("slug", SLUGS)
def test_a_hung_store_keeps_healthz_and_pages_without_storage_within_a_second(
    slug, proxied_bucket, settings, tmp_path
):
    """Shipped timeouts throughout (none lowered): the health probe's and the store's."""
    _, _, proxy = proxied_bucket
    settings.DEBUG = False
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="hung")
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    assert submission.status == Submission.Status.SCORED, submission.error
    client = Client()
    # Healthy first: the probe writes, reads back and deletes through the proxy.
    assert healthy(client)

    pages = [
        "/healthz",
        "/",
        f"/benchmarks/{benchmark.slug}/",
        f"/benchmarks/{benchmark.slug}/about/",
        f"/benchmarks/{benchmark.slug}/leaderboard.csv",
        f"/benchmarks/{benchmark.slug}/charts.json",
        f"/submissions/{submission.pk}/",
        f"/systems/{submission.system_id}/",
        "/accounts/login/",
        "/healthz",
    ]
    for path in pages:
        client.get(path)  # a warm process: templates and modules loaded, as in service
    proxy.pause()
    from django.core.cache import cache

    cache.delete("floorboard:health:storage:claim")  # a new interval: probe again
    for path in pages:
        response, seconds = timed_get(client, path)
        if path != "/healthz" and seconds >= 1.0:
            # A busy machine, or storage? A page that waits on storage waits every time.
            response, seconds = timed_get(client, path)
        assert seconds < 1.0, f"{path} took {seconds:.2f} s with the store hung"
        if path == "/healthz":
            assert response.status_code == 503
            assert response.json()["failing"] == ["storage"]
        else:
            assert response.status_code == 200, (path, response.status_code)


def test_healthz_recovers_once_the_store_answers(proxied_bucket, settings):
    _, _, proxy = proxied_bucket
    settings.HEALTH_STORAGE_PROBE_SECONDS = 0.2
    client = Client()
    proxy.pause()
    response, seconds = timed_get(client, "/healthz")
    assert seconds < 1.0 and response.status_code == 503
    proxy.resume()
    assert healthy(client)


def test_a_cut_store_answers_healthz_at_once(proxied_bucket):
    _, _, proxy = proxied_bucket
    proxy.cut()
    response, seconds = timed_get(Client(), "/healthz")
    assert seconds < 1.0 and response.json()["failing"] == ["storage"]


def test_every_storage_call_is_bounded_by_the_shipped_timeouts(proxied_bucket, settings):
    """A call to a hung store gives up after attempts x (connect + read) seconds and back-off,
    not gunicorn's two minutes; the shipped values are what is measured."""
    from botocore.exceptions import ReadTimeoutError
    from django.core.files.storage import default_storage

    _, _, proxy = proxied_bucket
    proxy.pause()
    started = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        default_storage.size("bundles/anything.zip")
    seconds = time.monotonic() - started
    attempts = settings.STORAGE_MAX_ATTEMPTS
    # Each attempt waits the read timeout; botocore's standard back-off is at most 2^n s.
    assert attempts * settings.STORAGE_READ_TIMEOUT_SECONDS <= seconds
    assert seconds < attempts * settings.STORAGE_READ_TIMEOUT_SECONDS + 2 ** (attempts - 1) + 1
    assert seconds <= 20, "the shipped bound on one call is too long for a web request"


# --- Signatures and the content policy -------------------------------------------------------


def test_a_presigned_audio_url_is_sigv4_for_the_region_in_settings(proxied_bucket, settings):
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from leaderboard import audio

    name = default_storage.save("submissions/1/task/response.wav", ContentFile(b"RIFF" + b"0" * 60))
    response = Client().get(audio.audio_url(key=name, user=None))
    assert response.status_code == 302
    location = response["Location"]
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in location
    assert "%2Fus-east-1%2Fs3%2Faws4_request" in location  # the credential scope's region
    assert "Signature=" in location and "AWSAccessKeyId=" not in location
    fetched = httpx.get(location, headers={"Range": "bytes=0-3"})
    assert fetched.status_code == 206 and fetched.content == b"RIFF"


# --- Pages that need storage ------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["cut", "pause"])
def test_a_task_page_without_storage_says_so_with_a_503_page(
    fault, proxied_bucket, settings, tmp_path
):
    from evaluation.models import TaskResult

    _, _, proxy = proxied_bucket
    settings.DEBUG = False
    # What is under test is the answer, not how long the shipped timeouts take to give up.
    settings.STORAGE_READ_TIMEOUT_SECONDS = 0.5
    settings.STORAGES = {**settings.STORAGES}  # made again with the lowered timeout
    benchmark, plugin = every_plugin_board("mp-bench", settings, tmp_path, name="task")
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    task_id = (
        TaskResult.objects.filter(submission=submission, files__isnull=False)
        .exclude(files={})
        .values_list("task__task_id", flat=True)
        .first()
    )
    path = f"/submissions/{submission.pk}/tasks/{task_id}/"
    client = Client()
    assert client.get(path).status_code == 200
    from django.core.cache import cache

    cache.clear()  # nothing of the page kept from the healthy read
    getattr(proxy, fault)()
    response = client.get(path)
    assert response.status_code == 503
    assert b"Storage unavailable" in response.content
    assert response["Retry-After"] == "30"
    assert proxy.url.encode() not in response.content


def _unsigned(page: bytes) -> str:
    """A page without what changes from one request to the next: signed addresses, tokens."""
    text = page.decode()
    text = re.sub(r'(src|href|data-peaks|data-renew)="[^"]*(X-Amz-|/audio/)[^"]*"', r'\1=""', text)
    return re.sub(r'(csrfmiddlewaretoken" value|csrf-token" content)="[^"]*"', "", text)


@pytest.mark.parametrize("slug", SLUGS)
def test_a_task_page_made_of_its_rows_shows_without_storage(
    slug, proxied_bucket, settings, tmp_path
):
    """A task page needs storage only to read a file kept inside the upload (a transcript);
    otherwise it is made of the task's rows and shows, the same as with storage up, while the
    store is cut (its players then say that the audio could not be loaded)."""
    from django.core.cache import cache

    from evaluation.models import TaskResult

    _, _, proxy = proxied_bucket
    settings.DEBUG = False
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="rows")
    (submission,) = demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    rows = TaskResult.objects.filter(submission=submission).select_related("task")
    row = max(rows, key=lambda r: (len(r.files), r.task.task_id))  # one with files, if any
    in_upload = any("entry" in info for info in row.files.values())
    path = f"/submissions/{submission.pk}/tasks/{row.task.task_id}/"
    client = Client()
    healthy_page = client.get(path)
    assert healthy_page.status_code == 200
    cache.clear()  # nothing of the page kept from the healthy read
    proxy.cut()
    response = client.get(path)
    if in_upload:
        assert response.status_code == 503 and b"Storage unavailable" in response.content
    else:
        assert response.status_code == 200, response.content[:300]
        assert _unsigned(response.content) == _unsigned(healthy_page.content)
