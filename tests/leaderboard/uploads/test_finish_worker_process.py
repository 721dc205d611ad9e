"""The services tier: a browser upload finished by a real worker process on the embedded default
(a SQLite file, the filesystem broker), the web side played by a separate process calling the
same services the views call. Nothing here runs the finish in the test's own process."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import REPO, embedded_env
from tests.toyplugin import toy

# The web side: start the upload, send its bytes, ask for the finish (which only queues it).
WEB = """
import sys
from pathlib import Path
from django.contrib.auth.models import User
from evaluation.models import Benchmark, Membership, Team
from leaderboard.uploads import services

bundle = Path(sys.argv[1])
user = User.objects.create_user("alice", "alice@example.org", "pw")
team = Team.objects.create(name="Alpha Lab", slug="alpha")
Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
benchmark = Benchmark.objects.get(slug="toy-bench")
upload = services.upload_start(
    user=user, team=team, benchmark=benchmark, filename="bundle.zip",
    size=bundle.stat().st_size, system_name="Worker Agent", system_type="small",
    judge=benchmark.judges.get(slug="offline"), allow_partial=True,
)
with bundle.open("rb") as stream:
    services.upload_chunk_append(
        upload=upload, offset=0, length=bundle.stat().st_size, stream=stream
    )
upload = services.upload_finish_request(upload=upload)
print(upload.pk, upload.status)
"""


@pytest.mark.services
def test_a_worker_process_finishes_a_browser_upload(tmp_path, make_bundle):
    var = tmp_path / "var"
    queue = f"uploads-{uuid.uuid4().hex[:8]}"
    env = embedded_env(
        var,
        DJANGO_SETTINGS_MODULE="config.settings",
        FLOORBOARD_QUEUE=queue,
        FLOORBOARD_UPLOAD_QUEUE=f"{queue}-finish",
        FLOORBOARD_BENCHMARKS="tests.toyplugin",  # the example plug-in, in both processes
    )

    def run(*args):
        return subprocess.run(
            [sys.executable, *args], cwd=REPO, env=env, check=True, capture_output=True, text=True
        )

    run("manage.py", "migrate", "--noinput")
    toy.write_release(tmp_path / "toy-release")
    run("manage.py", "import_benchmark", "toy-bench", str(tmp_path / "toy-release"))
    bundle = make_bundle()
    web = run("manage.py", "shell", "-c", WEB.replace("sys.argv[1]", repr(str(bundle))))
    upload_id, status = web.stdout.strip().splitlines()[-1].split()
    assert status == "finishing", web.stdout

    def query(sql, *params):
        with sqlite3.connect(f"file:{var / 'floorboard.sqlite3'}?mode=ro", uri=True) as db:
            return db.execute(sql, params).fetchall()

    hex_id = upload_id.replace("-", "")
    assert query("SELECT status FROM uploads_upload WHERE id = ?", hex_id) == [("finishing",)]
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q",
         f"{env['FLOORBOARD_QUEUE']},{env['FLOORBOARD_UPLOAD_QUEUE']}", "--loglevel=INFO",
         "--without-mingle", "--without-gossip"],
        cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            rows = query(
                "SELECT u.status, s.status FROM uploads_upload u "
                "LEFT JOIN evaluation_submission s ON s.id = u.submission_id WHERE u.id = ?",
                hex_id,
            )
            if rows == [("accepted", "scored")]:
                break
            assert rows[0][0] in ("finishing", "validating", "accepted"), rows
            time.sleep(0.5)
        else:
            pytest.fail(f"not finished and scored in 180 s: {rows}\n{log.read_text()[-3000:]}")
    finally:
        worker.terminate()
        worker.wait(30)
    [(name, size)] = query(
        "SELECT s.bundle, s.bundle_size FROM evaluation_submission s "
        "JOIN uploads_upload u ON u.submission_id = s.id WHERE u.id = ?",
        hex_id,
    )
    stored = var / "media" / name
    assert name.startswith("bundles/") and stored.read_bytes() == bundle.read_bytes()
    assert size == bundle.stat().st_size
    assert not (var / "media" / "uploads" / "partial" / f"{upload_id}.part").exists()
