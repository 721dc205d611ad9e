"""The whole path on the embedded default (SQLite, filesystem, eager Celery) against a local
judge server, on the example plug-in: retries, giving up, retrying the failed judgments, the
judgment cache, the offline judge, the per-judge bound, the table by hand from the toy's rules.
MP-Bench's prompts byte for byte: tests/benchmarks/mpbench/test_harness_prompts.py.

The toy grades each answered task twice (accuracy, style), a score from 0 to 1 each; a task's
score is the mean of its two grades (a missing or unparseable grade is 0); a language's quality
is the mean task score over its tasks (en: q1-q3, de: q4-q6), in percent."""

import dataclasses
import json
import threading
import time

import pytest

from evaluation.models import Judge, Judgment, Score, TaskResult
from evaluation.services import failed_judgments_retry, submission_create, submission_rescore
from evaluation.services.pipeline import task_outcomes
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fast_retries(settings):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_MAX_ATTEMPTS = 3


@pytest.fixture
def official(toybench, judge_server):
    judge = toybench.judges.get(slug="official")
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    judge.save()
    return judge


@pytest.fixture
def one_answer(tmp_path):
    """Only q1 answered, rightly ("It is 2"): two graded slots, two calls."""
    path = tmp_path / "one.jsonl"
    toy.write_answers(path, correct=1, skip=5)
    return path


@pytest.fixture
def mpbench_like_kind(monkeypatch):
    """The toy's grade as MP-Bench's kinds are: one answered call, an unparseable answer no
    verdict (failed, retryable) rather than an outcome."""
    [grade] = toy.ToyBench.judge_kinds
    kind = dataclasses.replace(grade, answer_attempts=1, unparseable="failed")
    monkeypatch.setattr(toy.ToyBench, "judge_kinds", (kind,))


def submit(judge, bundle, name):
    return submission_create(
        benchmark=judge.benchmark,
        bundle_path=bundle,
        system_name=name,
        judge=judge,
        allow_partial=True,
    )


def slot_judgment(submission, slot: str) -> Judgment:
    return Judgment.objects.get(uses__task_result__submission=submission, uses__slot=slot)


@pytest.mark.parametrize(
    ("kind", "script", "verdict", "calls", "status", "quality"),
    [
        # Both grades 1.0: q1 scores 1.0, en's quality (1.0 + 0 + 0) / 3.
        (
            "toy",
            [(429, {"Retry-After": "0"}, None), (200, {}, '{"score": 1.0}')],
            True,
            2,
            "done",
            33.33,
        ),
        # Both grades 0.25 (below 0.5: not met): (0.25 + 0 + 0) / 3 = 8.333...
        (
            "toy",
            [(500, {}, "upstream exploded"), (200, {}, '{"score": 0.25}')],
            False,
            2,
            "done",
            8.33,
        ),
        # The toy asks twice for a parseable answer, then scores the unparseable one (as 0).
        ("toy", [(200, {}, "```json maybe```")], None, 2, "done", 0.0),
        # Asked once and left failed, as MP-Bench's kinds are; a failed grade is 0 as well.
        ("failed", [(200, {}, "```json maybe```")], None, 1, "failed", 0.0),
    ],
    ids=["429-then-success", "500-then-success", "unparseable-outcome", "unparseable-failed"],
)
def test_transient_errors_retry_and_bad_answers_are_no_verdict(
    request,
    eager,
    fast_retries,
    official,
    judge_server,
    one_answer,
    kind,
    script,
    verdict,
    calls,
    status,
    quality,
):
    if kind == "failed":
        request.getfixturevalue("mpbench_like_kind")

    def responder(body, call):
        code, headers, content = script[min(call, len(script)) - 1]
        if code != 200:
            return code, headers, {"error": {"message": content}}
        return code, headers, completion(content)

    judge_server.responder = responder
    submission = submit(official, one_answer, "Retry")
    for slot in toy.SLOTS:
        judgment = slot_judgment(submission, slot)
        assert (judgment.verdict, judgment.status) == (verdict, status)
        assert judge_server.prompts().count(judgment.prompt) == calls
        assert judgment.attempts == calls
    assert len(judge_server.requests) == 2 * calls
    results = Score.objects.get(submission=submission, judge=official).results
    assert results["en"]["quality"]["pct"] == quality
    # Answered: one of en's three, shown to one decimal.
    assert results["en"]["answered"] == {"count": 1, "total": 3, "pct": 33.3}


def test_gives_up_after_max_attempts_counts_as_nothing_and_is_retried_on_request(
    eager, fast_retries, official, judge_server, one_answer
):
    judge_server.responder = lambda body, call: (503, {}, {"error": "overloaded"})
    submission = submit(official, one_answer, "Down")
    for slot in toy.SLOTS:
        judgment = slot_judgment(submission, slot)
        assert judgment.status == "failed" and "503" in judgment.error
        assert judge_server.prompts().count(judgment.prompt) == 3
    score = Score.objects.get(submission=submission, judge=official)
    # Both calls failed; the five unanswered tasks' grades are fixed, not judgments.
    assert (score.judgments_total, score.judgments_failed) == (2, 2)
    assert score.results["en"]["quality"]["pct"] == 0.0

    # Re-scoring unchanged work calls nobody and gives the same numbers.
    before = len(judge_server.requests)
    submission_rescore(submission=submission)
    assert len(judge_server.requests) == before
    assert Score.objects.get(submission=submission, judge=official).results == score.results

    # Retrying the failed judgments calls exactly those again: accuracy 1.0, style 0.5 make
    # q1's score 0.75 and en's quality 0.75 / 3 = 25%.
    judge_server.responder = lambda body, call: (
        200,
        {},
        completion(
            json.dumps({"score": 0.5 if "style" in body["messages"][-1]["content"] else 1.0})
        ),
    )
    assert failed_judgments_retry(submission=submission) == 2
    assert len(judge_server.requests) == before + 2
    score = Score.objects.get(submission=submission, judge=official)
    assert (score.judgments_total, score.judgments_failed) == (2, 0)
    assert score.results["en"]["quality"]["pct"] == 25.0


def test_same_prompt_is_judged_once_across_submissions(eager, official, judge_server, toy_partial):
    judge_server.responder = lambda body, call: (200, {}, completion('{"score": 1.0}'))
    first = submit(official, toy_partial, "A")
    # q1-q3 answered, two grades each; q4-q6's grades are fixed without a call.
    assert len(judge_server.requests) == 6
    second = submit(official, toy_partial, "B")
    assert len(judge_server.requests) == 6
    assert first.scores.get().results == second.scores.get().results


def test_offline_judge_needs_no_server(eager, toybench, toy_partial):
    offline = toybench.judges.get(slug="offline")
    submission = submit(offline, toy_partial, "Offline run")
    submission.refresh_from_db()
    assert submission.status == "scored"
    assert TaskResult.objects.filter(submission=submission).exclude(data={}).count() == 3
    judgments = Judgment.objects.all()
    assert len(judgments) == 6 and all(j.provider == Judge.Provider.OFFLINE for j in judgments)
    # The offline judge gives 1.0 where the answer holds the right number: q1 ("It is 2") and
    # q2 ("It is 4"), not q3 ("Maybe 74", q3's is 6): en's quality (1 + 1 + 0) / 3.
    assert submission.scores.get().results["en"]["quality"]["pct"] == 66.67


def test_outcomes_come_in_the_database_order_of_task_ids(eager, toybench, toy_partial):
    """Aggregation reads every task's outcome back in the order the database sorts the task
    ids (its collation, which Python's sort need not match), the unanswered ones as absent."""
    offline = toybench.judges.get(slug="offline")
    submission = submit(offline, toy_partial, "Read back")
    read, total, failed = task_outcomes(submission=submission, judge=offline)
    by_database = toybench.tasks.order_by("task_id").values_list("task_id", flat=True)
    assert [outcome.task_id for outcome in read] == list(by_database)
    assert [outcome.task_id for outcome in read] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert [outcome.present for outcome in read] == [True] * 3 + [False] * 3
    assert (total, failed) == (6, 0)


def test_concurrency_per_judge_is_bounded(eager, official, judge_server, tmp_path):
    official.concurrency = 4
    official.save()
    every = tmp_path / "every.jsonl"
    toy.write_answers(every, correct=6)  # six tasks answered: twelve calls, three times the bound
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    full = threading.Event()

    def responder(body, call):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] == 4:
                full.set()
        # Held until four are under way (or a second has passed, if fewer ever are): then
        # four at once were allowed, and a fifth would have come in meanwhile.
        full.wait(1.0)
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return 200, {}, completion('{"score": 1.0}')

    judge_server.responder = responder
    submit(official, every, "Busy")
    assert len(judge_server.requests) == 12
    assert state["peak"] == 4
