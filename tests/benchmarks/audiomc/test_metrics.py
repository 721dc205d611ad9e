"""APR, ARS and the item rate worked by hand (SPEC §5, §6 rows 1 and 10), rounding, and the
bootstrap redrawn here from its documented recipe."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from evaluation.benchmarks.audiomc.dataset import Task
from evaluation.benchmarks.audiomc.judge import Attempt, decide_item
from evaluation.benchmarks.audiomc.metrics import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    TaskResult,
    aggregate,
    pct_half_up,
    task_results,
)

YES = '{"explanation": "yes", "criteria_met": true}'
NO = '```json\n{"explanation": "no", "criteria_met": false}\n```'
PROSE = "I think it is met."


def task(task_id: str, axis: str, n_items: int, audio_cue=None) -> Task:
    spec = {
        "axis": axis,
        "last_user_turn": 3,
        "user_turns": ["a", "b", "c"],
        "assistant_turns": ["x", "y"],
        "rubric": [f"item {i}" for i in range(n_items)],
    }
    if audio_cue is not None:
        spec["audio_cue"] = audio_cue
    return Task(task_id, spec)


def outcomes(plan: dict[str, list[list]]) -> dict:
    """task id -> per item the raws of its attempts ([] for an item never judged)."""
    return {
        (task_id, index): decide_item([Attempt(n, raw) for n, raw in enumerate(raws)])
        for task_id, items in plan.items()
        for index, raws in enumerate(items)
        if raws
    }


@pytest.fixture
def worked():
    """Six tasks, worked by hand below.

    A  VE 10 items, 9 met            pass 0  9/10
    B  VE  1 item,  met              pass 1  1
    C  IM  2 items, both met         pass 1  1
    D  IM  3 items, no response      pass 0  0    (its stray judgments are not read)
    E  SC  4 items: met, unparseable, failed call, never judged    pass 0  1/4
    F  IR  1 item, not met           pass 0  0
    """
    tasks = [
        task("A", "VOICE_EDITING", 10),
        task("B", "VOICE_EDITING", 1),
        task("C", "INFERENCE_MEMORY", 2),
        task("D", "INFERENCE_MEMORY", 3),
        task("E", "SELF_COHERENCE", 4),
        task("F", "INSTRUCTION_RETENTION", 1),
    ]
    plan = {
        "A": [[YES]] * 9 + [[NO]],
        "B": [[PROSE, YES]],
        "C": [[YES], [YES]],
        "D": [[YES], [YES], [YES]],
        "E": [[YES], [PROSE, PROSE, PROSE], [PROSE, None], []],
        "F": [[NO]],
    }
    results = task_results(
        tasks=tasks, responded={"A", "B", "C", "E", "F"}, outcomes=outcomes(plan)
    )
    return aggregate(results, resamples=200)


def test_overall_is_task_weighted_over_all_dataset_tasks(worked):
    overall = worked["overall"]
    assert (overall["n"], overall["n_pass"], overall["responses"]) == (6, 2, 5)
    assert overall["apr"] | {"ci": None} == {
        "count": 2,
        "total": 6,
        "value": 1 / 3,
        "exact": "1/3",
        "pct": 33.33,
        "ci": None,
    }
    # (9/10 + 1 + 1 + 0 + 1/4 + 0) / 6 = 3.15 / 6 = 0.525
    assert overall["ars"] | {"ci": None} == {
        "sum": "63/20",
        "total": 6,
        "value": 0.525,
        "exact": "21/40",
        "pct": 52.5,
        "ci": None,
    }
    # Item level (diagnostic): 13 of 21 items.
    assert (overall["rubric_items"], overall["rubric_items_met"]) == (21, 13)
    assert overall["rubric_item_rate"] == {
        "count": 13,
        "total": 21,
        "value": 13 / 21,
        "exact": "13/21",
        "pct": 61.9,
    }


def test_per_axis_and_the_micro_macro_traps(worked):
    axes = worked["by_axis"]
    got = {
        axis: (g["n"], g["n_pass"], g["apr"]["pct"], g["ars"]["pct"], g["rubric_item_rate"]["pct"])
        for axis, g in axes.items()
    }
    assert got == {
        # A task with 10 items weighs as much as one with 1: ARS (9/10 + 1)/2 = 95%, while the
        # item rate 10/11 is 90.91%.
        "VOICE_EDITING": (2, 1, 50.0, 95.0, 90.91),
        "INFERENCE_MEMORY": (2, 1, 50.0, 50.0, 40.0),
        "SELF_COHERENCE": (1, 0, 0.0, 25.0, 25.0),
        "INSTRUCTION_RETENTION": (1, 0, 0.0, 0.0, 0.0),
    }
    # Overall is not the mean of the axes: APR 33.33 vs 25, ARS 52.5 vs 42.5.
    assert sum(g["apr"]["pct"] for g in axes.values()) / 4 == 25.0
    assert sum(g["ars"]["pct"] for g in axes.values()) / 4 == 42.5
    assert worked["overall"]["apr"]["pct"] == 33.33 and worked["overall"]["ars"]["pct"] == 52.5


def test_diagnostics_and_complete(worked):
    assert worked["diagnostics"] == {
        "missing_responses": ["D"],
        "judge_parse_failures": [{"id": "E", "rubric_index": 1}],
        "missing_judgments": [{"id": "E", "rubric_index": 3}],
        "failed_items": [{"id": "E", "rubric_index": 2}],
        "ignored_judgments": [],
    }
    assert worked["complete"] is False
    assert worked["audio_cue_split"] is None


def test_edge_10_parse_failures_leave_complete_but_gaps_do_not():
    tasks = [task("A", "VOICE_EDITING", 2)]

    def run(plan):
        return aggregate(
            task_results(tasks=tasks, responded={"A"}, outcomes=outcomes(plan)), resamples=10
        )

    scored = run({"A": [[YES], [PROSE, PROSE, PROSE]]})
    assert scored["complete"] is True
    assert scored["diagnostics"]["judge_parse_failures"] == [{"id": "A", "rubric_index": 1}]
    assert scored["overall"]["apr"]["count"] == 0 and scored["overall"]["ars"]["exact"] == "1/2"
    for gap in ([[YES], []], [[YES], [PROSE]], [[YES], [None]]):
        result = run({"A": gap})
        assert result["complete"] is False
        assert result["overall"]["rubric_items_met"] == 1


def test_edge_01_a_missing_response_counts_as_pass_0_and_m_0():
    tasks = [task("A", "VOICE_EDITING", 1), task("B", "VOICE_EDITING", 1)]
    plan = {"A": [[YES]], "B": [[YES]]}
    result = aggregate(
        task_results(tasks=tasks, responded={"A"}, outcomes=outcomes(plan)), resamples=10
    )
    assert result["overall"]["apr"]["exact"] == "1/2" and result["overall"]["ars"]["exact"] == "1/2"
    assert result["overall"]["rubric_items_met"] == 1
    assert result["diagnostics"]["missing_responses"] == ["B"] and not result["complete"]


# --- rounding --------------------------------------------------------------------------------


def test_percent_is_rounded_half_up_on_the_exact_value():
    assert pct_half_up(Fraction(10929, 20000)) == 54.65  # 54.645: half up, not to even
    assert pct_half_up(Fraction(1, 800)) == 0.13  # 0.125
    assert pct_half_up(Fraction(1, 32)) == 3.13  # 3.125; round(3.125, 2) gives 3.12
    assert pct_half_up(Fraction(2, 3)) == 66.67
    assert pct_half_up(Fraction(-1, 800)) == -0.13
    assert pct_half_up(Fraction(1)) == 100.0 and pct_half_up(Fraction(0)) == 0.0
    assert pct_half_up(Fraction(247, 452)) == 54.65  # the paper's best APR over 452 tasks


def test_an_ars_exactly_on_a_half_rounds_up_in_the_results():
    # One task of 8 items with 1 met and three 1-item tasks not met: ARS = (1/8) / 4 = 3.125%.
    tasks = [task("A", "SELF_COHERENCE", 8)] + [task(t, "SELF_COHERENCE", 1) for t in "BCD"]
    plan = {"A": [[YES]] + [[NO]] * 7, "B": [[NO]], "C": [[NO]], "D": [[NO]]}
    result = aggregate(
        task_results(tasks=tasks, responded=set("ABCD"), outcomes=outcomes(plan)), resamples=10
    )
    assert result["overall"]["ars"]["exact"] == "1/32" and result["overall"]["ars"]["pct"] == 3.13


# --- bootstrap, redrawn from the documented recipe -------------------------------------------


def exact_percentile(sorted_values: list[Fraction], q: Fraction) -> Fraction:
    h = (len(sorted_values) - 1) * q
    low = int(h)
    if low + 1 >= len(sorted_values):
        return sorted_values[low]
    return sorted_values[low] + (h - low) * (sorted_values[low + 1] - sorted_values[low])


def redraw(results: list[TaskResult], *, seed: int, resamples: int):
    """The docstring's recipe, computed independently: exact statistics from per-row counts."""
    results = sorted(results, key=lambda r: r.task_id)  # "ordered by task id"
    n = len(results)
    rng = np.random.Generator(np.random.PCG64(seed))
    idx = rng.integers(0, n, size=(resamples, n))  # one call, as documented
    passes = [int(r.passed) for r in results]
    scores = [Fraction(r.met, r.n_items) for r in results]
    apr, ars = [], []
    for row in idx:
        counts = np.bincount(row, minlength=n)
        apr.append(Fraction(sum(int(c) * p for c, p in zip(counts, passes, strict=True)), n))
        ars.append(sum((int(c) * s for c, s in zip(counts, scores, strict=True)), Fraction(0)) / n)
    intervals = []
    for values in (sorted(apr), sorted(ars)):
        bounds = [exact_percentile(values, q) for q in (Fraction(25, 1000), Fraction(975, 1000))]
        intervals.append(([pct_half_up(b) for b in bounds], values))
    return intervals


def varied_results(count: int, axis_cycle=("VOICE_EDITING", "SELF_COHERENCE")) -> list[TaskResult]:
    rng = np.random.default_rng(11)
    results = []
    for i in range(count):
        n_items = int(rng.integers(1, 16))
        met = int(rng.integers(0, n_items + 1)) if i % 5 else n_items
        states = ("met",) * met + ("not_met",) * (n_items - met)
        results.append(TaskResult(f"t{i}", axis_cycle[i % len(axis_cycle)], i % 7 != 3, states))
    return results


def test_the_documented_bootstrap_constants():
    # Stated in metrics' docstring; changing them moves every published interval.
    assert BOOTSTRAP_SEED == 251214865 and BOOTSTRAP_RESAMPLES == 10_000


def test_bootstrap_intervals_are_reproduced_from_the_documented_draws():
    results = varied_results(30)
    result = aggregate(results)  # the documented defaults: 10,000 resamples, the fixed seed
    (apr_ci, apr_values), (ars_ci, ars_values) = redraw(results, seed=251214865, resamples=10_000)
    assert result["overall"]["apr"]["ci"] == apr_ci
    assert result["overall"]["ars"]["ci"] == ars_ci
    # numpy's own percentile on the same statistics agrees to rounding.
    np_apr = np.percentile([float(v) for v in apr_values], [2.5, 97.5]) * 100
    np_ars = np.percentile([float(v) for v in ars_values], [2.5, 97.5]) * 100
    assert np.allclose(np_apr, apr_ci, atol=0.006) and np.allclose(np_ars, ars_ci, atol=0.006)
    assert apr_ci[0] < result["overall"]["apr"]["pct"] < apr_ci[1]
    assert ars_ci[0] < result["overall"]["ars"]["pct"] < ars_ci[1]
    # Each axis is resampled on its own tasks with a fresh generator of the same seed.
    axis = [r for r in results if r.axis == "SELF_COHERENCE"]
    (axis_apr, _), (axis_ars, _) = redraw(axis, seed=251214865, resamples=10_000)
    assert result["by_axis"]["SELF_COHERENCE"]["apr"]["ci"] == axis_apr
    assert result["by_axis"]["SELF_COHERENCE"]["ars"]["ci"] == axis_ars
    assert result["bootstrap"] == {
        "method": "percentile",
        "unit": "task",
        "level": 0.95,
        "resamples": 10_000,
        "seed": 251214865,
        "generator": "numpy PCG64",
    }


def test_the_order_tasks_arrive_in_does_not_move_the_intervals():
    results = varied_results(30)
    shuffled = list(results)
    np.random.default_rng(3).shuffle(shuffled)
    assert [r.task_id for r in shuffled] != [r.task_id for r in results]
    one, other = aggregate(results), aggregate(shuffled)
    assert one["overall"]["apr"]["ci"] == other["overall"]["apr"]["ci"]
    assert one["overall"]["ars"]["ci"] == other["overall"]["ars"]["ci"]


def test_bootstrap_with_other_settings_and_tiny_groups():
    results = varied_results(12)
    (apr_ci, _), (ars_ci, _) = redraw(results, seed=7, resamples=2_000)
    result = aggregate(results, resamples=2_000, seed=7)
    assert (result["overall"]["apr"]["ci"], result["overall"]["ars"]["ci"]) == (apr_ci, ars_ci)
    one = aggregate([TaskResult("x", "VOICE_EDITING", True, ("met", "not_met"))], resamples=50)
    assert one["overall"]["ars"]["ci"] == [50.0, 50.0] and one["overall"]["apr"]["ci"] == [0.0, 0.0]
    empty_axis = one["by_axis"]["INFERENCE_MEMORY"]
    assert empty_axis["n"] == 0
    assert empty_axis["apr"] == {
        "count": 0,
        "total": 0,
        "value": None,
        "exact": None,
        "pct": None,
        "ci": None,
    }
    assert empty_axis["ars"]["pct"] is None and empty_axis["rubric_item_rate"]["pct"] is None


# --- audio-cue split -------------------------------------------------------------------------


def test_audio_cue_split_over_flagged_inference_memory_tasks():
    results = [
        TaskResult("c1", "INFERENCE_MEMORY", True, ("met", "not_met"), True),  # 1/2
        TaskResult("c2", "INFERENCE_MEMORY", True, ("not_met",), True),  # 0
        TaskResult("s1", "INFERENCE_MEMORY", True, ("met",), False),  # 1
        TaskResult("u1", "INFERENCE_MEMORY", True, ("met",), None),  # no flag: left out
        TaskResult("v1", "VOICE_EDITING", True, ("not_met",), True),  # other axis: left out
    ]
    split = aggregate(results, resamples=20)["audio_cue_split"]
    assert split["audio_cue"]["n"] == 2 and split["semantic"]["n"] == 1
    assert (
        split["audio_cue"]["ars"]["exact"] == "1/4" and split["semantic"]["ars"]["exact"] == "1/1"
    )
    assert split["relative_ars_gap"] == 0.75  # 1 - (1/4) / 1
