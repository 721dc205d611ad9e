"""The attack pass's hostile bundles (timeline, report size, memory, up-front validation),
built here by code, driven through the real upload paths of a live server: the browser's
chunked upload and POST /api/submissions/. Each is refused with a clear message naming what is
wrong, and the server's peak memory grows by less than 200 MB over all of them. The bundles are
MP-Bench's (its transcripts and their bounds): the test reads the MP-Bench data beside the
checkout (../shared) and skips without it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pytest
from django.conf import settings as django_settings
from django.test import Client

from evaluation.models import Submission
from leaderboard.accounts.services import api_token_create
from leaderboard.uploads.models import Upload
from tests.benchmarks.mpbench.conftest import start_fields
from tests.conftest import peak_rss_growth, wav_header

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "scenario_argument-diag_1001-tier_2-task_0"
OTHER = "scenario_turnBasedGame-diag_112-tier_2-task_1"
INPUT = json.dumps({"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.0, 0.5]}]})
CHUNK = 8 * 1024 * 1024


def empty_chunks(size: int) -> bytes:
    """{"chunks": [{}, {}, ...]} of `size` bytes with random whitespace: about 8:1 zipped."""
    rng = np.random.default_rng(11)
    count = (size - 64) // 6
    cells = np.empty((count, 6), dtype=np.uint8)
    cells[:, :3] = np.frombuffer(b"{},", dtype=np.uint8)
    cells[:, 3:] = rng.choice(np.frombuffer(b" \n\t\r", dtype=np.uint8), size=(count, 3))
    body = b'{"text": "", "chunks": [' + cells.tobytes()[:-4].rstrip(b", \n\t\r") + b"]}"
    return body + b" " * (size - len(body))


def write(path: Path, files: dict[str, bytes | str]) -> Path:
    # The fastest deflate: half a gigabyte of zeros is written in a fraction of the time.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def attack_bundles(folder: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (bundle, fragments the refusal must contain)."""
    far = {"text": "x", "chunks": [{"text": "late", "timestamp": [1e12, 1e12 + 0.5]}]}
    bad = [{"text": f"w{i}", "timestamp": [i + 0.5, i * 0.25]} for i in range(1, 5_001)]
    deep = "[" * 200_000 + "]" * 200_000
    return {
        "timeline (item 1)": (
            write(
                folder / "timeline.zip",
                {f"{TASK}/all_stitched.json": INPUT, f"{TASK}/response.json": json.dumps(far)},
            ),
            ["chunk 0 ('late') has a timestamp [1000000000000.0, 1000000000000.5] beyond 14,400 s"],
        ),
        "report size (item 3)": (
            write(
                folder / "report.zip",
                {
                    f"{TASK}/all_stitched.json": INPUT,
                    f"{TASK}/response.json": json.dumps({"chunks": bad}),
                },
            ),
            ["and 4,980 more problem(s) in this file"],
        ),
        "memory (item 4)": (
            write(
                folder / "memory.zip",
                {
                    f"{TASK}/all_stitched.json": INPUT,
                    f"{TASK}/response.json": empty_chunks(64 * 1024 * 1024),
                    f"{OTHER}/response.wav": wav_header(65_535 * 2 * 4096, channels=65_535)
                    + b"\0" * (65_535 * 2 * 4096),
                },
            ),
            [
                "file is 67,108,864 bytes; the limit is 16,777,216",
                "has 65,535 channels; at most 2",
            ],
        ),
        "up-front validation (item 7)": (
            write(
                folder / "upfront.zip",
                {
                    f"{TASK}/all_stitched.json": INPUT,
                    f"{TASK}/{'n' * 296}.wav": b"RIFF",
                    f"{TASK}/x.wav": b"RIFF",
                    f"{TASK}/x.wav/y.wav": b"RIFF",
                    f"{TASK}/response.json": json.dumps(
                        {"chunks": [{"text": "a\u0000b", "timestamp": [1, 2]}]}
                    ),
                    f"{OTHER}/all_stitched.json": deep,
                    "manifest.json": '{"score": NaN, "system_type": "'
                    + "x" * 30
                    + '", "organization": "Lab\\u0000"}',
                },
            ),
            [
                "a name of 300 bytes in its path",
                "is a file, and a folder of the same name",
                "holds a NUL character",
                "nests 200,000 levels deep",
                "field 'score' is NaN or Infinity",
                "field 'system_type' is",
                "field 'organization' holds a NUL character",
            ],
        ),
    }


def test_attack_bundles_are_refused_clearly_in_bounded_memory(
    live_server, people, mpbench, tmp_path, settings, eager
):
    settings.UPLOAD_CHUNK_BYTES = CHUNK
    bundles = attack_bundles(tmp_path)
    login = Client()
    login.force_login(people.alice)
    browser = httpx.Client(base_url=live_server.url, timeout=600)
    browser.cookies.set(django_settings.SESSION_COOKIE_NAME, login.cookies["sessionid"].value)
    browser.get("/benchmarks/mp-bench/submit/").raise_for_status()
    csrf = {"X-CSRFToken": browser.cookies[django_settings.CSRF_COOKIE_NAME]}
    token = api_token_create(user=people.alice, name="attack")[1]
    api = httpx.Client(
        base_url=live_server.url, timeout=600, headers={"Authorization": f"Bearer {token}"}
    )
    answers = {}
    with peak_rss_growth() as peak:
        for name, (path, _) in bundles.items():
            size = path.stat().st_size
            state = browser.post(
                "/benchmarks/mp-bench/submit/start/",
                data=start_fields(size=size, filename=path.name),
                headers=csrf,
            ).json()
            with path.open("rb") as handle:
                offset = 0
                while piece := handle.read(CHUNK):
                    sent = browser.put(
                        f"{state['urls']['chunk']}?offset={offset}", content=piece, headers=csrf
                    )
                    assert sent.status_code == 200, sent.text
                    offset += len(piece)
            finish = browser.post(
                state["urls"]["finish"], headers={**csrf, "Accept": "application/json"}
            )
            with path.open("rb") as handle:
                created = api.post(
                    "/api/submissions/",
                    data={
                        "benchmark": "mp-bench",
                        "system": "Attacker",
                        "team": "alpha",
                        "judge": "offline",
                        "allow_partial": "true",
                    },
                    files={"bundle": (path.name, handle, "application/zip")},
                )
            answers[name] = (finish, created, state["id"])
    print(f"\npeak RSS growth over {len(bundles)} bundles, both paths: {peak['mib']:.0f} MiB")

    for name, (finish, created, upload_id) in answers.items():
        fragments = bundles[name][1]
        # The browser's finish: rejected, with the report.
        assert finish.status_code == 422, (name, finish.text[:500])
        upload = Upload.objects.get(pk=upload_id)
        assert upload.status == "rejected" and upload.error == ""
        # The API: the same check by a worker (eager here), its report in the upload's state.
        assert created.status_code == 202, (name, created.text[:500])
        body = created.json()
        assert body["status"] == "rejected" and body["submission"] is None
        text = json.dumps(body["report"]["problems"]) + json.dumps(upload.report["problems"])
        for fragment in fragments:
            assert fragment in text, (name, fragment)
        assert len(created.content) < 200_000, name
    assert not Submission.objects.filter(is_reported=False).exists()
    assert peak["mib"] < 200
