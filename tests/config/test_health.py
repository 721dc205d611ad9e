"""/healthz: 200 with every check ok; 503 naming what failed, with no detail that could hold a
host name or a credential; never cached."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.files.storage import FileSystemStorage
from django.utils import timezone

from config import health
from config.celery import app
from evaluation.models import WorkerBeat

pytestmark = pytest.mark.django_db

SECRET_HOST = "broker-secret-host.invalid"


@pytest.fixture(autouse=True)
def _no_probe_outcome_yet():
    """Each test starts before any storage probe (the outcome lives in the shared cache)."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def storage_writes(monkeypatch):
    """Every object the default (filesystem) storage is asked to write, by name."""
    written: list[str] = []
    real_save = FileSystemStorage.save

    def save(self, name, content, max_length=None):
        written.append(name)
        return real_save(self, name, content, max_length=max_length)

    monkeypatch.setattr(FileSystemStorage, "save", save)
    return written


def get(client):
    return client.get("/healthz", HTTP_HOST="not-an-allowed-host.example")


def test_everything_reachable_answers_200(client, settings):
    response = get(client)
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "broker": "ok", "storage": "ok"},
        "failing": [],
        "workers": "none",
    }
    assert "no-cache" in response["Cache-Control"] and "no-store" in response["Cache-Control"]
    # The storage probe is written, read back and deleted.
    media = settings.STORAGES["default"]["OPTIONS"]["location"]
    from pathlib import Path

    assert not any(p.is_file() for p in Path(media).rglob("*"))


def test_behind_the_https_redirect_it_still_answers(client, settings):
    """The container's healthcheck speaks plain HTTP to 127.0.0.1."""
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["floorboard.example.org"]
    assert get(client).status_code == 200


def test_a_broken_broker_url_answers_503_naming_the_broker(client, monkeypatch):
    # Nothing listens on port 1; the URL carries a password that must not leak.
    monkeypatch.setattr(app.conf, "broker_url", f"redis://:hunter2@{SECRET_HOST}:1/0")
    monkeypatch.setattr(app.conf, "broker_connection_timeout", 1)
    response = get(client)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failing" and body["failing"] == ["broker"]
    assert body["checks"] == {"database": "ok", "broker": "failing", "storage": "ok"}
    assert (
        "hunter2" not in response.content.decode() and SECRET_HOST not in response.content.decode()
    )


def test_a_missing_filesystem_broker_folder_answers_503(client, monkeypatch, tmp_path):
    options = {
        **app.conf.broker_transport_options,
        "data_folder_in": str(tmp_path / "gone"),
        "data_folder_out": str(tmp_path / "gone"),
    }
    monkeypatch.setattr(app.conf, "broker_url", "filesystem://")
    monkeypatch.setattr(app.conf, "broker_transport_options", options)
    response = get(client)
    assert response.status_code == 503 and response.json()["failing"] == ["broker"]


def test_broken_storage_answers_503_naming_storage(client, settings, tmp_path):
    # The storage root is a file: nothing can be written under it.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(blocker / "media")},
        },
    }
    response = get(client)
    assert response.status_code == 503
    assert response.json()["failing"] == ["storage"]
    assert str(tmp_path) not in response.content.decode()


def test_only_reads(client):
    assert client.post("/healthz").status_code == 405


def test_the_worker_state_is_a_field_that_never_fails_the_check(client):
    """No worker, a silent one, a live one: the state is reported and the answer stays 200 (the
    web container's health check must not fail for want of a worker)."""
    assert get(client).status_code == 200 and get(client).json()["workers"] == "none"
    now = timezone.now()
    beat = WorkerBeat.objects.create(
        worker="celery@elsewhere:1",
        queue=app.conf.task_default_queue,
        started_at=now - timedelta(minutes=5),
        seen_at=now - timedelta(seconds=61),
    )
    response = get(client)
    assert response.status_code == 200 and response.json()["workers"] == "silent"
    WorkerBeat.objects.filter(pk=beat.pk).update(seen_at=now - timedelta(seconds=5))
    response = get(client)
    assert response.status_code == 200 and response.json()["workers"] == "running"
    # A worker on another queue is not this queue's worker.
    WorkerBeat.objects.filter(pk=beat.pk).update(queue="some-other-queue")
    assert get(client).json()["workers"] == "none"


# --- The storage probe: at most one write per interval ----------------------------------------


def test_many_requests_within_the_interval_write_one_probe(client, settings, storage_writes):
    settings.HEALTH_STORAGE_PROBE_SECONDS = 1.0
    answers = [get(client) for _ in range(10)]
    assert [a.status_code for a in answers] == [200] * 10
    assert {a.json()["checks"]["storage"] for a in answers} == {"ok"}
    assert len(storage_writes) == 1 and storage_writes[0].startswith("healthz/")
    # The next interval probes again, once.
    time.sleep(1.1)
    answers = [get(client) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5
    assert len(storage_writes) == 2


def test_a_failed_probe_is_reported_for_its_interval_without_writing_again(
    client, settings, tmp_path, storage_writes
):
    settings.HEALTH_STORAGE_PROBE_SECONDS = 60.0
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(blocker / "media")},
        },
    }
    answers = [get(client) for _ in range(5)]
    assert [a.status_code for a in answers] == [503] * 5
    assert {tuple(a.json()["failing"]) for a in answers} == {("storage",)}
    assert len(storage_writes) == 1  # the first request's attempt only


def test_concurrent_requests_share_one_probe(settings, storage_writes, monkeypatch):
    """Requests arriving together while the first probe is in flight wait for its outcome
    instead of writing their own."""
    settings.HEALTH_STORAGE_PROBE_SECONDS = 60.0
    settings.HEALTH_STORAGE_TIMEOUT_SECONDS = 5.0
    real_probe = health.storage_probe

    def slow_probe():
        time.sleep(0.3)
        real_probe()

    monkeypatch.setattr(health, "storage_probe", slow_probe)
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def check():
        start.wait()
        try:
            health.storage_check()
            outcomes.append("ok")
        except Exception as exc:  # recorded: the assertion below names it
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=check) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert outcomes == ["ok"] * 8
    assert len(storage_writes) == 1


def test_a_probe_that_never_answers_costs_a_request_the_timeout_only(client, settings, monkeypatch):
    """The store hangs (the probe blocks): the request answers 503 after the shipped wait, the
    next ones of the interval at once, and the probe's late outcome is what they report."""
    release = threading.Event()

    def hung_probe():
        release.wait(30)

    monkeypatch.setattr(health, "storage_probe", hung_probe)
    started = time.monotonic()
    first = get(client)
    waited = time.monotonic() - started
    assert first.status_code == 503 and first.json()["failing"] == ["storage"]
    assert settings.HEALTH_STORAGE_TIMEOUT_SECONDS <= waited < 1.0
    started = time.monotonic()
    assert get(client).status_code == 503
    assert time.monotonic() - started < 0.2
    release.set()  # the store answers after all: the probe records it
    deadline = time.monotonic() + 5
    while get(client).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
