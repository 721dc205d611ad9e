"""Through real services: PostgreSQL, Redis and a Celery worker process; the CLI submits and
waits while the worker runs VAD, ASR against the local transcription server and the judges
against the local Messages API server. The services tier (FLOORBOARD_RUN_SERVICES=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from django.db import connection

from config.celery import app as celery_app
from evaluation.services import benchmark_import
from tests.conftest import REPO, require_service

from .conftest import write_tree, zip_upload
from .test_pipeline import AsrServer, judge_responder, rate, truth

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
BROKER = os.environ.get("FLOORBOARD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def worker_env(postgres, tmp_path):
    require_service("Redis", "127.0.0.1", 6379)
    queue = f"floorboard-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": BROKER,
        "FLOORBOARD_QUEUE": queue,
        "FLOORBOARD_MEDIA_ROOT": str(tmp_path / "media"),
        "FLOORBOARD_VAR_DIR": str(tmp_path / "var"),
    }
    previous = (celery_app.conf.broker_url, celery_app.conf.task_default_queue)
    celery_app.conf.broker_url, celery_app.conf.task_default_queue = BROKER, queue
    yield env
    celery_app.conf.broker_url, celery_app.conf.task_default_queue = previous


def test_a_worker_scores_an_upload_from_the_cli(worker_env, judge_server, release_dir,
                                                scenarios, tmp_path):  # fmt: skip
    judge_server.responder = judge_responder
    board = benchmark_import(slug="duplex-mpe", directory=release_dir,
                             plugin="duplex-mpe").benchmark  # fmt: skip
    official = board.judges.get(is_official=True)
    official.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    official.price_input_per_mtok = official.price_output_per_mtok = 0
    official.save()
    asr = AsrServer()
    env = {**worker_env, "DUPLEXMPE_ASR_BASE_URL": asr.url, "DUPLEXMPE_ASR_MODEL": "test-asr-1",
           "ANTHROPIC_API_KEY": "sk-ant-test", "FLOORBOARD_JUDGE_MAX_ATTEMPTS": "2",
           "FLOORBOARD_JUDGE_BACKOFF_BASE_SECONDS": "0.05"}  # fmt: skip
    tree = tmp_path / "good"
    write_tree(tree, scenarios, profile="good", seed=5)
    bundle = zip_upload(tree, tmp_path / "good.zip")
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q",
         env["FLOORBOARD_QUEUE"], "--loglevel=INFO", "--without-mingle", "--without-gossip"],
        cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        cli = subprocess.run(
            [sys.executable, "manage.py", "submit", str(bundle), "--benchmark", "duplex-mpe",
             "--system", "Worker Duplex", "--wait", "--timeout", "240", "--json", "--publish"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        worker.terminate()
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
        asr.close()
    assert cli.returncode == 0, cli.stderr + log.read_text()[-3000:]
    summary = json.loads(cli.stdout)
    assert summary["status"] == "scored"
    expected = truth(tree, scenarios)
    for condition in ("explicit", "implicit"):
        want, got = expected[condition], summary["results"][condition]
        assert got["fresh_onset"] == rate(want["fresh"], want["t"])
        assert got["silence"] == rate(want["silent"], want["windows"])
    sent = [r["text"] for r in asr.requests]
    assert sent and len(sent) == len(set(sent))
    assert summary["results"]["explicit"]["accuracy_not_correct"] == {"missing": 1,
                                                                       "unparseable": 1}  # fmt: skip
