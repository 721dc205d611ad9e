"""The offline judge (a labelled heuristic) and the plain-Python scoring pass over files."""

import json

import pytest

from evaluation.benchmarks.msibench.demo.bench import main, score_files, write_offline_answers
from evaluation.benchmarks.msibench.demo.offline import LABEL, atom_decision, offline_output
from evaluation.benchmarks.msibench.demo.synthetic import (
    synthetic_predictions,
    write_predictions,
    write_release,
)
from evaluation.benchmarks.msibench.judge import parse_judge_output
from evaluation.benchmarks.msibench.release import read_release

RUBRIC = {
    "atomic_criteria": [
        {"criterion": "The answer keeps the blue kettle reserved for Theo."},
        {"criterion": "The answer must not reveal the surprise dinner."},
        {"criterion": "回答不得透露搬家日期。"},
    ]
}


def test_offline_answer_is_judge_json_and_says_it_is_no_model():
    raw = offline_output(
        RUBRIC, {"answer_text": "I keep the blue kettle reserved for Theo.", "tool_calls": []}
    )
    payload = json.loads(raw)
    assert payload["rationale"] == LABEL and "not an LLM" in LABEL
    assert [r["passed"] for r in payload["atomic_results"]] == [True, True, True]
    assert all(LABEL in r["rationale"] for r in payload["atomic_results"])
    assert raw == offline_output(
        RUBRIC, {"answer_text": "I keep the blue kettle reserved for Theo.", "tool_calls": []}
    )


def test_offline_prohibitions_and_misses():
    raw = offline_output(
        RUBRIC, {"answer_text": "Sure, the surprise dinner is on; 搬家日期定了。", "tool_calls": []}
    )
    assert [r["passed"] for r in json.loads(raw)["atomic_results"]] == [False, False, False]
    assert atom_decision("The answer names the red bike.", {"red", "bike", "names"})[0]
    assert not atom_decision("The answer names the red bike.", {"green"})[0]


def test_offline_reads_tool_calls_too():
    rubric = {
        "atomic_criteria": [
            {"criterion": "The call reserves the ladder.", "dimension": "tool.call_args"}
        ]
    }
    raw = offline_output(
        rubric,
        {"answer_text": "", "tool_calls": [{"name": "reserve", "arguments": {"item": "ladder"}}]},
    )
    assert json.loads(raw)["atomic_results"][0]["passed"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    write_release(root / "release", audio=False)
    specs = read_release(root / "release", check_audio=False).specs()
    out = {"root": root, "specs": specs}
    for profile in ("strong", "weak", "silent"):
        path = root / f"{profile}.jsonl"
        write_predictions(path, synthetic_predictions(specs, profile=profile))
        answers = root / f"{profile}-answers.jsonl"
        write_offline_answers(root / "release", path, answers, run_mode="turn-based")
        out[profile] = (path, answers)
    return out


def score(files, profile, answers=True):
    path, stored = files[profile]
    return score_files(
        release_dir=files["root"] / "release",
        prediction_files=[path],
        judge_outputs=stored if answers else None,
        run_mode="turn-based",
    )


def test_silent_system(files):
    outcome = score(files, "silent")
    assert outcome["calls_needed"] == 0  # every silent answer is fixed by the guard
    for row in outcome["results"].values():
        assert row["apr"]["count"] == 0
        assert row["prr"]["count"] == 0 and row["prr"]["pct"] == 0.0  # never breaks the silence
        assert row["bir"]["pct"] == 0.0  # never resumes


def test_strong_beats_weak_and_probes_behave(files):
    strong, weak = score(files, "strong")["results"], score(files, "weak")["results"]
    assert json.loads(json.dumps(strong)) == strong  # results are stored as JSON
    for language in ("en", "zh"):
        assert strong[language]["apr"]["count"] > weak[language]["apr"]["count"]
        assert strong[language]["tool"]["pct"] == 100.0
        assert strong[language]["prr"]["pct"] == 0.0 and strong[language]["bir"]["pct"] == 100.0
        assert weak[language]["prr"]["count"] > 0


def test_answers_not_stored_are_counted_as_needed_calls(files):
    outcome = score(files, "strong", answers=False)
    assert outcome["calls_needed"] > 0
    stored = sum(1 for _ in files["strong"][1].read_text("utf-8").splitlines())
    assert outcome["calls_needed"] == stored


def test_stored_answers_parse(files):
    for line in files["weak"][1].read_text("utf-8").splitlines():
        row = json.loads(line)
        spec = files["specs"][row["cell_id"]]
        from evaluation.benchmarks.msibench.judge import atom_specs

        atoms = atom_specs(spec["rubrics"][row["rubric_id"]])
        assert parse_judge_output(row["raw"], atoms=atoms, empty_answer=False)["ok"]


def test_bench_command_prints_figures(tmp_path, capsys):
    main(["--workdir", str(tmp_path), "--size", "small", "--repeat", "1"])
    figures = json.loads(capsys.readouterr().out)
    assert figures["base_cases"] == 24 and figures["calls_needed"] == 0
    assert figures["score_seconds_min"] > 0 and figures["score_peak_traced_mib"] > 0
