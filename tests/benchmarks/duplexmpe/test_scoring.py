"""Judge requests, parsing, stored outcomes and aggregation on the plug-in interface, with
expected numbers worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.benchmarks.base import JudgedSlot, TaskInput, TaskOutcome
from evaluation.benchmarks.duplexmpe import plugin, processing, schedule, scoring
from evaluation.benchmarks.duplexmpe.demo import synthetic

PROMPTS = (
    Path(__file__).resolve().parents[3] / "evaluation" / "benchmarks" / "duplexmpe" / "prompts"
)


@pytest.fixture(scope="module")
def pair():
    """One scenario (explicit and implicit) with the log a silent model gets."""
    return synthetic.scenarios(1, seed=3)


def silent_log_dict(scenario) -> dict:
    log = schedule.silent_log(scenario)
    return {
        "scenario_id": log.scenario_id,
        "condition": log.condition,
        "preamble": {"start": 0.0, "end": log.preamble_end / 1000},
        "turns": [
            {"index": t.index, "label": t.label, "start": t.start / 1000, "end": t.end / 1000}
            for t in log.turns
        ],  # fmt: skip
        "stream_end": log.stream_end / 1000,
    }


def detection_for(scenario, segments_ms):
    task = TaskInput(synthetic.run_stem(scenario), scenario.as_dict(),
                     data={"mode": "audio", "log": silent_log_dict(scenario)})  # fmt: skip
    return task, processing.timing_detection(task, segments_ms)


def turn_times(scenario):
    log = schedule.silent_log(scenario)
    return {t.index: (t.start, t.end, t.label) for t in log.turns}


def test_requests_fill_our_templates_and_decide_empty_and_missing_transcripts(pair):
    explicit = pair[0]
    times = turn_times(explicit)
    t_index = explicit.t_turn().index
    t_end = times[t_index][1]
    n_window = next(i for i, (_, _, label) in times.items() if label in ("N1", "N2", "N3"))
    n_start = times[n_window][0]
    # An answer 1 s after T; speech inside the first silence window, twice over (two windows
    # would need two turns: one window is enough here).
    task, found = detection_for(explicit, [(t_end + 1000, t_end + 2500),
                                           (n_start + 200, n_start + 900)])  # fmt: skip
    slots = [item["slot"] for item in found["items"]]
    assert slots == sorted(slots, key=lambda s: s.startswith("ack")) and len(slots) == 2
    templates = {k: (PROMPTS / f"{k}.txt").read_text(encoding="utf-8") for k in ("answer", "ack")}
    answer_slot, ack_slot = slots
    found["transcripts"] = {
        answer_slot: {"text": " At nine {sharp}. ", "source": "x"},
        ack_slot: {"text": "", "source": "x"},
    }
    requests = scoring.judgment_requests(spec=explicit.as_dict(), data=task.data,
                                         detection=found, templates=templates)  # fmt: skip
    answer, ack = requests
    expected = (
        templates["answer"]
        .replace("{request}", explicit.t_turn().text)
        .replace("{gold_answer}", explicit.gold_answer)
        .replace("{transcript}", "At nine {sharp}.")
    )
    assert (answer.kind, answer.slot, answer.prompt, answer.fixed) == (
        "answer", answer_slot, expected, None)  # fmt: skip
    assert ack.fixed == {"verdict": False, "outcome": "empty_transcript", "transcript": ""}
    found["transcripts"][ack_slot] = {"text": None, "error": "HTTP 400", "source": "x"}
    ack = scoring.judgment_requests(spec=explicit.as_dict(), data=task.data, detection=found,
                                    templates=templates)[1]  # fmt: skip
    assert ack.fixed == {"verdict": False, "outcome": "missing", "error": "HTTP 400"}


def test_a_low_trust_runs_verdicts_are_its_own_and_decided_without_a_call(pair):
    explicit = pair[0]
    t_end = turn_times(explicit)[explicit.t_turn().index][1]
    task, found = detection_for(explicit, [(t_end + 1000, t_end + 2500)])
    data = {"mode": "unverified", "judgments": [
        {"turn_index": explicit.t_turn().index, "kind": "answer", "transcript": "At nine.",
         "raw": 'Sure: {"correct": true, "reason": "same"}'}]}  # fmt: skip
    (request,) = scoring.judgment_requests(spec=explicit.as_dict(), data=data, detection=found,
                                           templates={})  # fmt: skip
    assert request.prompt == ""
    assert request.fixed["verdict"] is True and request.fixed["outcome"] == "correct"
    assert request.fixed["source"] == "submitted"


@pytest.mark.parametrize(
    ("kind", "raw", "verdict"),
    [
        ("answer", '{"correct": true, "reason": "r"}', True),
        ("answer", '```json\n{"correct": false}\n```', False),
        ("answer", '{"correct": "true"}', None),
        ("ack", 'x {"label": "Acknowledgment"} y', True),
        ("ack", '{"label": "intrusion", "reason": "adds content"}', False),
        ("ack", '{"label": "backchannel"}', None),
    ],
)
def test_parsing(kind, raw, verdict):
    parsed = plugin.parse_output(kind, raw, context={})
    assert parsed.verdict is verdict
    assert (parsed.output is None) is (verdict is None)


@pytest.mark.parametrize(
    ("kind", "slot", "expected"),
    [
        ("answer", None, "missing"),
        ("answer", JudgedSlot("done", True, {"correct": True, "reason": ""}), "correct"),
        ("answer", JudgedSlot("done", None, None), "unparseable"),
        ("answer", JudgedSlot("failed", None, None), "missing"),
        ("answer", JudgedSlot("pending", None, None), "missing"),
        ("ack", JudgedSlot("done", False, {"label": "intrusion"}), "intrusion"),
        ("ack", JudgedSlot("fixed", False, {"verdict": False, "outcome": "empty_transcript"}),
         "empty_transcript"),
    ],
)  # fmt: skip
def test_stored_slots_become_the_outcomes_the_metrics_count(kind, slot, expected):
    assert scoring.slot_outcome(kind, slot) == expected


def outcome(task, found, judged=None, present=True) -> TaskOutcome:
    return TaskOutcome(task.task_id, task.spec, task.data if present else {},
                       found if present else {}, judged or {}, present)  # fmt: skip


def test_a_hand_worked_pair(pair):
    explicit, implicit = pair
    times = turn_times(explicit)
    t_end = times[explicit.t_turn().index][1]
    windows = [i for i, (_, _, label) in times.items() if label in ("N1", "N2", "N3")]
    first = times[windows[0]][0]
    task_e, found_e = detection_for(explicit, [(t_end + 1000, t_end + 2500),
                                               (first + 100, first + 700)])  # fmt: skip
    task_i, found_i = detection_for(implicit, [])
    judged = {
        ("answer", f"answer-{explicit.t_turn().index}"): JudgedSlot("done", True,
                                                                   {"correct": True}),
        ("ack", f"ack-{windows[0]}"): JudgedSlot("done", False, {"label": "intrusion"}),
    }  # fmt: skip
    results = plugin.aggregate([outcome(task_e, found_e, judged), outcome(task_i, found_i)],
                               facts={})  # fmt: skip
    n = len(windows)
    e, i = results["explicit"], results["implicit"]
    assert (e["fresh_onset"], e["presence"], e["accuracy"]) == (
        {"count": 1, "total": 1, "pct": 100.0},
    ) * 3
    assert e["silence"] == {"count": n - 1, "total": n,
                            "pct": round(100 * (n - 1) / n + 1e-9, 2)}  # fmt: skip
    assert i["fresh_onset"] == {"count": 0, "total": 1, "pct": 0.0}
    assert i["accuracy"] == {"count": 0, "total": 0, "pct": None}  # SPEC §8 row 22
    assert i["silence"] == {"count": n, "total": n, "pct": 100.0}
    # One pair, present only when explicit: +100 pp, p = min(1, 2 * 1/2) = 1.
    paired = {"pairs": 1, "both": 0, "neither": 0, "explicit_only": 1, "implicit_only": 0,
              "diff_pp": 100.0, "p": 1.0}  # fmt: skip
    assert results["paired_presence"] == paired
    assert e["paired_presence"] == i["paired_presence"] == paired
    assert results["complete"] is True
    metric = plugin.metric("paired_presence.diff_pp")
    assert metric.value(e) == 100.0


def test_a_run_absent_from_a_partial_upload_is_silent_and_incomplete(pair):
    explicit, implicit = pair
    task_e, found_e = detection_for(explicit, [])
    task_i = TaskInput(synthetic.run_stem(implicit), implicit.as_dict())
    results = plugin.aggregate([outcome(task_e, found_e), outcome(task_i, {}, present=False)],
                               facts={})  # fmt: skip
    assert results["complete"] is False
    assert results["implicit"]["missing_runs"] == 1
    assert results["implicit"]["presence"] == {"count": 0, "total": 1, "pct": 0.0}
    assert results["explicit"]["missing_runs"] == 0


def test_the_paired_p_of_the_papers_check_reaches_both_tables():
    """SPEC §6.7: b = 90 explicit-only, c = 78 implicit-only pairs -> p = 0.396."""
    base = synthetic.scenarios(1, seed=3)
    outcomes = []
    shape = (
        [(True, False)] * 90 + [(False, True)] * 78 + [(True, True)] * 20 + [(False, False)] * 12
    )
    for n, (explicit_present, implicit_present) in enumerate(shape):
        for scenario, present in zip(base, (explicit_present, implicit_present), strict=True):
            spec = {**scenario.as_dict(), "scenario_id": f"p{n:03d}", "pair_id": f"p{n:03d}"}
            timing = {"scenario_id": f"p{n:03d}", "condition": scenario.condition,
                      "pair_id": f"p{n:03d}",
                      "t": {"turn_index": 2, "present": present, "fresh": present,
                            "active_at_end": False, "spans": []},
                      "windows": [], "n4": []}  # fmt: skip
            outcomes.append(TaskOutcome(f"p{n:03d}__{scenario.condition}", spec, {"mode": "audio"},
                                        {"timing": timing, "items": []}))  # fmt: skip
    results = plugin.aggregate(outcomes, facts={})
    for condition in ("explicit", "implicit"):
        paired = results[condition]["paired_presence"]
        assert (paired["explicit_only"], paired["implicit_only"]) == (90, 78)
        assert round(paired["p"], 3) == 0.396
        assert paired["diff_pp"] == 6.0  # 100 (90 - 78) / 200
    assert results["explicit"]["presence"]["count"] == 110


def test_slice_attributes_of_runs():
    runs = synthetic.scenarios(4, seed=3)
    found = [plugin.task_attributes(synthetic.run_stem(r), r.as_dict()) for r in runs[::2]]
    # Shapes in order: T is turn 2 of 7 (exactly a third: middle), 4 of 6, 1 of 5, 4 of 8.
    assert found == [
        {"speakers": "3", "t_position": "middle", "n4_after_t": True},
        {"speakers": "3", "t_position": "late", "n4_after_t": False},
        {"speakers": "3", "t_position": "early", "n4_after_t": False},
        {"speakers": "4", "t_position": "middle", "n4_after_t": True},
    ]


@pytest.mark.parametrize(
    ("key", "numerator", "denominator", "value"),
    [
        ("fresh_onset", 1, 8, 12.5),
        ("silence", 2, 3, 66.67),
        ("silence", 1, 800, 0.13),  # 0.125 rounds half up (Python's round gives 0.12)
        ("yield", 20, 29, None),  # below 30 eligible events: withheld
        ("yield", 20, 30, 66.67),
        ("yield.total", 29, 6, 29),
        ("accuracy", 0, 0, None),
    ],
)
def test_values_from_summed_contributions(key, numerator, denominator, value):
    assert plugin.metric_value(plugin.metric(key), numerator, denominator) == value
