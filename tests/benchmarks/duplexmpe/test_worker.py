"""Through real services: PostgreSQL, Redis and a Celery worker process; the CLI submits and
waits while the worker runs VAD, ASR against the local transcription server and the judges
against the local Messages API server. Skipped unless those services are reachable."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evaluation.services import benchmark_import
from tests.conftest import REPO
from tests.evaluation.test_worker_end_to_end import Worker, services, worker_env  # noqa: F401

from .conftest import write_tree, zip_upload
from .test_pipeline import AsrServer, judge_responder, rate, truth

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_worker_scores_an_upload_from_the_cli(worker_env, judge_server, release_dir,  # noqa: F811
                                                scenarios, tmp_path):  # fmt: skip
    judge_server.responder = judge_responder
    board = benchmark_import(slug="duplex-mpe", directory=release_dir,
                             plugin="duplex-mpe").benchmark  # fmt: skip
    official = board.judges.get(is_official=True)
    official.base_url = judge_server.url
    official.save()
    asr = AsrServer()
    env = {**worker_env, "DUPLEXMPE_ASR_BASE_URL": asr.url, "DUPLEXMPE_ASR_MODEL": "test-asr-1",
           "ANTHROPIC_API_KEY": "sk-ant-test", "FLOORBOARD_JUDGE_MAX_ATTEMPTS": "2"}  # fmt: skip
    tree = tmp_path / "good"
    write_tree(tree, scenarios, profile="good", seed=5)
    bundle = zip_upload(tree, tmp_path / "good.zip")
    worker = Worker(env, tmp_path / "worker.log")
    worker.start()
    try:
        cli = subprocess.run(
            [sys.executable, "manage.py", "submit", str(bundle), "--benchmark", "duplex-mpe",
             "--system", "Worker Duplex", "--wait", "--timeout", "240", "--json", "--publish"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        worker.stop()
        asr.close()
    assert cli.returncode == 0, cli.stderr + (tmp_path / "worker.log").read_text()[-3000:]
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
