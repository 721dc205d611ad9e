"""Import through the CLI (tasks are runs, clips stored, our prompts versioned, the paper's rows
loaded), the drill-down's context and the rating units."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.benchmarks.base import JudgedSlot, TaskInput
from evaluation.benchmarks.duplexmpe import pages, plugin, processing
from evaluation.benchmarks.duplexmpe.demo import synthetic
from evaluation.models import Benchmark, PromptVersion, Submission

from .test_scoring import silent_log_dict, turn_times

PROMPTS = (
    Path(__file__).resolve().parents[3] / "evaluation" / "benchmarks" / "duplexmpe" / "prompts"
)


@pytest.mark.django_db
def test_import_benchmark_from_the_command_line(release_dir, scenarios):
    out = io.StringIO()
    call_command("import_benchmark", "duplex-mpe", str(release_dir), stdout=out)
    board = Benchmark.objects.get(slug="duplex-mpe")
    assert board.tasks.count() == len(scenarios)
    task = board.tasks.get(task_id=synthetic.run_stem(scenarios[0]))
    assert task.spec == scenarios[0].as_dict()
    clips = {scenarios[0].preamble_clip, *(t.clip for t in scenarios[0].turns)}
    assert set(task.assets) == clips
    assert all(info["size"] == (release_dir / name).stat().st_size
               for name, info in task.assets.items())  # fmt: skip
    prompts = {p.kind: p for p in PromptVersion.objects.filter(benchmark=board)}
    assert {k: p.template for k, p in prompts.items()} == {
        k: (PROMPTS / f"{k}.txt").read_text(encoding="utf-8") for k in ("answer", "ack")
    }
    official = board.judges.get(is_official=True)
    assert (official.provider, official.models_by_kind) == (
        "anthropic", {"answer": "claude-opus-5", "ack": "claude-opus-5"})  # fmt: skip
    rows = Submission.objects.filter(benchmark=board, is_reported=True)
    assert rows.count() == 5
    moshi = rows.get(system__name="Moshi").reported_results
    assert moshi["explicit"]["fresh_onset"]["pct"] == 63.4
    assert moshi["explicit"]["yield"] == {"count": 42, "total": 219, "pct": 19.18}
    assert moshi["implicit"]["paired_presence"]["p"] == 0.614
    # Importing again changes nothing.
    call_command("import_benchmark", "duplex-mpe", str(release_dir), stdout=io.StringIO())
    assert PromptVersion.objects.filter(benchmark=board).count() == 2
    assert "new prompt versions: answer, ack" in out.getvalue()


@pytest.mark.django_db
def test_a_broken_manifest_is_refused_with_its_line(tmp_path, scenarios):
    (tmp_path / "manifest.jsonl").write_text(json.dumps({**scenarios[0].as_dict(),
                                                         "gold_answer": ""}) + "\n")  # fmt: skip
    with pytest.raises(CommandError, match="manifest.jsonl line 1: scenario syn00000"):
        call_command("import_benchmark", "duplex-mpe", str(tmp_path), stdout=io.StringIO())


def _run_with(scenario, segments_ms, *, assets=True):
    data = {"mode": "audio", "log": silent_log_dict(scenario)}
    task = TaskInput(synthetic.run_stem(scenario), scenario.as_dict(), data=data,
                     assets={"output.wav": "out-key"} if assets else {})  # fmt: skip
    task.detection = processing.timing_detection(task, segments_ms)
    task.detection["input_audio"] = {"key": "in-key"}
    return task


def test_the_drill_down_shows_every_window_with_its_verdict():
    scenario = synthetic.scenarios(1, seed=3)[0]
    times = turn_times(scenario)
    t_end = times[scenario.t_turn().index][1]
    first = next(i for i, (_, _, label) in times.items() if label in ("N1", "N2", "N3"))
    task = _run_with(scenario, [(t_end + 800, t_end + 2000),
                                (times[first][0] + 100, times[first][0] + 600)])  # fmt: skip
    task.detection["transcripts"] = {f"answer-{scenario.t_turn().index}": {"text": "At nine.",
                                     "source": "ASR here: m"},
                                     f"ack-{first}": {"text": "Okay.", "source": "ASR here: m"}}  # fmt: skip
    judged = {("answer", f"answer-{scenario.t_turn().index}"):
              JudgedSlot("done", True, {"correct": True, "reason": "same"}),
              ("ack", f"ack-{first}"): JudgedSlot("done", True,
                                                  {"label": "acknowledgement", "reason": "brief"})}  # fmt: skip
    context = plugin.task_context(task, judged=judged)
    windows = context["windows"]
    labels = [t.label for t in scenario.turns]
    silence = sum(label in ("N1", "N2", "N3") for label in labels)
    n4 = labels.count("N4Q")
    assert len(windows) == 1 + silence + n4
    assert windows[0]["timing"] == "fresh onset" and windows[0]["judged"]["outcome"] == "correct"
    ack = next(w for w in windows if w["judged"] and w["judged"]["kind"] == "ack")
    assert ack["judged"]["transcript"] == "Okay." and ack["judged"]["reason"] == "brief"
    assert ack["passed"] is True
    lanes = context["timeline"].lanes
    assert [lane.label for lane in lanes] == ["People", "Assistant (VAD)", "Windows"]
    assert len(lanes[0].spans) == len(labels)
    assert [(s.start, s.end) for s in lanes[1].spans] == sorted([
        ((t_end + 800) / 1000, (t_end + 2000) / 1000),
        ((times[first][0] + 100) / 1000, (times[first][0] + 600) / 1000)])  # fmt: skip
    assert [c.name for c in context["clips"]] == ["input.wav", "output.wav"]
    assert [c.role for c in context["clips"]] == ["context", "response"]


def test_rating_units_of_both_kinds_carry_the_judged_window():
    scenario = synthetic.scenarios(1, seed=3)[0]
    times = turn_times(scenario)
    t_index = scenario.t_turn().index
    t_end = times[t_index][1]
    first = next(i for i, (_, _, label) in times.items() if label in ("N1", "N2", "N3"))
    task = _run_with(scenario, [(t_end + 800, t_end + 2000),
                                (times[first][0] + 100, times[first][0] + 600)])  # fmt: skip
    task.detection["transcripts"] = {f"answer-{t_index}": {"text": "At nine."},
                                     f"ack-{first}": {"text": "Let me explain."}}  # fmt: skip
    judged = {("answer", f"answer-{t_index}"): JudgedSlot("fixed", False,
                                                         {"verdict": False, "outcome": "x"}),
              ("ack", f"ack-{first}"): JudgedSlot("done", False, {"label": "intrusion"})}  # fmt: skip
    (answer,) = plugin.study_units(plugin.study_kind("answer"), task, judged=judged)
    assert answer.judge_label == "incorrect" and answer.response_text == "At nine."
    assert answer.transcript[-1]["text"] == scenario.t_turn().text
    assert scenario.gold_answer in answer.prompt
    assert [(c.start, c.end) for c in answer.clips] == [
        (times[t_index][0] / 1000, (t_end + 2000) / 1000)
    ] * 2
    (ack,) = plugin.study_units(plugin.study_kind("ack"), task, judged=judged)
    assert ack.judge_label == "intrusion" and ack.slot == f"ack-{first}"
    assert [(c.start, c.end) for c in ack.clips] == [
        (times[first][0] / 1000, times[first][1] / 1000 + 0.5)
    ] * 2
    assert [c.role for c in ack.clips] == ["context", "response"]
    assert pages.study_units(plugin.study_kind("ack"), TaskInput("x", {}), judged={}) == []
