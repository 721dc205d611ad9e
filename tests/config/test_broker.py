"""The embedded default's broker (config/broker.py): a consumer never reads a message that is not
whole, a file that does not decode is quarantined rather than raised, and every message written
whole is delivered exactly as kombu's own transport delivers it. The worker test drops broken
files into the queue folder of a real worker process on the shipped settings."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection, Exchange, Producer, Queue
from kombu.transport import filesystem

from config.broker import Transport
from tests.conftest import REPO, embedded_env


def options(root: Path) -> dict:
    for folder in ("queue", "processed", "control", "quarantine"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "quarantine_folder": str(root / "quarantine"),
        "store_processed": False,
        "polling_interval": 0.01,
    }


def connect(root: Path, transport=Transport) -> Connection:
    return Connection(
        "filesystem://localhost/", transport=transport, transport_options=options(root)
    )


def message_name(queue: str, order: int = 0) -> str:
    """A name as kombu gives a queued message: milliseconds, a uuid, the queue, .msg"""
    return f"{order}_{uuid.uuid4()}.{queue}.msg"


def test_the_project_transport_serves_filesystem_urls():
    from config.celery import app

    with app.connection_for_write() as connection:
        assert connection.transport_cls == "filesystem"
        assert isinstance(connection.transport, Transport)


def test_a_message_reads_back_exactly_as_kombus_own_transport_writes_it(tmp_path):
    """Ours and kombu's write the same bytes, and each reads what the other wrote: messages
    already queued when a site upgrades are delivered as before."""
    body = {"task": "x", "args": [1, "é", None], "nested": {"a": [0.5, True]}}
    queue = Queue("q", Exchange("q"), "q")
    for writer, reader in ((Transport, filesystem.Transport), (filesystem.Transport, Transport)):
        root = tmp_path / writer.__module__
        with connect(root, writer) as producing, connect(root, reader) as consuming:
            Producer(producing.default_channel).publish(body, routing_key="q", declare=[queue])
            [written] = os.listdir(root / "queue")
            assert written.endswith(".q.msg")
            message = queue(consuming.default_channel).get(no_ack=True)
            assert message.payload == body
            assert os.listdir(root / "queue") == [] and os.listdir(root / "processed") == []


def test_an_unfinished_message_is_not_taken(tmp_path):
    """A message being written sits under a name no consumer takes until it is renamed whole."""
    with connect(tmp_path) as connection:
        channel = connection.default_channel
        name = message_name("q")
        (tmp_path / "queue" / (name + ".tmp")).write_text('{"half": ')
        with pytest.raises(Empty):
            channel._get("q")
        assert (tmp_path / "queue" / (name + ".tmp")).exists()


@pytest.mark.parametrize("content", [b"", b'{"body": "eyJ0YXNrIjog', b"\xff\xfe", b"[1, 2]"])
def test_a_message_that_does_not_decode_is_quarantined_and_the_next_is_read(
    tmp_path, content, caplog
):
    with connect(tmp_path) as connection:
        channel = connection.default_channel
        # Names sort as text, and a real one starts with a nonzero digit: "0_" comes first
        # whatever the machine's uptime ("1_" would sort after "12…" but before "2…").
        broken = message_name("q", order=0)
        (tmp_path / "queue" / broken).write_bytes(content)
        channel._put("q", {"whole": True})
        with caplog.at_level("WARNING", logger="config.broker"):
            assert channel._get("q") == {"whole": True}
        assert os.listdir(tmp_path / "quarantine") == [broken]
        assert (tmp_path / "quarantine" / broken).read_bytes() == content
        assert os.listdir(tmp_path / "queue") == []
        assert f"message {broken} ({len(content)} bytes) is not a whole message" in caplog.text


PRODUCER = """
import sys
from pathlib import Path
from kombu import Connection
from config.broker import Transport
from tests.config.test_broker import options
root, count, size = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
with Connection("filesystem://localhost/", transport=Transport,
                transport_options=options(root)) as connection:
    for number in range(count):
        connection.default_channel._put("q", {"n": number, "pad": "x" * size})
"""


def test_a_busy_producer_and_consumer_lose_nothing_and_quarantine_nothing(tmp_path):
    """Another process writes 2,000 messages of 20 kB while this one consumes: every one is
    read whole (with kombu's own transport, about 40% of them were read empty or half-written
    and raised), and nothing is quarantined."""
    count = 2000
    received: list[int] = []
    with connect(tmp_path) as consuming:
        channel = consuming.default_channel
        producer = subprocess.Popen(
            [sys.executable, "-c", PRODUCER, str(tmp_path), str(count), "20000"], cwd=REPO
        )
        deadline = time.monotonic() + 90
        while len(received) < count and time.monotonic() < deadline:
            with contextlib.suppress(Empty):
                received.append(channel._get("q")["n"])
        producer.wait(30)
    assert producer.returncode == 0
    assert sorted(received) == list(range(count))
    assert os.listdir(tmp_path / "quarantine") == []


# --- A real worker process ------------------------------------------------------------------


@pytest.mark.services
def test_a_worker_survives_broken_message_files_and_runs_the_next_task(tmp_path):
    """An empty and a half-written message file dropped into the queue folder of a running
    worker (the shipped settings, the embedded default): both are quarantined, the worker stays
    up, and a task sent afterwards runs."""
    var = tmp_path / "var"
    env = embedded_env(var, DJANGO_DEBUG="1")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=REPO,
        env=env,
        check=True,
    )
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-l", "INFO"],
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    queue = var / "broker" / "queue"
    quarantine = var / "broker" / "quarantine"
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        sent = {
            message_name("floorboard", 1): b"",
            message_name("floorboard", 2): json.dumps({"body": "x" * 500})[:120].encode(),
        }
        for name, content in sent.items():
            (queue / name).write_bytes(content)
        deadline = time.monotonic() + 10
        while sorted(os.listdir(quarantine)) != sorted(sent):
            assert time.monotonic() < deadline, (os.listdir(quarantine), log.read_text())
            time.sleep(0.05)
        time.sleep(1.0)  # a worker that raised would be gone by now
        assert worker.poll() is None, log.read_text()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import django; django.setup(); from config.celery import app;"
                "app.send_task('evaluation.tasks.sweep_stalled')",
            ],
            cwd=REPO,
            env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
            check=True,
        )
        deadline = time.monotonic() + 30
        while "Task evaluation.tasks.sweep_stalled[" not in log.read_text() or (
            "succeeded" not in log.read_text()
        ):
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert "is not a whole message" in log.read_text()
        assert "Unrecoverable error" not in log.read_text()
    finally:
        worker.terminate()
        worker.wait(30)
