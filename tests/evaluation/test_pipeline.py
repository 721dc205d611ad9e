"""The whole path on the embedded default (SQLite, filesystem, eager Celery) against a local
judge server: prompts byte for byte, retries, cache, partial bundles, the table by hand."""

import json
import re
import threading
import time
from pathlib import Path

import pytest

from evaluation.models import Judge, Judgment, Score, Submission, TaskResult
from evaluation.services import failed_judgments_retry, submission_create, submission_rescore
from evaluation.services.pipeline import task_outcomes
from tests.conftest import completion, copy_examples, zip_tree

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE_U = "scenario_argument-diag_1001-tier_1-task_1868"
EXAMPLE_D = "scenario_argument-diag_1001-tier_2-task_0"
EXAMPLE_T = "scenario_turnBasedGame-diag_112-tier_2-task_1"


@pytest.fixture
def fast_retries(settings):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_MAX_ATTEMPTS = 3


@pytest.fixture
def official(mpbench, judge_server):
    judge = mpbench.judges.get(slug="official")
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    judge.save()
    return judge


@pytest.fixture
def examples_zip(mpbench_dir, tmp_path) -> Path:
    root = copy_examples(mpbench_dir, tmp_path / "run" / "nested" / "asr")
    assert root.is_dir()
    return zip_tree(tmp_path / "run", tmp_path / "bundle.zip")


def fill_by_hand(template: str, values: dict[str, str]) -> str:
    """Fill {name} placeholders and unescape {{ }} with plain string operations."""
    pieces = re.split(r"(\{\{|\}\}|\{[a-z_]+\})", template)
    out = []
    for piece in pieces:
        if piece == "{{":
            out.append("{")
        elif piece == "}}":
            out.append("}")
        elif piece.startswith("{") and piece.endswith("}") and piece[1:-1] in values:
            out.append(values[piece[1:-1]])
        else:
            out.append(piece)
    return "".join(out)


def verdict_by_response(body, call):
    """consistent/correct unless the turn-based response is empty, which gets an unparseable reply."""
    prompt = body["messages"][0]["content"]
    if "\nModel's response:\n\n\nOutput:" in prompt:
        return 200, {}, completion("I cannot decide")
    return (
        200,
        {},
        completion(
            json.dumps(
                {"correct": True, "consistent": True, "reasoning": "ok", "extracted_name": "Ben"}
            )
        ),
    )


def test_prompts_are_byte_identical_to_the_harness(
    eager, official, judge_server, examples_zip, mpbench_dir, mpbench_tasks
):
    judge_server.responder = verdict_by_response
    submission = submission_create(
        benchmark=official.benchmark,
        bundle_path=examples_zip,
        system_name="Example",
        judge=official,
        allow_partial=True,
    )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error

    prompts = {
        p.stem: (mpbench_dir / "prompts" / p.name).read_text()
        for p in (mpbench_dir / "prompts").glob("*.txt")
    }
    u, d, t = mpbench_tasks[EXAMPLE_U], mpbench_tasks[EXAMPLE_D], mpbench_tasks[EXAMPLE_T]
    u_full = json.loads((mpbench_dir / "examples" / EXAMPLE_U / "response.json").read_text())[
        "text"
    ].strip()
    t_full = json.loads((mpbench_dir / "examples" / EXAMPLE_T / "response.json").read_text())[
        "text"
    ].strip()
    d_post = (
        "Sure, the Lamborghini logo features a raging bull, while Ferrari's logo is a prancing horse. "
        "So Ben is correct about Lamborghini. And Karen might be thinking of a different car brand, "
        "like Ferrari or Ford Mustang."
    )
    expected = {
        fill_by_hand(
            prompts["understanding"],
            {
                "metainformation": u["metatranscript"],
                "question_text": u["question_text"],
                "answer_text": u["answer_text"],
                "llm_predicted_answer": u_full,
            },
        ): ("gpt-5.4", "understanding"),
        fill_by_hand(
            prompts["speaker_name"],
            {"question": u["question_text"], "gt_name": u["answer_text"], "response": u_full},
        ): ("gpt-5.2", "speaker_name"),
        fill_by_hand(
            prompts["discussion"],
            {"metatranscript": d["metatranscript"], "llm_predicted_answer": d_post},
        ): ("gpt-5.4", "discussion"),
        fill_by_hand(
            prompts["turnbased"],
            {"metatranscript": t["metatranscript"], "llm_predicted_answer": t_full},
        ): ("gpt-5.4", "turnbased"),
    }
    by_prompt = {r["messages"][0]["content"]: r for r in judge_server.requests}
    for prompt, (model, kind) in expected.items():
        body = by_prompt[prompt]  # KeyError: the prompt sent differs from the hand-filled one
        assert body["_path"] == "/v1/chat/completions"
        assert body["model"] == model
        assert body["messages"] == [{"role": "user", "content": prompt}]
        assert (body["temperature"], body["top_p"], body["max_completion_tokens"]) == (
            0.0,
            1.0,
            4096,
        )
        schema = json.loads((mpbench_dir / "prompts" / f"{kind}.schema.json").read_text())
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "mpbench_eval", "strict": True, "schema": schema},
        }

    # By hand from the rules: the 924 tasks missing from the partial bundle did not speak.
    families = [task["family"] for task in mpbench_tasks.values()]
    n_u, n_d, n_t = (
        families.count("understanding"),
        families.count("discussion"),
        families.count("turnbased"),
    )
    n_spk = sum(task["is_speaker_name"] for task in mpbench_tasks.values())
    silent_ok_t = sum(
        1
        for k, task in mpbench_tasks.items()
        if task["family"] == "turnbased" and not task["should_speak"] and k != EXAMPLE_T
    )
    silent_ok_d = sum(
        1
        for k, task in mpbench_tasks.items()
        if task["family"] == "discussion" and not task["should_speak"] and k != EXAMPLE_D
    )

    def pct(k, n):
        return round(100.0 * k / n, 2)

    results = Score.objects.get(submission=submission, judge=official).results
    assert results == {
        "understanding": {
            "n": n_u,
            "overall_acc": {"count": 1, "total": n_u, "pct": pct(1, n_u)},
            "spk_name_acc": {"count": 1, "total": n_spk, "pct": pct(1, n_spk)},
            "latency_s": 6.1,  # 6.08 from the one that spoke
        },
        "discussion": {
            "n": n_d,
            "tt_acc": {"count": 1 + silent_ok_d, "total": n_d, "pct": pct(1 + silent_ok_d, n_d)},
            "app_acc": {"count": 1, "total": n_d, "pct": pct(1, n_d)},
            "latency_s": 4.8,
        },
        "turnbased": {
            "n": n_t,
            "tt_acc": {"count": 1 + silent_ok_t, "total": n_t, "pct": pct(1 + silent_ok_t, n_t)},
            # The example's verdict, plus every silent task that should be silent and got no verdict.
            "app_acc": {"count": 1 + silent_ok_t, "total": n_t, "pct": pct(1 + silent_ok_t, n_t)},
            "latency_s": 7.8,  # 7.76
        },
    }
    assert submission.is_partial and submission.missing_task_count == 924
    # Only turn-based is sent with an empty response; 255 of those got no verdict.
    assert len(judge_server.requests) == 3 + n_t
    score = Score.objects.get(submission=submission, judge=official)
    assert (score.judgments_total, score.judgments_failed) == (3 + n_t, n_t - 1)

    # Re-scoring unchanged work calls nobody and gives the same numbers.
    before = len(judge_server.requests)
    submission_rescore(submission=submission)
    assert len(judge_server.requests) == before
    assert Score.objects.get(submission=submission, judge=official).results == results

    # Retrying the failed judgments calls exactly those again.
    judge_server.responder = lambda body, call: (
        200,
        {},
        completion('{"reasoning": "silent", "consistent": true}'),
    )
    assert failed_judgments_retry(submission=submission) == n_t - 1
    assert len(judge_server.requests) == before + n_t - 1
    score = Score.objects.get(submission=submission, judge=official)
    assert score.judgments_failed == 0
    # Now every silent turn-based task has verdict true: app_acc counts them all.
    assert score.results["turnbased"]["app_acc"]["count"] == n_t


def single_task_zip(mpbench_dir, tmp_path, task_id) -> Path:
    copy_examples(mpbench_dir, tmp_path / "src")
    keep = tmp_path / "one" / task_id
    keep.parent.mkdir()
    (tmp_path / "src" / task_id).rename(keep)
    return zip_tree(tmp_path / "one", tmp_path / f"{task_id}.zip")


@pytest.mark.parametrize(
    ("script", "verdict", "calls", "status"),
    [
        ([(429, {"Retry-After": "0"}, None), (200, {}, '{"consistent": true}')], True, 2, "done"),
        ([(500, {}, "upstream exploded"), (200, {}, '{"consistent": false}')], False, 2, "done"),
        ([(200, {}, "```json maybe```")], None, 1, "failed"),
    ],
    ids=["429-then-success", "500-then-success", "unparseable"],
)
def test_transient_errors_retry_and_bad_answers_are_no_verdict(
    eager,
    fast_retries,
    official,
    judge_server,
    mpbench_dir,
    tmp_path,
    script,
    verdict,
    calls,
    status,
):
    def responder(body, call):
        code, headers, content = script[min(call, len(script)) - 1]
        if code != 200:
            return code, headers, {"error": {"message": content}}
        return code, headers, completion(content)

    judge_server.responder = responder
    bundle = single_task_zip(mpbench_dir, tmp_path, EXAMPLE_D)
    submission = submission_create(
        benchmark=official.benchmark,
        bundle_path=bundle,
        system_name="Retry",
        judge=official,
        allow_partial=True,
    )
    judgment = Judgment.objects.get(uses__task_result__submission=submission, kind="discussion")
    assert (judgment.verdict, judgment.status) == (verdict, status)
    assert judge_server.prompts().count(judgment.prompt) == calls
    assert judgment.attempts == calls
    app = Score.objects.get(submission=submission, judge=official).results["discussion"]["app_acc"]
    assert app["count"] == (1 if verdict else 0)


def test_gives_up_after_max_attempts_and_counts_as_incorrect(
    eager, fast_retries, official, judge_server, mpbench_dir, tmp_path
):
    judge_server.responder = lambda body, call: (503, {}, {"error": "overloaded"})
    bundle = single_task_zip(mpbench_dir, tmp_path, EXAMPLE_D)
    submission = submission_create(
        benchmark=official.benchmark,
        bundle_path=bundle,
        system_name="Down",
        judge=official,
        allow_partial=True,
    )
    judgment = Judgment.objects.get(uses__task_result__submission=submission, kind="discussion")
    assert judgment.status == "failed" and "503" in judgment.error
    assert judge_server.prompts().count(judgment.prompt) == 3
    score = Score.objects.get(submission=submission, judge=official)
    assert score.judgments_failed == score.judgments_total  # every call failed, turn-based too
    assert score.results["discussion"]["app_acc"]["count"] == 0


def test_same_prompt_is_judged_once_across_submissions(
    eager, official, judge_server, mpbench_dir, tmp_path
):
    bundle = single_task_zip(mpbench_dir, tmp_path, EXAMPLE_D)
    first = submission_create(
        benchmark=official.benchmark,
        bundle_path=bundle,
        system_name="A",
        judge=official,
        allow_partial=True,
    )
    calls = len(judge_server.requests)
    second = submission_create(
        benchmark=official.benchmark,
        bundle_path=bundle,
        system_name="B",
        judge=official,
        allow_partial=True,
    )
    assert len(judge_server.requests) == calls
    assert first.scores.get().results == second.scores.get().results


def test_offline_judge_needs_no_server(eager, mpbench, mpbench_dir, tmp_path):
    offline = mpbench.judges.get(slug="offline")
    bundle = zip_tree(copy_examples(mpbench_dir, tmp_path / "ex"), tmp_path / "b.zip")
    submission = submission_create(
        benchmark=mpbench,
        bundle_path=bundle,
        system_name="Offline run",
        judge=offline,
        allow_partial=True,
    )
    submission.refresh_from_db()
    assert submission.status == "scored"
    assert TaskResult.objects.filter(submission=submission, detection__spoke=True).count() == 3
    assert all(j.provider == Judge.Provider.OFFLINE for j in Judgment.objects.all())


def test_outcomes_from_rows_held_in_memory_equal_those_read_back(
    eager, mpbench, mpbench_dir, tmp_path
):
    """Aggregation at the end of judging takes the task results the worker holds since ingest:
    the outcomes it makes of them are the ones read back from the database, in the database's
    order whatever order the rows are held in."""
    offline = mpbench.judges.get(slug="offline")
    bundle = zip_tree(copy_examples(mpbench_dir, tmp_path / "ex"), tmp_path / "b.zip")
    submission = submission_create(
        benchmark=mpbench, bundle_path=bundle, system_name="Held", judge=offline, allow_partial=True
    )
    read, total, failed = task_outcomes(submission=submission, judge=offline)
    held = list(submission.task_results.select_related("task").order_by("-task__task_id"))
    from_rows = task_outcomes(submission=submission, judge=offline, rows=held)
    assert from_rows == (read, total, failed)
    assert [outcome.task_id for outcome in read] == sorted(
        submission.task_results.values_list("task__task_id", flat=True)
    )
    assert sum(outcome.present for outcome in read) == 3 < len(read)


def test_concurrency_per_judge_is_bounded(eager, official, judge_server, mpbench_dir, tmp_path):
    official.concurrency = 4
    official.save()
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def responder(body, call):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return 200, {}, completion('{"consistent": false, "reasoning": "x"}')

    judge_server.responder = responder
    bundle = single_task_zip(mpbench_dir, tmp_path, EXAMPLE_D)
    submission_create(
        benchmark=official.benchmark,
        bundle_path=bundle,
        system_name="Busy",
        judge=official,
        allow_partial=True,
    )
    assert len(judge_server.requests) > 100
    assert state["peak"] == 4
