"""Through a real worker (services tier): the embedded default run as an operator runs it, every
step a command of its own — migrate, import (with the demo's stand-in templates), a Celery worker
process on the filesystem broker, the CLI submitting and waiting — against a local judge server
that answers a 429, a 500 and malformed JSON now and then. The numbers must be those of the
plain pass over the same files and the judge's final answers; a re-score makes no call."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time

import pytest

from evaluation.benchmarks.msibench.demo.synthetic import synthetic_predictions, write_predictions
from evaluation.benchmarks.msibench.release import read_release
from tests.conftest import REPO, embedded_env
from tests.evaluation.test_worker_end_to_end import worker

from .conftest import (
    CHECKOUT_DIR,
    ScriptedJudge,
    expected_results,
    pairs_by_message,
    without_half_width,
)

TROUBLE = ("429", "500", "malformed-once", "malformed-always")


@pytest.mark.services
def test_a_worker_scores_through_429_500_and_malformed_answers(
    tmp_path, judge_server, release_dir, stand_in_checkout
):
    script = ScriptedJudge(TROUBLE)
    judge_server.responder = script
    var = tmp_path / "var"
    database = var / "floorboard.sqlite3"
    env = embedded_env(
        var,
        FLOORBOARD_QUEUE="floorboard",
        FLOORBOARD_JUDGE_BACKOFF_BASE_SECONDS="0.05",
        FLOORBOARD_JUDGE_BACKOFF_MAX_SECONDS="0.1",
        DJANGO_DEBUG="1",
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

    def query(sql, *params):
        with sqlite3.connect(database, timeout=30) as db:
            return db.execute(sql, params).fetchall()

    manage("migrate", "--noinput")
    manage("import_benchmark", "msi-bench", str(release_dir), "--templates", str(stand_in_checkout))
    # The paper's judge, pointed at the local server instead of OpenRouter.
    query("UPDATE evaluation_judge SET base_url = ? WHERE slug = 'official'", judge_server.url)
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    query(
        "UPDATE evaluation_judge SET price_input_per_mtok = 0, price_output_per_mtok = 0 "
        "WHERE slug = 'official'"
    )
    specs = read_release(release_dir).specs()
    rows = synthetic_predictions(specs, profile="weak")
    upload = tmp_path / "weak.jsonl"
    write_predictions(upload, rows)

    log = tmp_path / "worker.log"
    process = worker(env, log).start()
    try:
        submitted = manage(
            "submit",
            str(upload),
            "--benchmark",
            "msi-bench",
            "--system",
            "Weak Turn-based",
            "--publish",
            "--wait",
            "--timeout",
            "240",
            "--json",
        )
        summary = json.loads(submitted.stdout)
        assert summary["status"] == "scored", log.read_text()[-3000:]
        by_message = pairs_by_message(release_dir, stand_in_checkout / CHECKOUT_DIR, rows)
        answers = {by_message[user]: raw for user, raw in script.final.items()}
        expected = expected_results(tmp_path, release_dir, upload, answers, "turn-based")
        assert without_half_width(summary["results"]) == expected
        assert summary["failed_judgments"] == 0
        trouble = {kind: script.order[i] for i, kind in enumerate(TROUBLE)}
        stored = {
            prompt: (status, json.loads(earlier), output)
            for prompt, status, earlier, output in query(
                "SELECT prompt, status, earlier_outputs, output FROM evaluation_judgment"
            )
        }
        assert set(stored) == set(script.order)
        assert script.calls[trouble["429"]] == script.calls[trouble["500"]] == 2
        assert stored[trouble["malformed-once"]][1] != [] and stored[trouble["malformed-once"]][2]
        status, earlier, output = stored[trouble["malformed-always"]]
        assert status == "done" and output is None and len(earlier) == 2

        # A re-score through the worker: the stored answers decide, nothing is asked again.
        calls, computed = (
            len(judge_server.requests),
            query("SELECT computed_at FROM evaluation_score"),
        )
        manage("rescore", "--submission", str(summary["submission"]))
        deadline = time.monotonic() + 120
        while query("SELECT computed_at FROM evaluation_score") == computed or query(
            "SELECT status FROM evaluation_submission WHERE is_reported = 0"
        ) != [("scored",)]:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        assert len(judge_server.requests) == calls
        [(results,)] = query("SELECT results FROM evaluation_score")
        assert without_half_width(json.loads(results)) == expected
    finally:
        process.stop()
