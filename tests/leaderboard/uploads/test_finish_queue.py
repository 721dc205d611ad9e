"""Finishing a browser upload does not wait behind judging. Through a real broker (the embedded
filesystem broker, in a folder of the test's own) and a real Celery worker (in a thread of this
process): with a judging backlog that no worker takes (a judge outage), the finish request's
message goes to the upload queue, and a worker consuming that queue alone accepts the upload
while every judging message is still waiting."""

from __future__ import annotations

import os
import threading

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings

from config.celery import app
from evaluation import tasks as evaluation_tasks
from evaluation.models import Submission
from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)

JUDGING_BACKLOG = 3


@pytest.fixture
def broker(tmp_path, monkeypatch):
    """A filesystem broker of this test's own; messages are sent, not run inline."""
    folders = {name: tmp_path / name for name in ("queue", "processed", "control", "quarantine")}
    for folder in folders.values():
        folder.mkdir()
    options = {
        **app.conf.broker_transport_options,
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "quarantine_folder": str(folders["quarantine"]),
    }
    monkeypatch.setattr(app.conf, "broker_url", "filesystem://localhost/")
    monkeypatch.setattr(app.conf, "broker_transport_options", options)
    monkeypatch.setattr(app.conf, "task_always_eager", False)
    # Connections made before this test would point at the shared broker.
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    # The worker's liveness beats write from a thread of their own; not under test here.
    monkeypatch.setattr(evaluation_tasks, "WorkerBeating", _NoBeats)
    yield folders["queue"]
    if app._pool is not None:
        app._pool.force_close_all()


class _NoBeats:
    def __init__(self, **kwargs):
        pass

    def start(self):
        return self

    def stop(self):
        pass


def waiting(folder) -> dict[str, int]:
    """Messages waiting in the broker, per queue (the file name ends with the queue's)."""
    counts: dict[str, int] = {}
    for name in os.listdir(folder):
        queue = name.partition(".")[2].removesuffix(".msg")
        counts[queue] = counts.get(queue, 0) + 1
    return counts


def test_a_finish_runs_while_judging_waits(client, people, toybench, make_bundle, broker):
    # The settings' defaults (README: FLOORBOARD_QUEUE, FLOORBOARD_UPLOAD_QUEUE).
    judging, uploads = "floorboard", "floorboard-uploads"
    assert judging == settings.CELERY_TASK_DEFAULT_QUEUE
    # A judge outage: judging messages queued, and no worker on their queue.
    for index in range(JUDGING_BACKLOG):
        evaluation_tasks.judge_work.delay(10_000 + index, 1)
    assert waiting(broker) == {judging: JUDGING_BACKLOG}

    data = make_bundle().read_bytes()
    client.force_login(people.alice)
    state = client.post("/benchmarks/toy-bench/submit/start/", start_fields(size=len(data))).json()
    assert put_chunk(client, state, data, 0).status_code == 200
    response = client.post(state["urls"]["finish"], HTTP_ACCEPT="application/json")
    assert response.status_code == 202, response.content
    # The finish went to its own queue, not behind the judging.
    assert waiting(broker) == {judging: JUDGING_BACKLOG, uploads: 1}

    finished = threading.Event()

    def on_postrun(sender=None, **kwargs):
        if sender is not None and sender.name == "leaderboard.uploads.tasks.finish_upload":
            finished.set()

    task_postrun.connect(on_postrun, weak=False)
    try:
        with start_worker(app, queues=[uploads], perform_ping_check=False, shutdown_timeout=30):
            assert finished.wait(60), "no worker on the upload queue finished the upload"
    finally:
        task_postrun.disconnect(on_postrun)

    upload = Upload.objects.get(pk=state["id"])
    assert upload.status == "accepted", (upload.status, upload.error)
    submission = Submission.objects.get(pk=upload.submission_id)
    assert submission.status == Submission.Status.QUEUED
    # Every judging message still waits, with the new submission's first stage behind them.
    assert waiting(broker) == {judging: JUDGING_BACKLOG + 1}
