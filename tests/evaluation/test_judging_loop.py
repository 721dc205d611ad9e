"""The judging loop (judgments_work) on the toy benchmark against a local judge server: a claim
of a few judgments calls them all at once, up to the judge's bound, and no more judgments are
asked and unstored at once than that bound."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
from django.core.management import call_command
from django.db import OperationalError, connections

from evaluation.models import Judge, Judgment, Submission, TaskJudgment
from evaluation.services.judging import judgments_work
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

BOUND = 16
TASKS = 8  # two judgments a task: 16 in all


class Peak:
    """Calls the judge is answering at once, and the most seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def respond(self, seconds: float):
        def answer(body, call):
            with self.lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            time.sleep(seconds)
            with self.lock:
                self.now -= 1
            return 200, {}, completion(json.dumps({"score": 1.0, "why": "fine"}))

        return answer


@pytest.fixture
def scored_toy(settings, tmp_path, judge_server, eager):
    """A toy submission of 16 judgments, scored by the local judge (answering at once)."""
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0
    settings.MAX_JUDGE_SPEND_PER_MONTH_SITE = 0
    settings.JUDGE_CONCURRENCY = BOUND
    toy.write_release(tmp_path / "release", count=TASKS)
    call_command("import_benchmark", "toy-bench", str(tmp_path / "release"), stdout=io.StringIO())
    Judge.objects.filter(benchmark__slug="toy-bench", is_official=True).update(
        base_url=judge_server.url, concurrency=None
    )
    judge_server.responder = Peak().respond(0)
    answers = tmp_path / "answers.jsonl"
    toy.write_answers(answers, correct=TASKS, count=TASKS)
    call_command(
        "submit", str(answers), "--benchmark", "toy-bench", "--system", "Toy", stdout=io.StringIO()
    )
    submission = Submission.objects.get(is_reported=False)
    assert submission.status == Submission.Status.SCORED
    return submission


def done_prompts(ids: list[int]) -> set[str]:
    """The prompts of ``ids`` stored as done, read on this thread's own connection. The quick
    tier's in-memory SQLite shares one cache between connections, where a read and a write
    under way exclude each other at once ("table is locked") instead of waiting: this reader
    takes no table lock there (read_uncommitted), so the judging loop's writes never fail for
    it, and it reads again should it meet one anyway."""
    sql = (
        "SELECT prompt FROM evaluation_judgment WHERE status = 'done' AND id IN ("
        + ",".join(str(pk) for pk in ids)
        + ")"
    )
    try:
        for _ in range(1000):
            try:
                with connections["default"].cursor() as cursor:
                    if connections["default"].vendor == "sqlite":
                        cursor.execute("PRAGMA read_uncommitted = 1")
                    cursor.execute(sql)
                    return {row[0] for row in cursor.fetchall()}
            except OperationalError:
                time.sleep(0.001)
        raise AssertionError("the judgments stayed locked for a second")
    finally:
        connections["default"].close()


def judgments_of(submission: Submission):
    linked = TaskJudgment.objects.filter(task_result__submission=submission)
    return Judgment.objects.filter(pk__in=linked.values("judgment_id")).order_by("pk")


@pytest.mark.parametrize("claimed", [2, 16])
def test_a_claim_of_n_judgments_calls_min_of_bound_and_n_at_once(scored_toy, judge_server, claimed):
    """The scheduled retry of failed judgments claims just those: all of them are called at
    once (up to the bound), not one after another."""
    mine = judgments_of(scored_toy)
    assert mine.count() == 2 * TASKS
    reopened = list(mine.values_list("pk", flat=True)[:claimed])
    Judgment.objects.filter(pk__in=reopened).update(status=Judgment.Status.PENDING)
    peak = Peak()
    judge_server.responder = peak.respond(0.3)
    asked = len(judge_server.requests)

    settled = judgments_work(
        submission_id=scored_toy.pk,
        judge_id=scored_toy.judge_id,
        deadline=time.monotonic() + 60,
    )
    assert settled
    assert len(judge_server.requests) - asked == claimed
    assert peak.peak == min(BOUND, claimed)
    assert set(mine.values_list("status", flat=True)) == {Judgment.Status.DONE}


def test_no_more_answers_wait_unstored_than_the_bound(scored_toy, judge_server, settings):
    """With a bound of 4, each call the judge receives finds at most 4 judgments asked and not
    yet stored (counted from the database as the call arrives): a worker killed at any moment
    leaves at most the bound to be asked again."""
    Judge.objects.filter(pk=scored_toy.judge_id).update(concurrency=4)
    mine = judgments_of(scored_toy)
    ids = list(mine.values_list("pk", flat=True))
    mine.update(status=Judgment.Status.PENDING)
    arrived: list[str] = []
    unstored: list[int] = []
    lock = threading.Lock()

    def answer(body, call):
        prompt = body["messages"][-1]["content"]
        # The judge's own view: how many prompts it was asked whose answers are not stored.
        with lock:
            arrived.append(prompt)
            asked = set(arrived)
        stored = done_prompts(ids)
        unstored.append(len(asked - stored))
        time.sleep(0.05)
        return 200, {}, completion(json.dumps({"score": 1.0, "why": "fine"}))

    judge_server.responder = answer
    assert judgments_work(
        submission_id=scored_toy.pk, judge_id=scored_toy.judge_id, deadline=time.monotonic() + 60
    )
    assert len(unstored) == 2 * TASKS
    assert max(unstored) <= 4


def test_answers_whose_store_failed_are_stored_as_the_loop_closes_never_asked_again(
    scored_toy, judge_server, monkeypatch
):
    """A database error while answers are stored (a deadlock between two workers, say) ends the
    loop, and the stage is tried again; the answers it had are stored as it closes, and the
    retry asks only what was never answered: each request reaches the judge once."""
    from evaluation.services import judging

    mine = judgments_of(scored_toy)
    mine.update(status=Judgment.Status.PENDING)
    asked = len(judge_server.requests)
    real = judging.statements_run
    failures = []

    def deadlock_once(statements):
        if not failures:
            failures.append(len(statements))
            raise OperationalError("deadlock detected")
        return real(statements)

    monkeypatch.setattr(judging, "statements_run", deadlock_once)
    with pytest.raises(OperationalError):
        judgments_work(
            submission_id=scored_toy.pk,
            judge_id=scored_toy.judge_id,
            deadline=time.monotonic() + 60,
        )
    assert failures
    first = len(judge_server.requests) - asked
    # What the first loop asked is stored: done, none of it put back to pending.
    assert mine.filter(status=Judgment.Status.DONE).count() == first
    assert not mine.filter(status=Judgment.Status.RUNNING).exists()
    assert judgments_work(
        submission_id=scored_toy.pk, judge_id=scored_toy.judge_id, deadline=time.monotonic() + 60
    )
    assert len(judge_server.requests) - asked == 2 * TASKS
    prompts = judge_server.prompts()[asked:]
    assert len(set(prompts)) == len(prompts)
    assert set(mine.values_list("status", flat=True)) == {Judgment.Status.DONE}
    # The scoring's call and this round's one: none counted twice.
    assert set(mine.values_list("attempts", flat=True)) == {2}
