"""/healthz: 200 with every check ok; 503 naming what failed, with no detail that could hold a
host name or a credential; never cached."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app
from evaluation.models import WorkerBeat

pytestmark = pytest.mark.django_db

SECRET_HOST = "broker-secret-host.invalid"


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
