"""Nothing waits forever on a dead worker: workers record that they are alive, `make demo`'s
supervisor (manage.py run_demo) starts its worker again when it dies, `submit --wait` fails
fast and clearly when no worker runs, and a queued submission's page says so. Processes run on
the shipped settings, the embedded default, each under a var folder of its own."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from evaluation.models import Benchmark, Submission, System, WorkerBeat
from tests.conftest import REPO, embedded_env, free_port, port_open
from tests.toyplugin import toy

TOY = "evaluation.benchmarks.mpbench,tests.toyplugin"


def manage(env: dict, *args: str, check: bool = True, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        check=check,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory):
    """A migrated SQLite site with the toy benchmark imported, and an upload for it."""
    root = tmp_path_factory.mktemp("toy-site")
    env = embedded_env(root / "var", DJANGO_DEBUG="1", FLOORBOARD_BENCHMARKS=TOY)
    manage(env, "migrate", "--noinput", "-v0")
    toy.write_release(root / "release")
    manage(env, "import_benchmark", "toy-bench", str(root / "release"))
    toy.write_answers(root / "answers.jsonl", correct=3)
    return root, env


def beat_at(database: Path, seen: datetime, worker: str = "celery@gone:1") -> None:
    """A worker's beat as the worker writes it (UTC, naive ISO text on SQLite)."""
    text = seen.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with sqlite3.connect(database) as db:
        db.execute(
            "INSERT INTO evaluation_workerbeat (worker, queue, started_at, seen_at) "
            "VALUES (?, 'floorboard', ?, ?) ON CONFLICT (worker, queue) DO UPDATE SET "
            "seen_at = excluded.seen_at",
            (worker, text, text),
        )


def submit_wait(root: Path, env: dict, *extra: str):
    started = time.monotonic()
    result = manage(
        env,
        "submit",
        str(root / "answers.jsonl"),
        "--benchmark",
        "toy-bench",
        "--system",
        f"Waiting {time.monotonic_ns()}",
        "--judge",
        "offline",
        "--wait",
        *extra,
        check=False,
    )
    return result, time.monotonic() - started


def test_submit_wait_fails_at_once_when_the_worker_went_quiet(toy_site):
    root, env = toy_site
    beat_at(root / "var" / "floorboard.sqlite3", timezone.now() - timedelta(seconds=90))
    result, took = submit_wait(root, env)
    assert result.returncode == 1
    assert re.search(
        r"submission \d+ is queued: no worker is running \(none has been seen for 9\d s\): "
        r"start one with `celery -A config worker`",
        result.stderr,
    ), result.stderr
    assert took < 20


def test_submit_wait_keeps_waiting_while_a_worker_is_alive(toy_site):
    """A worker that beats but has not reached this submission (a long queue): --wait waits to
    its timeout and says so, not that no worker runs."""
    root, env = toy_site
    database = root / "var" / "floorboard.sqlite3"
    stop = threading.Event()

    def beating():
        while not stop.is_set():
            beat_at(database, timezone.now(), worker="celery@busy:2")
            stop.wait(1.0)

    beater = threading.Thread(target=beating)
    beater.start()
    try:
        result, took = submit_wait(root, env, "--timeout", "4")
    finally:
        stop.set()
        beater.join()
    assert result.returncode == 1
    assert "no worker" not in result.stderr
    assert re.search(r"submission \d+ still queued after 4 s", result.stderr), result.stderr
    assert 4 <= took < 30


@pytest.mark.services
def test_submit_wait_with_no_worker_ever_says_so_within_about_a_minute(tmp_path):
    """Shipped settings, a fresh site where no worker ever ran: a clear message within about
    WORKER_SILENT_SECONDS (60 s), not the six-hour timeout."""
    env = embedded_env(tmp_path / "var", DJANGO_DEBUG="1", FLOORBOARD_BENCHMARKS=TOY)
    manage(env, "migrate", "--noinput", "-v0")
    toy.write_release(tmp_path / "release")
    manage(env, "import_benchmark", "toy-bench", str(tmp_path / "release"))
    toy.write_answers(tmp_path / "answers.jsonl", correct=3)
    result, took = submit_wait(tmp_path, env)
    assert result.returncode == 1
    assert "no worker is running (none has been seen in 60 s of waiting)" in result.stderr
    assert 60 <= took < 80


# --- The submission page --------------------------------------------------------------------


@pytest.mark.django_db
def test_a_queued_submissions_page_says_when_no_worker_has_been_seen(client):
    board = Benchmark.objects.create(slug="board", name="Board", plugin="mp-bench")
    queued = Submission.objects.create(
        benchmark=board, system=System.objects.create(name="Q"), status="queued", is_published=True
    )
    scored = Submission.objects.create(
        benchmark=board, system=System.objects.create(name="S"), status="scored", is_published=True
    )

    def notice(submission) -> str:
        text = client.get(f"/submissions/{submission.pk}/progress/").content.decode()
        found = re.search(r"<strong>No worker is running:</strong>([^<]*)", text)
        return found.group(1).strip() if found else ""

    assert notice(queued).startswith("none has been seen yet.")
    now = timezone.now()
    beat = WorkerBeat.objects.create(
        worker="w:1", queue="floorboard", started_at=now, seen_at=now - timedelta(seconds=75)
    )
    assert notice(queued).startswith("none has been seen for 75 s.")
    WorkerBeat.objects.filter(pk=beat.pk).update(seen_at=now - timedelta(minutes=10))
    assert notice(queued).startswith("none has been seen for 10 minutes.")
    WorkerBeat.objects.filter(pk=beat.pk).update(seen_at=now - timedelta(seconds=3))
    assert notice(queued) == ""
    WorkerBeat.objects.all().delete()
    assert notice(scored) == ""  # a final submission waits for nothing


# --- make demo's supervisor -----------------------------------------------------------------


def read_until(stream, pattern: str, seconds: float, seen: list[str]) -> re.Match:
    """Lines of ``stream`` (kept in ``seen``) until one matches ``pattern``."""
    found: list[re.Match] = []

    def read():
        for line in stream:
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                found.append(match)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    assert found, "".join(seen[-40:])
    return found[0]


def beats(database: Path) -> dict[str, str]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
        return dict(db.execute("SELECT worker, seen_at FROM evaluation_workerbeat").fetchall())


def group_gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def start_demo(var: Path, *args: str) -> subprocess.Popen:
    """manage.py run_demo on a migrated site under ``var``, its output readable line by line."""
    env = embedded_env(var, DJANGO_DEBUG="1", PYTHONUNBUFFERED="1")
    manage(env, "migrate", "--noinput", "-v0")
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_demo", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.services
def test_the_demos_worker_killed_comes_back_and_everything_stops_together(tmp_path):
    var = tmp_path / "var"
    port = free_port()
    demo = start_demo(var, f"127.0.0.1:{port}")
    lines: list[str] = []
    try:
        first = int(read_until(demo.stdout, r"worker started \(pid (\d+)\)", 30, lines).group(1))
        database = var / "floorboard.sqlite3"
        deadline = time.monotonic() + 60
        while not any(name.endswith(f":{first}") for name in beats(database)):
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.2)
        # The site and the worker start side by side; either may be ready first.
        while not port_open("127.0.0.1", port):
            assert time.monotonic() < deadline and demo.poll() is None, "".join(lines)
            time.sleep(0.2)

        os.killpg(first, signal.SIGKILL)  # the worker and its beat, as an OOM kill might
        read_until(
            demo.stdout, rf"the worker \(pid {first}\) stopped: killed by SIGKILL", 10, lines
        )
        second = int(read_until(demo.stdout, r"worker started \(pid (\d+)\)", 15, lines).group(1))
        assert second != first
        deadline = time.monotonic() + 60
        while not any(name.endswith(f":{second}") for name in beats(database)):
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.2)
        assert demo.poll() is None and port_open("127.0.0.1", port)

        demo.send_signal(signal.SIGINT)  # Ctrl-C
        assert demo.wait(30) == 0, "".join(lines)
        assert group_gone(second)
        assert not port_open("127.0.0.1", port)
        # A worker that stops cleanly takes its beats with it.
        assert not any(name.endswith(f":{second}") for name in beats(database))
    finally:
        if demo.poll() is None:
            demo.kill()


@pytest.mark.services
def test_a_worker_that_keeps_dying_stops_the_demo_with_a_message(tmp_path):
    """--max-restarts 1: the second exit within the window stops the demo, saying why."""
    demo = start_demo(tmp_path / "var", "--no-server", "--max-restarts", "1")
    lines: list[str] = []
    try:
        for _ in range(2):
            pid = int(read_until(demo.stdout, r"worker started \(pid (\d+)\)", 30, lines).group(1))
            time.sleep(1.0)
            os.killpg(pid, signal.SIGKILL)
        assert demo.wait(30) == 1
        output = "".join(lines) + demo.stdout.read()
        assert (
            "the demo's worker exited 2 times within 10 minutes (the last: killed by SIGKILL); "
            "stopping the demo" in output
        )
        assert group_gone(pid)
    finally:
        if demo.poll() is None:
            demo.kill()


def test_the_makefile_runs_the_demo_under_its_supervisor():
    makefile = (REPO / "Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "manage.py run_demo $(HOST):$(PORT)" in demo
    assert "celery" not in demo  # the worker is started by run_demo, never bare
