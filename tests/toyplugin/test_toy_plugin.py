"""A second benchmark that lives only in the tests goes through the whole site with no change to
the core: import, submit (CLI), the pipeline, the board and its exports, the drill-down, the API
and a rating study. Expected numbers are worked out here from the toy's rules, by hand."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Item
from annotation.services import StudyPlan, study_create
from evaluation.models import Judge, Judgment, Submission
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

# The judge's answer per (task, aspect): the toy judge gives accuracy 1 to a right answer and
# 0 otherwise, and style 0.5 always.
STYLE = 0.5


@pytest.fixture
def registered(settings):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]


@pytest.fixture
def release(tmp_path):
    toy.write_release(tmp_path / "release")
    return tmp_path / "release"


def grade(body: dict, call: int):
    prompt = body["messages"][-1]["content"]
    question = re.search(r"What is (\d+) plus", prompt)
    answer = re.search(r"Answer: (.*)", prompt).group(1)
    right = re.search(rf"\b{2 * int(question.group(1))}\b", answer) is not None
    score = STYLE if "style" in prompt else (1.0 if right else 0.0)
    return 200, {}, completion(json.dumps({"score": score, "why": "toy"}))


def bootstrap(scores: list[float]) -> list[float]:
    """The toy's documented interval, redrawn here: 1,000 resamples of the tasks with numpy's
    default generator seeded 20260101, 2.5th and 97.5th percentiles of the means, in percent."""
    rng = np.random.default_rng(20260101)
    values = np.array(scores)
    draws = rng.integers(0, len(values), size=(1000, len(values)))
    means = values[draws].mean(axis=1)
    return [round(100 * float(np.percentile(means, q)), 2) for q in (2.5, 97.5)]


def test_a_toy_benchmark_goes_through_the_whole_site(
    registered, release, eager, judge_server, tmp_path, client, admin_client
):
    out = io.StringIO()
    call_command("import_benchmark", "toy-bench", str(release), stdout=out)
    assert "6 tasks" in out.getvalue()
    official = Judge.objects.get(benchmark__slug="toy-bench", is_official=True)
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    Judge.objects.filter(pk=official.pk).update(
        base_url=judge_server.url, price_input_per_mtok=0, price_output_per_mtok=0
    )
    judge_server.responder = grade

    # Answers right for q1, q2 and q5 (en: q1-q3; de: q4-q6); q6 missing (allowed partial).
    answers = tmp_path / "answers.jsonl"
    toy.write_answers(answers, correct=2, skip=1)
    lines = answers.read_text().splitlines()
    lines[4] = json.dumps({"id": "q5", "answer": "It is 10"})
    answers.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command(
        "submit",
        str(answers),
        "--benchmark",
        "toy-bench",
        "--system",
        "Toy A",
        "--system-type",
        "large",
        "--option",
        "mode=voice",
        "--allow-partial",
        "--publish",
        "--wait",
        "--json",
        stdout=out,
    )
    summary = json.loads(out.getvalue())
    assert summary["status"] == "scored", summary
    submission = Submission.objects.get(pk=summary["submission"])
    assert submission.options == {"mode": "voice"} and submission.row_group == "large"
    assert submission.facts == {"answered": 5} and submission.is_partial

    # Two graded slots per answered task: 5 tasks x 2 calls; q6 had nothing to grade.
    assert len(judge_server.requests) == 10
    # en: q1 (1.0, 0.5) q2 (1.0, 0.5) q3 (0, 0.5) -> task scores 0.75, 0.75, 0.25.
    en = [0.75, 0.75, 0.25]
    # de: q4 (0, 0.5), q5 (1.0, 0.5), q6 missing (0, 0) -> 0.25, 0.75, 0.0.
    de = [0.25, 0.75, 0.0]
    metrics = {(m["split"], m["metric"]): m for m in summary["metrics"]}
    assert metrics[("en", "quality")]["value"] == pytest.approx(100 * sum(en) / 3, abs=0.005)
    assert metrics[("en", "quality")]["interval"] == bootstrap(en)
    assert metrics[("de", "answered")]["count"] == 2 and metrics[("de", "answered")]["total"] == 3

    # The board: one table per split, the mean with its bootstrap interval; CSV follows.
    board = client.get("/api/benchmarks/toy-bench/leaderboard/?split=de").json()
    [row] = [e for e in board["entries"] if e["system"] == "Toy A"]
    assert row["results"]["de"]["quality"]["pct"] == round(100 * sum(de) / 3, 2), row["results"]
    assert row["intervals"]["de.quality"] == {"low": bootstrap(de)[0], "high": bootstrap(de)[1]}
    assert board["split"] == "de" and [c["key"] for c in board["columns"]] == [
        "de.quality",
        "de.answered",
    ]
    page = client.get("/benchmarks/toy-bench/?split=de").content.decode()
    assert "Toy A" in page and "Large models" in page and "German" in page
    csv_text = client.get("/benchmarks/toy-bench/leaderboard.csv?split=de").content.decode()
    assert "de.quality.ci_low" in csv_text.splitlines()[0]
    charts = client.get("/benchmarks/toy-bench/charts.json?split=en").json()
    assert charts["points"] == 2 and len(charts["figures"]) == 2  # with the paper's row

    # The submission page: the toy's step, its facts, its task filter and columns.
    sub_page = client.get(f"/submissions/{submission.pk}/?topic=math").content.decode()
    assert "Measure: answer lengths" in sub_page and "Answered tasks: 5" in sub_page
    assert ">q1<" in sub_page and ">q2<" not in sub_page  # q1 is math, q2 a fact

    # The drill-down (the engine's default template) shows both slots' judgments.
    task_page = client.get(f"/submissions/{submission.pk}/tasks/q2/").content.decode()
    assert "accuracy grade" in task_page and "style grade" in task_page
    assert "What is 2 plus 2?" in task_page

    # The API: task fields, this submission's data, the step's output, the slots.
    tasks = client.get(f"/api/submissions/{submission.pk}/tasks/?topic=fact").json()
    assert {t["task_id"] for t in tasks["results"]} == {"q2", "q4", "q6"}
    q2 = next(t for t in tasks["results"] if t["task_id"] == "q2")
    assert q2["detection"] == {"length": len("It is 4")} and q2["data"]["answer"] == "It is 4"
    slots = client.get(f"/api/submissions/{submission.pk}/tasks/q2/judgments/").json()
    assert sorted(j["slot"] for j in slots["judgments"]) == ["accuracy", "style"]
    assert {j["output"]["score"] for j in slots["judgments"]} == {1.0, STYLE}

    # A rating study on the toy's units: one item per graded slot, the judge's label hidden.
    study = study_create(
        plan=StudyPlan(
            name="Toy grades",
            slug="toy-grades",
            benchmark=submission.benchmark,
            judge=official,
            kind="grade",
            strata=(submission,),
            guideline_text="Is the answer good?",
            per_stratum=10,
            positive_label="pass",
            negative_label="fail",
        )
    )
    items = list(study.items.order_by("task_id", "slot"))
    assert len(items) == 10  # 5 answered tasks x 2 slots (q6's are empty and skipped)
    q1_accuracy = next(i for i in items if i.task_id == "q1" and i.slot == "accuracy")
    assert q1_accuracy.judge_label == "pass" and q1_accuracy.prompt == "Is its accuracy good?"
    # Style 0.5 passes (a score of at least 0.5); accuracy fails for the wrong q3 and q4.
    assert Item.objects.filter(study=study, judge_label="fail").count() == 2

    # A re-score calls nothing: every request is in the cache.
    before = len(judge_server.requests)
    call_command("rescore", "--submission", str(submission.pk), stdout=io.StringIO())
    submission.refresh_from_db()
    assert submission.status == "scored" and len(judge_server.requests) == before
    assert Judgment.objects.filter(kind="grade").count() == 10
