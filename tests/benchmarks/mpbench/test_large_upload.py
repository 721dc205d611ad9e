"""A multi-gigabyte bundle through the chunked path, finished by a worker and scored, with peak
memory barely moving: neither the server nor the worker holds the bundle whole. The finish
request only queues the work and answers at once, however long the worker then takes (at a few
GB, longer than gunicorn's 120 s request timeout on a small machine). Opt-in, as it writes
several GB; the bundle is MP-Bench's examples with one huge response.wav, so it also reads the
MP-Bench data beside the checkout (../shared) and skips without it:

    FLOORBOARD_LARGE_UPLOAD_GB=3 .venv/bin/pytest tests/benchmarks/mpbench/test_large_upload.py -s
"""

from __future__ import annotations

import dataclasses
import os
import resource
import subprocess
import sys
import time
import zipfile

import httpx
import pytest
from django.conf import settings as django_settings
from django.test import Client

from evaluation.benchmarks.mpbench import limits as mpbench_limits
from evaluation.benchmarks.mpbench.plugin import MPBench
from evaluation.models import Submission
from leaderboard.uploads import tasks
from leaderboard.uploads.models import Upload
from tests.benchmarks.mpbench.conftest import start_fields
from tests.conftest import copy_examples, wav_header

GIGABYTES = float(os.environ.get("FLOORBOARD_LARGE_UPLOAD_GB", "0"))
PIECE = 8 * 1024 * 1024
# gunicorn's --timeout (docker/Dockerfile): no request may take this long.
REQUEST_TIMEOUT_SECONDS = 120
EXAMPLE_TASK = "scenario_argument-diag_1001-tier_2-task_0"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not GIGABYTES, reason="set FLOORBOARD_LARGE_UPLOAD_GB to run"),
]


SENDER = """
import os, sys, httpx
url, path = sys.argv[1], sys.argv[2]
cookies = {"sessionid": os.environ["SESSION"], "csrftoken": os.environ["CSRF"]}
with httpx.Client(cookies=cookies, timeout=600) as http, open(path, "rb") as handle:
    offset = 0
    while piece := handle.read(8 * 1024 * 1024):
        response = http.put(f"{url}?offset={offset}", content=piece,
                            headers={"X-CSRFToken": os.environ["CSRF"]})
        if response.status_code != 200:
            sys.exit(f"offset {offset}: HTTP {response.status_code} {response.text}")
        offset += len(piece)
"""


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def build_bundle(mpbench_dir, tmp_path, audio_bytes: int):
    run = copy_examples(mpbench_dir, tmp_path / "run")
    target = tmp_path / "large.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for path in sorted(run.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(run).as_posix())
        entry = zipfile.ZipInfo(f"{EXAMPLE_TASK}/response.wav")
        with archive.open(entry, "w", force_zip64=True) as sink:
            sink.write(wav_header(audio_bytes))
            written = 0
            while written < audio_bytes:
                piece = os.urandom(min(PIECE, audio_bytes - written))
                sink.write(piece)
                written += len(piece)
    return target


def test_gigabytes_stream_through(
    live_server, people, mpbench, mpbench_dir, tmp_path, settings, eager, monkeypatch
):
    settings.UPLOAD_CHUNK_BYTES = PIECE
    audio_bytes = int(GIGABYTES * 1024**3)
    settings.BUNDLE_MAX_UNCOMPRESSED_BYTES = audio_bytes + 1024**3
    monkeypatch.setattr(MPBench, "max_upload_bytes", audio_bytes + 1024**3)
    monkeypatch.setattr(
        mpbench_limits,
        "AUDIO_LIMITS",
        # The clip's bytes and its length (16 kHz, 16-bit mono: 32,000 bytes a second).
        dataclasses.replace(
            mpbench_limits.AUDIO_LIMITS,
            max_bytes=audio_bytes + 1024**2,
            max_seconds=audio_bytes / 32_000 + 60,
        ),
    )
    bundle = build_bundle(mpbench_dir, tmp_path, audio_bytes)
    size = bundle.stat().st_size
    login = Client()
    login.force_login(people.alice)
    # Real HTTP to the live server, which runs in this process.
    http = httpx.Client(base_url=live_server.url, timeout=600)
    http.cookies.set(django_settings.SESSION_COOKIE_NAME, login.cookies["sessionid"].value)
    http.get("/benchmarks/mp-bench/submit/").raise_for_status()
    headers = {"X-CSRFToken": http.cookies[django_settings.CSRF_COOKIE_NAME]}
    before = peak_rss_mib()

    started = time.monotonic()
    state = http.post(
        "/benchmarks/mp-bench/submit/start/",
        data=start_fields(size=size, filename="large.zip"),
        headers=headers,
    ).json()
    # The bytes are sent by another process, so this one's memory is the server's alone.
    sender = subprocess.run(
        [sys.executable, "-c", SENDER, live_server.url + state["urls"]["chunk"], str(bundle)],
        env={
            **os.environ,
            "SESSION": http.cookies[django_settings.SESSION_COOKIE_NAME],
            "CSRF": headers["X-CSRFToken"],
        },
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert sender.returncode == 0, sender.stderr
    uploaded = time.monotonic()
    after_upload = peak_rss_mib()
    # The broker: the finish request's message is kept for the worker below.
    queued: list[tuple] = []
    monkeypatch.setattr(tasks.finish_upload, "delay", lambda *args: queued.append(args))
    finish = http.post(state["urls"]["finish"], headers={**headers, "Accept": "application/json"})
    answered = time.monotonic()
    assert finish.status_code == 202, finish.text
    assert finish.json()["status"] == "finishing" and queued == [(state["id"],)]
    assert answered - uploaded < 10, "the finish request only queues the work"

    # The worker: validate, place in bundles/, count and create, then (eager) score offline.
    outcome = tasks.finish_upload.apply(args=queued[0]).get()
    assert outcome == "accepted", Upload.objects.get(pk=state["id"]).report
    finished = time.monotonic()
    outcome = http.get(state["urls"]["state"]).json()["outcome"]
    assert outcome["status"] == "accepted" and outcome["finishing"] is False

    submission = Submission.objects.get(pk=outcome["submission"])
    assert submission.status == "scored" and submission.bundle_size == size
    assert Upload.objects.get(pk=state["id"]).status == "accepted"
    after_finish = peak_rss_mib()
    worker_seconds = finished - answered
    print(
        f"\nbundle {size / 1024**3:.2f} GiB in {-(-size // PIECE)} chunks of 8 MiB over HTTP: "
        f"upload {uploaded - started:.1f} s ({size / 1024**2 / (uploaded - started):.0f} MiB/s), "
        f"finish request answered in {answered - uploaded:.2f} s; the worker's finish "
        f"(validate, place, ingest, detect, judge offline) {worker_seconds:.1f} s"
        f"{' (longer than a request may take)' if worker_seconds > REQUEST_TIMEOUT_SECONDS else ''}"
        f"; peak RSS {before:.0f} MiB before, {after_upload:.0f} MiB after the chunks, "
        f"{after_finish:.0f} MiB after finishing"
    )
    assert after_finish - before < 100
