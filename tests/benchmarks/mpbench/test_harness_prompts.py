"""MP-Bench's prompts, byte for byte as its harness fills them, sent for its real examples on the
embedded default (SQLite, filesystem, eager Celery) to a local judge server, and its table of
a partial bundle counted by hand from its rules; a re-score and a retry of the failed judgments
on it. The core's retries, give-up and judgment cache on the example plug-in:
tests/evaluation/test_pipeline.py."""

import json
import re
from pathlib import Path

import pytest

from evaluation.models import Score, Submission
from evaluation.services import failed_judgments_retry, submission_create, submission_rescore
from tests.conftest import completion, copy_examples, zip_tree

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE_U = "scenario_argument-diag_1001-tier_1-task_1868"
EXAMPLE_D = "scenario_argument-diag_1001-tier_2-task_0"
EXAMPLE_T = "scenario_turnBasedGame-diag_112-tier_2-task_1"


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
