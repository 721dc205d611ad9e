"""End to end through real services: PostgreSQL, Redis, a Celery worker process, a local judge
server. All 927 real tasks, submitted with the CLI; the worker is SIGKILLed mid-judging and a new
one finishes the job with the numbers counted by hand and no judgment asked for twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from config.celery import app as celery_app
from evaluation.benchmarks.mpbench.synthetic import GOOD, write_bundle_tree
from evaluation.models import Judgment
from tests.conftest import REPO, completion, require_service

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

BROKER = os.environ.get("FLOORBOARD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def services(postgres):
    require_service("Redis", "127.0.0.1", 6379)


class Worker:
    """A real `celery -A config worker` process sharing the test database, broker and storage."""

    def __init__(self, env: dict, log: Path):
        self.env, self.log, self.process = env, log, None

    def start(self):
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool=solo",
                "-Q",
                self.env["FLOORBOARD_QUEUE"],
                "--loglevel=INFO",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def worker_env(services, tmp_path, settings):
    queue = f"floorboard-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": BROKER,
        "FLOORBOARD_QUEUE": queue,
        "FLOORBOARD_MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_VISIBILITY_TIMEOUT": "5",
        "CELERY_UNACKED_RESTORE_INTERVAL": "2",
        "CELERY_UNACKED_RESTORE_THROTTLE": "1",
        "FLOORBOARD_JUDGE_LEASE_SECONDS": "5",
        "FLOORBOARD_JUDGE_TIMEOUT_SECONDS": "5",
        "FLOORBOARD_JUDGE_CONCURRENCY": "8",
        "FLOORBOARD_JUDGE_BACKOFF_BASE_SECONDS": "0.05",
    }
    previous = (celery_app.conf.broker_url, celery_app.conf.task_default_queue)
    celery_app.conf.broker_url, celery_app.conf.task_default_queue = BROKER, queue
    yield env
    celery_app.conf.broker_url, celery_app.conf.task_default_queue = previous


def expected_table(tasks: dict[str, dict], outcomes: dict[str, str]) -> dict:
    """Counted by hand from each task's outcome and the rules in DESIGN.md."""
    latency_of = {"good": 1.25, "bad": 0.5, "good_slow": 3.0}
    good = {"good", "good_slow"}
    table = {}
    for family in ("understanding", "discussion", "turnbased"):
        ids = [k for k, t in tasks.items() if t["family"] == family]
        spoke = {k: outcomes[k] in latency_of for k in ids}
        lats = [latency_of[outcomes[k]] for k in ids if spoke[k]]
        right = sum(outcomes[k] in good for k in ids)

        def rate(k, n):
            return {"count": k, "total": n, "pct": round(100.0 * k / n, 2) if n else None}

        if family == "understanding":
            spk = [k for k in ids if tasks[k]["is_speaker_name"]]
            table[family] = {
                "n": len(ids),
                "overall_acc": rate(right, len(ids)),
                "spk_name_acc": rate(sum(outcomes[k] in good for k in spk), len(spk)),
                "latency_s": round(sum(lats) / len(lats), 1),
            }
        else:
            tt = sum(spoke[k] == tasks[k]["should_speak"] for k in ids)
            table[family] = {
                "n": len(ids),
                "tt_acc": rate(tt, len(ids)),
                "app_acc": rate(right, len(ids)),
                "latency_s": round(sum(lats) / len(lats), 1),
            }
    return table


def test_927_tasks_via_cli_and_worker_killed_mid_judging(
    worker_env, mpbench, mpbench_tasks, judge_server, tmp_path, client
):
    judge = mpbench.judges.get(slug="official")
    judge.base_url = judge_server.url
    judge.save()
    arrivals: dict[str, list[float]] = {}
    lock = threading.Lock()

    def responder(body, call):
        prompt = body["messages"][0]["content"]
        with lock:
            arrivals.setdefault(prompt, []).append(time.time())
        time.sleep(0.05)
        verdict = GOOD in prompt
        answer = {
            "correct": verdict,
            "consistent": verdict,
            "reasoning": "marker",
            "extracted_name": "Ben",
        }
        return 200, {}, completion(json.dumps(answer))

    judge_server.responder = responder
    outcomes = write_bundle_tree(tmp_path / "bundle", list(mpbench_tasks))
    log = tmp_path / "worker.log"
    first = Worker(worker_env, log)
    first.start()
    cli = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "submit",
            str(tmp_path / "bundle"),
            "--benchmark",
            "mp-bench",
            "--system",
            "Synthetic 927",
            "--system-type",
            "realtime",
            "--wait",
            "--timeout",
            "300",
            "--json",
            "--publish",
        ],
        cwd=REPO,
        env=worker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second = Worker(worker_env, log)
    try:
        deadline = time.monotonic() + 180
        while Judgment.objects.filter(status="done").count() < 150:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            assert cli.poll() is None, cli.communicate()
            time.sleep(0.1)
        first.kill()
        done_at_kill = Judgment.objects.filter(status="done").count()
        second.start()
        out, err = cli.communicate(timeout=300)
    finally:
        first.stop()
        second.stop()
    assert cli.returncode == 0, err + log.read_text()[-3000:]
    summary = json.loads(out)
    expected = expected_table(mpbench_tasks, outcomes)
    assert summary["status"] == "scored"
    assert summary["results"] == expected
    assert summary["failed_judgments"] == 0
    assert done_at_kill < Judgment.objects.filter(status="done").count()

    # No judgment was asked for again once its answer had been stored.
    for judgment in Judgment.objects.filter(status="done"):
        repeats = [t for t in arrivals[judgment.prompt] if t > judgment.completed_at.timestamp()]
        assert repeats == [], judgment.kind
    # At most the calls in flight at the kill (concurrency 8) were repeated.
    assert sum(len(v) - 1 for v in arrivals.values()) <= 8

    board = client.get("/api/benchmarks/mp-bench/leaderboard/").json()
    entry = next(e for e in board["entries"] if e["system"] == "Synthetic 927")
    assert entry["submission"] == summary["submission"]
    assert entry["results"] == expected
    assert entry["flags"] == {
        "verified": True,
        "reported_in_paper": False,
        "incomplete": False,
        "offline_judge": False,
        "private": False,
        "flagged": False,
        "staff_verified": False,
        "hidden": False,
    }
