"""End to end through the engine: import (with the demo's stand-in judge templates laid out as
in a harness checkout), submit with the CLI, the pipeline against a local judge server that
answers 429, 500 and malformed JSON now and then, the board, the task page, the API, a rating
study, retrying a failed pair, and re-scoring with zero calls. Expected numbers come from the
plain-Python pass (bench.py) over the same files and the judge's final answers, matched to
their pairs by an independent render."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from django.core.management import call_command

from annotation.models import Item
from annotation.services import StudyPlan, study_create
from evaluation.benchmarks.msibench.demo.synthetic import synthetic_predictions, write_predictions
from evaluation.models import Benchmark, Judgment, PromptVersion, Score, Submission
from evaluation.services import failed_judgments_retry, submission_rescore

from .conftest import (
    CHECKOUT_DIR,
    ScriptedJudge,
    expected_results,
    jsonl,
    pairs_by_message,
    without_half_width,
)

pytestmark = pytest.mark.django_db(transaction=True)

DROPPED = "msi-zh-prior-kitchen-002"  # a missing base case: the upload is partial


@pytest.fixture
def judged_world(eager, judge_server, settings, tmp_path, release_dir, stand_in_checkout):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.02
    settings.JUDGE_MAX_ATTEMPTS = 3
    settings.JUDGE_CONCURRENCY = 4
    out = io.StringIO()
    call_command(
        "import_benchmark",
        "msi-bench",
        str(release_dir),
        "--templates",
        str(stand_in_checkout),
        stdout=out,
    )
    benchmark = Benchmark.objects.get(slug="msi-bench")
    judge = benchmark.judges.get(slug="official")
    assert judge.base_url == "https://openrouter.ai/api/v1"  # the paper's endpoint
    judge.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    judge.price_input_per_mtok = judge.price_output_per_mtok = 0
    judge.save()
    script = ScriptedJudge()
    judge_server.responder = script
    return benchmark, judge, script, out.getvalue()


def submit(path, system: str, *options: str) -> dict:
    out = io.StringIO()
    call_command(
        "submit",
        str(path),
        "--benchmark",
        "msi-bench",
        "--system",
        system,
        "--publish",
        "--wait",
        "--json",
        *options,
        stdout=out,
    )
    return json.loads(out.getvalue())


def test_import_submit_judge_board_page_api_study_retry_rescore(
    judged_world, judge_server, tmp_path, release_dir, stand_in_checkout, client
):
    benchmark, judge, script, imported = judged_world
    assert re.match(
        r"msi-bench: \d+ tasks \(\d+ new, 0 changed\); new prompt versions: rubric", imported
    )
    assert "files stored" in imported
    specs = dict(benchmark.tasks.values_list("task_id", "spec"))
    rows = [
        row
        for row in synthetic_predictions(specs, profile="weak", run_mode="full-duplex")
        if row["cell_id"] != DROPPED
    ]
    rows[0]["metadata"] = {"provider_error": {"code": "timeout"}}
    upload = tmp_path / "weak.jsonl"
    write_predictions(upload, rows)

    summary = submit(upload, "Weak Duplex", "--option", "mode=full-duplex", "--allow-partial")
    submission = Submission.objects.get(pk=summary["submission"])
    assert summary["status"] == "scored" and summary["incomplete"] is True
    assert submission.options == {"mode": "full-duplex"}
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Run mode (declared" in page and "full-duplex" in page

    # What reached the judge: the paper's request body, messages as the harness renders them
    # (rendered here independently from the templates imported).
    templates_dir = stand_in_checkout / CHECKOUT_DIR
    by_message = pairs_by_message(release_dir, templates_dir, rows)
    system = (templates_dir / "judge_system.j2").read_text("utf-8")[:-1]
    for body in judge_server.requests:
        assert [k for k in body if not k.startswith("_")] == [
            "model",
            "messages",
            "response_format",
        ]
        assert body["model"] == "deepseek/deepseek-v4-pro"
        assert body["response_format"] == {"type": "json_object"}
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][0]["content"] == system
        assert body["messages"][1]["content"] in by_message
    judgments = {j.prompt: j for j in Judgment.objects.all()}
    assert set(judgments) == set(script.order)  # one judgment per distinct pair
    trouble = {kind: script.order[i] for i, kind in enumerate(script.TROUBLE)}
    assert judgments[trouble["429"]].attempts == 2 and judgments[trouble["500"]].attempts == 2
    once = judgments[trouble["malformed-once"]]
    assert once.status == "done" and once.output is not None and len(once.earlier_outputs) == 1
    always = judgments[trouble["malformed-always"]]
    assert always.status == "done" and always.output is None and len(always.earlier_outputs) == 2
    assert always.raw_output.startswith("Here you go")
    down = judgments[trouble["down"]]
    assert down.status == "failed" and "HTTP 500" in down.error
    score = Score.objects.get(submission=submission, judge=judge)
    assert score.judgments_failed == 1

    # The numbers: the plain pass over the same files with the judge's final answers (the
    # failed pair has none, so it counts as a failed judgment in both).
    answers = {by_message[user]: raw for user, raw in script.final.items()}
    expected = expected_results(tmp_path, release_dir, upload, answers, "full-duplex")
    assert without_half_width(score.results) == expected
    assert set(score.results) == {"en", "zh"} and score.results["zh"]["complete"] is False
    for language in ("en", "zh"):
        assert (
            score.results[language]["apr_half_width"]["value"]
            == expected[language]["apr"]["half_width"]
        )
        assert score.results[language]["bir"]["variant"] == "fullduplex_live"
    # The CLI printed every metric per language with its counts.
    apr = [m for m in summary["metrics"] if m["metric"] == "apr"]
    assert [(m["split"], m["count"], m["total"]) for m in apr] == [
        (lang, expected[lang]["apr"]["count"], expected[lang]["apr"]["total"])
        for lang in ("en", "zh")
    ]

    # A failed pair is visible and retryable; the retry makes only its call.
    before = len(judge_server.requests)
    script.healed = True
    assert failed_judgments_retry(submission=submission) == 1
    assert len(judge_server.requests) == before + 1
    answers = {by_message[user]: raw for user, raw in script.final.items()}
    expected = expected_results(tmp_path, release_dir, upload, answers, "full-duplex")
    score.refresh_from_db()
    assert without_half_width(score.results) == expected and score.judgments_failed == 0

    # An English-only submission appears in the English table only.
    english = [r for r in synthetic_predictions(specs, profile="strong", languages=("en",))]
    english_file = tmp_path / "en.jsonl"
    write_predictions(english_file, english)
    assert submit(english_file, "Strong English")["status"] == "scored"
    boards = {}
    for split in ("en", "zh"):
        response = client.get(f"/api/benchmarks/msi-bench/leaderboard/?split={split}&group=none")
        assert response.status_code == 200
        boards[split] = {e["system"]: e for e in response.json()["entries"]}
    assert "Strong English" in boards["en"] and "Strong English" not in boards["zh"]
    weak = boards["zh"]["Weak Duplex"]
    assert weak["flags"]["incomplete"] and weak["flags"]["verified"]
    assert weak["results"]["zh"]["apr"] == expected["zh"]["apr"]
    gemini = boards["en"]["Gemini 3.1 Pro†"]
    assert gemini["flags"]["reported_in_paper"] and gemini["results"]["en"]["apr"]["pct"] == 66.8
    assert gemini["results"]["en"]["apr_half_width"]["value"] == 3.8
    assert boards["zh"]["Gemini 3.1 Pro†"]["results"]["zh"]["apr"]["pct"] == 52.8
    assert len([e for e in boards["en"].values() if e["flags"]["reported_in_paper"]]) == 15
    ranked = list(boards["en"].values())
    assert [e["rank"] for e in ranked] == sorted(e["rank"] for e in ranked)
    charts = client.get("/benchmarks/msi-bench/charts.json?split=en").json()
    scatter, bars = charts["figures"]
    assert "APR against PRR" in json.dumps(scatter["layout"]["title"])
    assert len([t for t in bars["data"] if t["type"] == "bar"]) == 6
    csv = client.get("/benchmarks/msi-bench/leaderboard.csv?split=en").content.decode()
    header = csv.splitlines()[0].split(",")
    assert {"en.apr", "en.apr.count", "en.apr_half_width", "en.prr.total", "en.prr.probes"} <= set(
        header
    )
    page = client.get("/benchmarks/msi-bench/?split=zh").content.decode()
    assert "Mandarin (Table 4)" in page and "BIR: barge-in (harness v2)" in page
    assert "Gemini 3.1 Pro†" in page and "incomplete" in page

    # The drill-down of a judged case and of a probe.
    judged_cell = next(cell for cell, _ in by_message.values() if cell != rows[0]["cell_id"])
    page = client.get(f"/submissions/{submission.pk}/tasks/{judged_cell}/")
    assert page.status_code == 200
    html = page.content.decode()
    spec = specs[judged_cell]
    first_rubric = spec["rubrics"][spec["judge_rubric_ids"][0]]
    assert first_rubric["atomic_criteria"][0]["criterion"].replace("'", "&#x27;") in html
    assert "Tool-call validator" in html
    assert f"Exact system message ({len(system)} characters)" in html
    assert spec["turns"][0]["speaker"] in html and "L1 " in html
    # Each line's clip plays: the player's signed URL serves the stored WAV.
    player = re.search(r'data-name="lines/01.wav".*?src="([^"]+)"', html, re.S)
    audio = client.get(player.group(1).replace("&amp;", "&"))
    assert audio.status_code == 200
    content = b"".join(audio.streaming_content) if audio.streaming else audio.content
    assert content == (release_dir / spec["path"] / "lines/01.wav").read_bytes()
    probe = next(c for c in specs if c.endswith("s"))
    html = client.get(f"/submissions/{submission.pk}/tasks/{probe}/").content.decode()
    assert "Probe outcome" in html and "full-duplex" in html

    # The API: tasks filtered by the plug-in's filters, and the judgments of one task.
    tasks = client.get(f"/api/submissions/{submission.pk}/tasks/?kind=base&language=en").json()
    assert tasks["count"] == 12
    assert all(t["detection"]["predicted"] in (True, False) for t in tasks["results"])
    body = client.get(f"/api/submissions/{submission.pk}/tasks/{judged_cell}/judgments/").json()
    slots = {j["slot"] for j in body["judgments"]}
    assert slots == set(spec["judge_rubric_ids"])
    for item in body["judgments"]:
        if not item["skipped"]:
            assert item["system_prompt"] == system and item["prompt"] in by_message
            assert item["raw_output"] and item["label"].startswith(f"{item['slot']} (version ")

    # A rating study of rubric atoms, the judge's label per atom.
    study = study_create(
        plan=StudyPlan(
            name="Atoms",
            slug="atoms",
            benchmark=benchmark,
            judge=judge,
            kind="rubric_atom",
            strata=(submission,),
            guideline_text="Judge each criterion.",
            per_stratum=6,
            positive_label="pass",
            negative_label="fail",
        )
    )
    items = list(Item.objects.filter(study=study))
    assert len(items) == 6
    for item in items:
        rubric_id, index = item.slot.split("#")
        cell_spec = specs[item.task_id]
        assert rubric_id in cell_spec["judge_rubric_ids"]
        assert (
            cell_spec["rubrics"][rubric_id]["atomic_criteria"][int(index)]["criterion"]
            in item.prompt
        )
        assert item.judge_label in ("pass", "fail", None)
        assert item.clips and all(len(c["sha256"]) == 64 for c in item.clips)
        assert item.transcript and item.response_text.strip()

    # Re-scoring calls nothing and changes nothing.
    before, results = len(judge_server.requests), score.results
    submission_rescore(submission=submission)
    score.refresh_from_db()
    assert len(judge_server.requests) == before and score.results == results


def test_a_changed_rubric_or_template_is_a_new_version(
    judged_world, judge_server, tmp_path, release_dir, stand_in_checkout
):
    benchmark, judge, script, _ = judged_world
    script.trouble_order = ()  # no trouble here
    specs = dict(benchmark.tasks.values_list("task_id", "spec"))
    upload = tmp_path / "strong.jsonl"
    write_predictions(upload, synthetic_predictions(specs, profile="strong"))
    submission = Submission.objects.get(pk=submit(upload, "Strong")["submission"])
    calls = len(judge_server.requests)

    # The same release again changes nothing.
    out = io.StringIO()
    call_command(
        "import_benchmark",
        "msi-bench",
        str(release_dir),
        "--templates",
        str(stand_in_checkout),
        stdout=out,
    )
    assert "(0 new, 0 changed); new prompt versions: none" in out.getvalue()
    assert "files stored" not in out.getvalue()

    # A changed rubric: its case is updated, and only its pair is judged again.
    copy = tmp_path / "release"
    shutil.copytree(release_dir, copy)
    path = copy / "index/rubrics.jsonl"
    rubrics = jsonl(path)
    target = next(r for r in rubrics if r["case_id"] == "msi-en-scope-kitchen-001")
    target["atomic_criteria"][1]["criterion"] = "The answer names who may change the hold."
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rubrics), "utf-8")
    out = io.StringIO()
    call_command(
        "import_benchmark",
        "msi-bench",
        str(copy),
        "--templates",
        str(stand_in_checkout),
        stdout=out,
    )
    assert "(0 new, 1 changed); new prompt versions: none" in out.getvalue()
    submission_rescore(submission=submission)
    new = judge_server.requests[calls:]
    assert len(new) == 1 and "who may change the hold" in new[0]["messages"][1]["content"]
    link = submission.task_results.get(task__task_id="msi-en-scope-kitchen-001").task_judgments.get(
        slot=target["rubric_id"]
    )
    assert link.label.startswith(f"{target['rubric_id']} (version ")
    assert link.judgment.prompt == new[0]["messages"][1]["content"]

    # A changed template: a new prompt version, a new judge identity, every pair judged again.
    templates = tmp_path / "templates"
    shutil.copytree(stand_in_checkout / CHECKOUT_DIR, templates)
    system = templates / "judge_system.j2"
    system.write_text(system.read_text("utf-8") + "Be brief.\n", "utf-8")
    out = io.StringIO()
    call_command(
        "import_benchmark", "msi-bench", str(copy), "--templates", str(templates), stdout=out
    )
    assert "new prompt versions: rubric" in out.getvalue()
    assert list(
        PromptVersion.objects.filter(benchmark=benchmark).values_list("version", flat=True)
    ) == [2, 1]
    calls = len(judge_server.requests)
    submission_rescore(submission=submission)
    called = judge_server.requests[calls:]
    assert called and all(b["messages"][0]["content"].endswith("Be brief.") for b in called)
    assert len(called) == Judgment.objects.filter(prompt_version__version=2).count()
