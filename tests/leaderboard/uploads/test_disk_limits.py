"""Disk cannot be filled by one user: unfinished uploads and the bytes they announce are capped
per user, daily and concurrent limits hold per account over all its teams, and temporary files
that killed requests leave behind are swept."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from evaluation.models import Membership, Submission, System, Team
from evaluation.selectors import account_limit_refusal
from leaderboard.uploads.services import upload_temp_files_sweep
from leaderboard.uploads.tasks import sweep_upload_temp_files
from tests.leaderboard.uploads.conftest import start_fields

pytestmark = pytest.mark.django_db

START = "/benchmarks/toy-bench/submit/start/"


def test_open_uploads_per_user_are_capped_by_count(client, people, toybench, settings):
    settings.UPLOAD_MAX_OPEN_PER_USER = 3
    client.force_login(people.alice)
    for _ in range(3):
        assert client.post(START, start_fields(size=1000)).status_code == 201
    refused = client.post(START, start_fields(size=1000))
    assert refused.status_code == 429
    assert refused.json()["limit"] == "open_uploads" and refused.json()["allowed"] == 3
    # A teammate has room of their own.
    client.force_login(people.alice2)
    assert client.post(START, start_fields(size=1000)).status_code == 201


def test_open_uploads_per_user_are_capped_by_announced_bytes(client, people, toybench, settings):
    settings.UPLOAD_MAX_OPEN_BYTES_PER_USER = 3 * 1024**3
    client.force_login(people.alice)
    assert client.post(START, start_fields(size=2 * 1024**3)).status_code == 201
    refused = client.post(START, start_fields(size=2 * 1024**3))
    assert refused.status_code == 429 and refused.json()["limit"] == "open_upload_bytes"
    assert "would pass the limit of 3,221,225,472" in refused.json()["error"]


def test_new_teams_do_not_make_room_for_an_account(client, people, toybench, settings):
    settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT = 2
    system = System.objects.create(name="Many Teams")
    for index in range(2):
        team = Team.objects.create(name=f"Shell {index}", slug=f"shell-{index}")
        Membership.objects.create(team=team, user=people.alice)
        Submission.objects.create(
            benchmark=toybench, system=system, team=team, status="scored", submitted_by=people.alice
        )
    refusal = account_limit_refusal(user=people.alice)
    assert refusal.limit == "submissions_per_day" and refusal.allowed == 2
    assert refusal.message.startswith("Your account (alice) has reached its limit of 2")
    fresh = Team.objects.create(name="Fresh", slug="fresh")
    Membership.objects.create(team=fresh, user=people.alice)
    client.force_login(people.alice)
    refused = client.post(START, start_fields(team="fresh", size=1000))
    assert refused.status_code == 429 and "Your account (alice)" in refused.json()["error"]


def test_concurrent_evaluations_are_limited_per_account(people, toybench, settings):
    settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT = 1
    system = System.objects.create(name="Busy")
    Submission.objects.create(
        benchmark=toybench,
        system=system,
        team=people.beta,
        status="judging",
        submitted_by=people.alice,
    )
    assert account_limit_refusal(user=people.alice).limit == "concurrent_evaluations"
    Submission.objects.filter(system=system).update(created_at=timezone.now() - timedelta(days=2))
    assert account_limit_refusal(user=people.bob) is None


def test_stale_temporary_upload_files_are_swept(settings, tmp_path):
    folder = tmp_path / "upload-tmp"
    folder.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(folder)
    settings.UPLOAD_TEMP_MAX_AGE_SECONDS = 3600
    stale, fresh = folder / "tmpabc.upload.zip", folder / "tmpdef.upload.zip"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    assert sweep_upload_temp_files() == 1
    assert not stale.exists() and fresh.exists()
    assert upload_temp_files_sweep(older_than=timedelta(0)) == 1


def test_api_uploads_are_spooled_to_the_swept_folder(settings):
    from django.conf import settings as live

    assert Path(live.FILE_UPLOAD_TEMP_DIR).is_dir()
    assert "sweep-upload-temp-files" in live.CELERY_BEAT_SCHEDULE


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _answers(*task_ids: str) -> bytes:
    return "".join(json.dumps({"id": t, "answer": "4"}) + "\n" for t in task_ids).encode()


def test_a_silent_wav_bigger_than_its_header_declares_is_refused(toybench, tmp_path):
    from evaluation.services import bundle_validate
    from tests.conftest import wav_header

    one_minute = 16_000 * 2 * 60
    bomb = wav_header(one_minute) + b"\0" * (48 * 1024 * 1024)
    silence = wav_header(one_minute) + b"\0" * one_minute
    files = {"answers.jsonl": _answers("q1", "q2"), "q1.wav": bomb, "q2.wav": silence}
    path = _zip(tmp_path / "b.zip", files)
    report, _ = bundle_validate(benchmark=toybench, path=path, allow_partial=True)
    problems = [str(p) for p in report.problems]
    assert problems == [
        "q1.wav: not accepted as audio: the file is larger than the audio its header declares"
    ]


def test_bundle_size_limits_are_the_benchmarks_own(toybench, tmp_path, monkeypatch, settings):
    from evaluation.services import bundle_validate, upload_limits
    from tests.toyplugin.toy import ToyBench

    # The toy declares no limit of its own: a plug-in's default is 4 GiB.
    assert ToyBench.max_upload_bytes == 4 * 1024**3
    assert upload_limits(toybench).max_bytes == 4 * 1024**3
    monkeypatch.setattr(ToyBench, "max_upload_bytes", 1000)
    answer = json.dumps({"id": "q1", "answer": "a" * 2000}).encode()
    path = _zip(tmp_path / "b.zip", {"answers.jsonl": answer})
    report, _ = bundle_validate(benchmark=toybench, path=path, allow_partial=True)
    assert "exceeds the limit of 1,000 bytes" in str(report.problems[0])
    settings.BUNDLE_MAX_UNCOMPRESSED_BYTES = 500  # the site-wide ceiling, when smaller, wins
    assert upload_limits(toybench).max_bytes == 500


def test_the_web_process_sweeps_its_own_temporary_files(tmp_path):
    """A web container's request temp files are where it wrote them: the WSGI application
    sweeps them itself (beat's sweep runs in a worker container and never sees them)."""
    import subprocess
    import sys

    folder = tmp_path / "web-tmp"
    folder.mkdir()
    stale, fresh = folder / "tmpkilled.upload.zip", folder / "tmplive.upload.zip"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    env = {
        **os.environ,
        "DJANGO_DEBUG": "1",
        "FLOORBOARD_VAR_DIR": str(tmp_path / "var"),
        "FLOORBOARD_UPLOAD_TEMP_DIR": str(folder),
        "FLOORBOARD_UPLOAD_TEMP_MAX_AGE_SECONDS": "3600",
    }
    env.pop("DATABASE_URL", None)
    script = "import time, config.wsgi; time.sleep(1)"
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert not stale.exists() and fresh.exists()
