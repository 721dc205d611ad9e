"""End to end through real services with the shipped settings: a Celery worker process and beat
(the sweeper), a local judge server answering in 200 ms, an answer to every one of the example
plug-in's tasks in a release of 500 (1,000 graded slots) submitted with the CLI. The worker is SIGKILLed mid-judging (what an OOM kill or a lost machine does) and a new one
is started: the dead worker's judgments are taken up within two minutes, the submission finishes
with the numbers counted by hand, no judgment is asked for again once stored, and the calls
asked again (those the dead worker had asked and not stored) are at most the judge's bound.

Run on both brokers: Redis with PostgreSQL (production) and the filesystem broker with SQLite
(the embedded default, where a message is gone once a worker has received it)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from evaluation.models import Judgment
from tests.conftest import REPO, completion, embedded_env, require_service
from tests.toyplugin import toy
from tests.toyplugin.test_toy_plugin import bootstrap

BROKER = os.environ.get("FLOORBOARD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
JUDGE_DELAY = 0.2
KILL_AFTER = 400  # judgments stored
RECOVERY_LIMIT = 120.0  # seconds from the kill until every judgment the dead worker held is done
TASKS = 500  # the example plug-in's release: q1-q3 in English, q4-q500 in German
RIGHT = 250  # answers right: q1-q250 ("It is <2i>"); the rest wrong ("Maybe <50-99>")
JUDGMENTS = 2 * TASKS  # every task answered, graded for accuracy and for style
STYLE = 0.5  # the judge's style grade, whatever the answer
TOY = "evaluation.benchmarks.mpbench,tests.toyplugin"


class Process:
    """A `celery -A config worker|beat` process with the given environment."""

    def __init__(self, env: dict, log: Path, *command: str):
        self.env, self.log, self.command, self.process = env, log, command, None

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *self.command],
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        return self

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


def worker(env, log):
    return Process(
        env,
        log,
        "worker",
        "--pool=solo",
        "-Q",
        env["FLOORBOARD_QUEUE"],
        "--loglevel=INFO",
        "--without-mingle",
        "--without-gossip",
    )


def beat(env, log, tmp_path):
    return Process(env, log, "beat", "--loglevel=INFO", "-s", str(tmp_path / "beat-schedule"))


def expected_table() -> dict:
    """Counted by hand from the toy's rules: a right answer's grades are 1.0 and 0.5 (task score
    0.75), a wrong one's 0 and 0.5 (0.25); a language's quality is the mean task score."""
    score = {f"q{i}": 0.75 if i <= RIGHT else 0.25 for i in range(1, TASKS + 1)}
    languages = {"en": ["q1", "q2", "q3"], "de": [f"q{i}" for i in range(4, TASKS + 1)]}
    table = {}
    for language, ids in languages.items():
        # The interval resamples the tasks as the core lists them: by task id, as text (q10
        # before q2), which sets which task each drawn index is.
        part = [score[task] for task in sorted(ids)]
        n = len(part)
        table[language] = {
            "quality": {"pct": round(100 * sum(part) / n, 2), "n": n, "ci": bootstrap(part)},
            "answered": {"count": n, "total": n, "pct": 100.0},
        }
    # en: three right, 75%; de: 247 right of 497, (247 x 0.75 + 250 x 0.25) / 497 = 49.85%.
    assert (table["en"]["quality"]["pct"], table["de"]["quality"]["pct"]) == (75.0, 49.85)
    return table


class Arrivals:
    """When each prompt reached the judge; answers after 200 ms as a marker-reading judge:
    accuracy 1.0 for a right answer ("It is ..."), 0 otherwise; style 0.5 always."""

    def __init__(self):
        self.times: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def __call__(self, body, call):
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.times.setdefault(prompt, []).append(time.time())
        time.sleep(JUDGE_DELAY)
        if "Grade the style" in prompt:
            score = STYLE
        else:
            score = 1.0 if "\nAnswer: It is " in prompt else 0.0
        return 200, {}, completion(json.dumps({"score": score, "why": "m"}))


def write_run(tmp_path: Path) -> tuple[Path, Path]:
    """The release of TASKS tasks and an answer to each, RIGHT of them right."""
    toy.write_release(tmp_path / "release", count=TASKS)
    toy.write_answers(tmp_path / "answers.jsonl", correct=RIGHT, count=TASKS)
    return tmp_path / "release", tmp_path / "answers.jsonl"


def submit_command(bundle: Path) -> list[str]:
    return [
        sys.executable,
        "manage.py",
        "submit",
        str(bundle),
        "--benchmark",
        "toy-bench",
        "--system",
        "Synthetic 500",
        "--system-type",
        "large",
        "--json",
        "--publish",
    ]


def kill_and_recover(env, log, tmp_path, *, done_count, held, finished):
    log = Path(os.environ.get("FLOORBOARD_TEST_WORKER_LOG", log))
    """Start a worker and beat, kill the worker once KILL_AFTER judgments are stored, start a
    new one; returns (seconds until the judgments the dead worker held were all done, done at
    the kill)."""
    first, sweeper = worker(env, log).start(), beat(env, log, tmp_path).start()
    second = worker(env, log)
    try:
        deadline = time.monotonic() + 300
        while done_count() < KILL_AFTER:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        first.kill()
        killed_at = time.monotonic()
        done_at_kill = done_count()
        orphaned = held()
        assert orphaned, "the killed worker held no judgment: nothing was recovered"
        second.start()
        recovered = None
        deadline = time.monotonic() + 600
        while not finished():
            if recovered is None and not (held() & orphaned):
                recovered = time.monotonic() - killed_at
                with log.open("a") as note:
                    note.write(
                        f"\n--- test: orphaned judgments done {recovered:.1f} s after the kill\n"
                    )
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        if recovered is None:
            recovered = time.monotonic() - killed_at
        return recovered, done_at_kill
    finally:
        first.stop()
        second.stop()
        sweeper.stop()


def assert_asked_once(arrivals: Arrivals, stored: list[tuple[str, float]]):
    """No judgment was asked for again once its answer had been stored, and the judgments asked
    twice (asked by the killed worker, its answers not stored) are at most the judge's bound:
    answers are stored as they come, and a worker asks no more than the bound ahead of them."""
    for prompt, completed_at in stored:
        repeats = [t for t in arrivals.times[prompt] if t > completed_at]
        assert repeats == [], prompt[:80]
    asked_again = sum(len(times) - 1 for times in arrivals.times.values())
    assert 0 < asked_again <= settings.JUDGE_CONCURRENCY


# --- Redis and PostgreSQL ---------------------------------------------------------------------


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_killed_worker_on_redis_and_postgresql(postgres, settings, judge_server, tmp_path, client):
    require_service("Redis", "127.0.0.1", 6379)
    from evaluation.services import benchmark_import

    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    release, answers = write_run(tmp_path)
    benchmark = benchmark_import(
        slug="toy-bench", directory=release, plugin="toy-bench", name="Toy-Bench"
    ).benchmark
    judge = benchmark.judges.get(slug="official")
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    judge.save()
    arrivals = Arrivals()
    judge_server.responder = arrivals
    queue = f"floorboard-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    # The shipped settings: only where things are (database, broker, queue, files) is set.
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": BROKER,
        "FLOORBOARD_QUEUE": queue,
        "FLOORBOARD_BENCHMARKS": TOY,
        "FLOORBOARD_MEDIA_ROOT": str(tmp_path / "media"),
        "FLOORBOARD_VAR_DIR": str(tmp_path / "var"),
    }
    previous = (celery_app.conf.broker_url, celery_app.conf.task_default_queue)
    celery_app.conf.broker_url, celery_app.conf.task_default_queue = BROKER, queue
    try:
        subprocess.run(submit_command(answers), cwd=REPO, env=env, check=True, capture_output=True)
        recovered, done_at_kill = kill_and_recover(
            env,
            tmp_path / "worker.log",
            tmp_path,
            done_count=lambda: Judgment.objects.filter(status="done").count(),
            held=lambda: set(
                Judgment.objects.filter(status="running").values_list("pk", flat=True)
            ),
            finished=_scored_pg,
        )
    finally:
        celery_app.conf.broker_url, celery_app.conf.task_default_queue = previous
    assert recovered <= RECOVERY_LIMIT, f"recovered after {recovered:.0f} s"
    board = client.get("/api/benchmarks/toy-bench/leaderboard/").json()
    entry = next(e for e in board["entries"] if e["system"] == "Synthetic 500")
    assert entry["results"] == expected_table()
    assert entry["failed_judgments"] == 0
    assert done_at_kill < Judgment.objects.filter(status="done").count() == JUDGMENTS
    assert_asked_once(
        arrivals,
        [(j.prompt, j.completed_at.timestamp()) for j in Judgment.objects.filter(status="done")],
    )


def _scored_pg() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM evaluation_submission WHERE is_reported = false")
        return [row[0] for row in cursor.fetchall()] == ["scored"]


# --- The filesystem broker and SQLite (the embedded default) -----------------------------------


@pytest.mark.services
def test_killed_worker_on_the_embedded_default(tmp_path, judge_server):
    """Everything out of this process: a SQLite file, the filesystem broker under a var folder,
    the CLI to import and submit, sqlite3 to watch."""
    arrivals = Arrivals()
    judge_server.responder = arrivals
    var = tmp_path / "var"
    database = var / "floorboard.sqlite3"
    env = embedded_env(
        var,
        FLOORBOARD_QUEUE="floorboard",
        FLOORBOARD_BENCHMARKS=TOY,
        OPENAI_BASE_URL=judge_server.url,
        DJANGO_DEBUG="1",
        # The official judge is imported without a price: with no spending limit it judges
        # (recovery from a killed worker is under test here, not spending).
        FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH="0",
        FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE="0",
    )

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )

    manage("migrate", "--noinput")
    release, answers = write_run(tmp_path)
    manage("import_benchmark", "toy-bench", str(release))
    subprocess.run(submit_command(answers), cwd=REPO, env=env, check=True, capture_output=True)

    def query(sql):
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
            return db.execute(sql).fetchall()

    recovered, done_at_kill = kill_and_recover(
        env,
        tmp_path / "worker.log",
        tmp_path,
        done_count=lambda: query("SELECT count(*) FROM evaluation_judgment WHERE status='done'")[0][
            0
        ],
        held=lambda: {
            r[0] for r in query("SELECT id FROM evaluation_judgment WHERE status='running'")
        },
        finished=lambda: (
            [r[0] for r in query("SELECT status FROM evaluation_submission WHERE is_reported = 0")]
            == ["scored"]
        ),
    )
    assert recovered <= RECOVERY_LIMIT, f"recovered after {recovered:.0f} s"
    [(results,)] = query(
        "SELECT s.results FROM evaluation_score s JOIN evaluation_submission m "
        "ON m.id = s.submission_id WHERE m.is_reported = 0"
    )
    assert json.loads(results) == expected_table()
    stored = query("SELECT prompt, completed_at FROM evaluation_judgment WHERE status='done'")
    assert len(stored) == JUDGMENTS and done_at_kill < JUDGMENTS
    assert_asked_once(
        arrivals,
        [
            (prompt, datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp())
            for prompt, at in stored
        ],
    )
