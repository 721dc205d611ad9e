"""End to end through the engine: import by command from a hand-written JSONL export, submit by
command (partial), the pipeline against a local judge server with faults (a 500 then success;
answers without a JSON boolean; an outage that outlasts the retries), the stored judgments, the
numbers worked out by hand, the CLI's table, retrying the failed item, re-scoring with zero
calls, the board and the task page. The judge prompt is the demo's stand-in (written by code);
expected judge messages are filled here from its file, independently of the code under test."""

from __future__ import annotations

import io
import json
import threading

import pytest
from django.core.management import call_command

from evaluation.models import Benchmark, Judgment, Score, Submission
from evaluation.services import failed_judgments_retry, submission_rescore
from tests.conftest import completion

from .conftest import fill, template_of

pytestmark = pytest.mark.django_db(transaction=True)

T1, T2, T3, T4, T5 = (
    "task-memory-0001",
    "task-retain-0002",
    "task-cohere-0003",
    "task-voiced-0004",
    "task-voiced-0005",
)
REPLIES = {T1: "Bake oat cookies.", T2: "", T3: None, T4: "Friday? No: 7 pm."}  # T5 left out


def answer(met: bool) -> str:
    body = json.dumps(
        {"explanation": f"scripted: {'met' if met else 'not met'}", "criteria_met": met}
    )
    return f"```json\n{body}\n```"


class Script:
    """Answers by the rubric item in the message, with the faults each item meets."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.healed = False

    @staticmethod
    def item(content: str) -> str:
        return content.split("# Rubric item\n", 1)[1].split("\n", 1)[0]

    def __call__(self, body: dict, _call: int):
        item = self.item(body["messages"][-1]["content"])
        with self.lock:
            self.calls[item] = call = self.calls.get(item, 0) + 1
        code = item.split(":")[0].removeprefix("Item ")
        if code == "IM-b" and call == 1:
            return 500, {}, "upstream exploded"
        if code == "SC-a" and not self.healed:
            return 500, {}, "still down"
        if code == "IR-b" and call == 1:
            return 200, {}, completion('{"explanation": "quoted", "criteria_met": "true"}')
        if code == "IR-c":
            return 200, {}, completion("{'explanation': 'Python', 'criteria_met': True}")
        met = code in ("IM-a", "IM-b", "IR-a", "SC-a", "VE-a")
        return 200, {}, completion(answer(met))


def submit(path, *options) -> dict:
    out = io.StringIO()
    call_command(
        "submit",
        str(path),
        "--benchmark",
        "audio-multichallenge",
        "--system",
        "Hand System",
        "--publish",
        "--wait",
        "--json",
        *options,
        stdout=out,
    )
    return json.loads(out.getvalue())


def rate(count, total, pct):
    return (count, total, pct)


def test_judge_faults_numbers_by_hand_retry_and_rescore(
    eager, judge_server, settings, tmp_path, hand_dataset, stand_in_prompt, client
):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.02
    settings.JUDGE_MAX_ATTEMPTS = 3
    settings.JUDGE_CONCURRENCY = 3
    call_command(
        "import_benchmark",
        "audio-multichallenge",
        str(hand_dataset),
        "--judge-prompt",
        str(stand_in_prompt),
        stdout=io.StringIO(),
    )
    benchmark = Benchmark.objects.get(slug="audio-multichallenge")
    judge = benchmark.judges.get(slug="official")
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    judge.save()
    script = Script()
    judge_server.responder = script

    upload = tmp_path / "replies.jsonl"
    upload.write_text(
        "".join(json.dumps({"id": i, "response": r}) + "\n" for i, r in REPLIES.items()), "utf-8"
    )
    summary = submit(upload, "--allow-partial")
    submission = Submission.objects.get(pk=summary["submission"])
    assert summary["status"] == "scored" and summary["incomplete"] is True
    assert submission.row_group == "text-output"

    # What reached the judge: o4-mini, one user message, nothing else in the body.
    template = template_of(stand_in_prompt)
    for body in judge_server.requests:
        assert [k for k in body if not k.startswith("_")] == ["model", "messages"]
        assert body["model"] == "o4-mini"
        assert [m["role"] for m in body["messages"]] == ["user"]
    sent = {m["messages"][0]["content"] for m in judge_server.requests}
    history_t3 = (
        "User: The trip is 300 km.\n\nAssistant: Got it.\n\nUser: We drive at 100 km/h.\n\n"
        "User: We leave at noon.\n\nAssistant: Noon it is.\n\nUser: When do we arrive?\n\n"
        "Assistant: "
    )
    history_t1 = (
        "User: I am allergic to nuts.\n\nAssistant: Noted, no nuts.\n\nUser: Plan a snack.\n\n"
        "Assistant: Apple slices work.\n\nUser: What should I bake?\n\n"
        "Assistant: Bake oat cookies."
    )
    assert fill(template, history_t3, "Item SC-a: says 3 pm") in sent
    assert fill(template, history_t1, "Item IM-a: avoids nuts") in sent
    assert fill(template, history_t1, "Item IM-b: suggests a bake") in sent
    assert len(sent) == 8  # one per rubric item of the four answered tasks; T5 is never judged
    # HTTP calls: 1 + (500, 200) + 1 + 2 answers + 3 answers + 3 failed attempts + 1 + 1.
    assert len(judge_server.requests) == 14

    by_item = {Script.item(j.prompt): j for j in Judgment.objects.all()}
    assert by_item["Item IM-b: suggests a bake"].attempts == 2
    retried = by_item["Item IR-b: uses French"]
    assert retried.status == "done" and retried.output["criteria_met"] is False
    assert len(retried.earlier_outputs) == 1
    never = by_item["Item IR-c: is brief"]
    assert never.status == "done" and never.output is None and len(never.earlier_outputs) == 2
    down = by_item["Item SC-a: says 3 pm"]
    assert down.status == "failed" and "500" in down.error

    # By hand. Items met: T1 2/2 (passes), T2 1/3, T3 0/1 (failed), T4 1/2, T5 none (no reply).
    # APR = 1/5 = 20%; ARS = (1 + 1/3 + 0 + 1/2 + 0) / 5 = 11/30 = 36.666..% -> 36.67 (the
    # item-level rate 4/9 = 44.44% is not it); per axis IM 100/100, IR 0/33.33, SC 0/0,
    # VE APR 0/2 and ARS (1/2 + 0)/2 = 25%.
    score = Score.objects.get(submission=submission, judge=judge)
    results = score.results
    overall = results["overall"]
    assert rate(overall["apr"]["count"], overall["apr"]["total"], overall["apr"]["pct"]) == (
        1,
        5,
        20.0,
    )
    assert overall["ars"]["pct"] == 36.67 and overall["ars"]["sum"] == "11/6"
    assert overall["rubric_item_rate"]["pct"] == 44.44
    axes = {axis: (g["apr"]["pct"], g["ars"]["pct"]) for axis, g in results["by_axis"].items()}
    assert axes == {
        "INFERENCE_MEMORY": (100.0, 100.0),
        "INSTRUCTION_RETENTION": (0.0, 33.33),
        "SELF_COHERENCE": (0.0, 0.0),
        "VOICE_EDITING": (0.0, 25.0),
    }
    diagnostics = results["diagnostics"]
    assert diagnostics["missing_responses"] == [T5]
    assert diagnostics["judge_parse_failures"] == [{"id": T2, "rubric_index": 2}]
    assert diagnostics["failed_items"] == [{"id": T3, "rubric_index": 0}]
    assert results["complete"] is False and score.judgments_failed == 1
    low, high = overall["ars"]["ci"]
    assert low <= 36.67 <= high

    # The command line printed every metric, overall and per axis, with counts.
    table = {row["metric"]: row for row in summary["metrics"]}
    assert (table["overall.apr"]["count"], table["overall.apr"]["total"]) == (1, 5)
    assert (table["overall.ars"]["count"], table["overall.ars"]["total"]) == (1.8333, 5)
    assert (
        table["by_axis.VOICE_EDITING.apr"]["count"],
        table["by_axis.VOICE_EDITING.apr"]["total"],
    ) == (0, 2)
    assert table["by_axis.VOICE_EDITING.ars"]["value"] == 25.0
    assert table["by_axis.INSTRUCTION_RETENTION.ars"]["count"] == 0.3333
    assert len([key for key in table if key.startswith("by_axis.")]) == 8

    # The failed item is visible and retryable; the retry makes only its call.
    page = client.get(f"/submissions/{submission.pk}/tasks/{T3}/").content.decode()
    assert "the judge call failed" in page and "We leave at noon." in page
    assert "(empty: left out of what the judge sees)" in page
    before = len(judge_server.requests)
    script.healed = True
    assert failed_judgments_retry(submission=submission) == 1
    assert len(judge_server.requests) == before + 1
    score.refresh_from_db()
    # T3 now met: APR 2/5 = 40%, ARS (1 + 1/3 + 1 + 1/2 + 0)/5 = 17/30 -> 56.67; SC 100/100.
    assert score.results["overall"]["apr"]["pct"] == 40.0
    assert score.results["overall"]["ars"]["pct"] == 56.67
    assert score.results["by_axis"]["SELF_COHERENCE"]["ars"]["pct"] == 100.0
    assert score.results["diagnostics"]["failed_items"] == [] and score.judgments_failed == 0
    assert score.results["complete"] is False  # T5 still has no reply

    # Re-scoring calls nothing and gives the same numbers.
    before = len(judge_server.requests)
    kept = score.results
    submission_rescore(submission=submission)
    score.refresh_from_db()
    assert len(judge_server.requests) == before and score.results == kept

    # The board: overall and axis columns, the paper's rows and the note on the rest.
    board = client.get("/benchmarks/audio-multichallenge/").content.decode()
    assert "Hand System" in board and "Voice editing" in board
    assert "Gemini 3 Pro Preview (Thinking)" in board and "not transcribed" in board
    charts = client.get("/benchmarks/audio-multichallenge/charts.json").json()
    assert "APR by axis" in json.dumps(charts)
    page = client.get(f"/submissions/{submission.pk}/tasks/{T1}/").content.decode()
    assert "Item IM-b: suggests a bake" in page and "scripted: met" in page
    assert "# Rubric item" in page  # the exact request, under Judgments
