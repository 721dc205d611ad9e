"""Slices and paired comparisons from stored contributions. Expected values come from hand
computation, scipy's binomial test and numpy draws made the documented way (MP-Bench's own
aggregation on each subset: tests/benchmarks/mpbench/test_slices_parity.py)."""

import hashlib
import json
import random

import numpy as np
import pytest
from scipy.stats import binomtest, permutation_test
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evaluation.benchmarks.base import BenchmarkPlugin, Metric
from evaluation.slices import (
    DRAWS,
    SEED,
    Column,
    Contributions,
    common_tasks,
    compare,
    contributions_json,
    mcnemar_critical,
    rank_ranges,
)
from evaluation.stats import mcnemar_exact

RATE = Metric(key="acc", label="Acc", interval="wilson")
MEAN = Metric(key="score", label="Score", type="mean", interval="bootstrap")
LATENCY = Metric(
    key="lat", label="Lat", type="duration", higher_is_better=False, decimals=1, unit="s"
)


class Plain(BenchmarkPlugin):
    metrics = (RATE, MEAN, LATENCY)


def stored(per_task: dict[str, dict]) -> Contributions:
    return Contributions.from_json(contributions_json(per_task.items()))


# --- McNemar ---------------------------------------------------------------------------------


def test_mcnemar_exact_by_hand_and_against_scipy():
    assert round(mcnemar_exact(90, 78), 3) == 0.396
    # b + c = 3, min 1: 2 * (C(3,0) + C(3,1)) / 8 = 1.0; b + c = 10, min 0: 2 / 1024.
    assert mcnemar_exact(2, 1) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(0, 0) == 1.0
    for b, c in [(90, 78), (5, 0), (12, 3), (40, 61), (1, 9), (200, 160), (0, 17)]:
        expected = binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9)


def test_mcnemar_critical_values_against_scipy():
    assert mcnemar_critical(0) == -1
    for n in range(1, 90):
        significant = [k for k in range(n // 2 + 1) if binomtest(k, n, 0.5).pvalue < 0.05]
        assert mcnemar_critical(n) == (max(significant) if significant else -1), n


# --- Paired comparison ------------------------------------------------------------------------


def test_pass_fail_units_get_mcnemar_with_counts_and_disagreeing_tasks():
    a = stored({f"t{i}": {"acc": (p, 1)} for i, p in enumerate([1, 1, 0, 1, 0, 1, 1, 0])})
    b = stored({f"t{i}": {"acc": (p, 1)} for i, p in enumerate([0, 1, 1, 0, 0, 1, 0, 0])})
    tasks = common_tasks(a, b)
    found = compare(Plain(), [Column("acc", RATE)], a, b, tasks)
    (acc,) = found.metrics
    assert found.tasks == 8
    assert (acc.a, acc.b, acc.tasks) == (62.5, 37.5, 8)
    assert acc.difference == pytest.approx(25.0)
    assert acc.test == "McNemar (exact)"
    assert (acc.only_a, acc.only_b) == (3, 1)
    # statsmodels' exact McNemar on the 2x2 table of (A, B) outcomes.
    table = [[2, 3], [1, 2]]  # both passed 2, only A 3, only B 1, neither 2
    assert acc.p_value == pytest.approx(sm_mcnemar(table, exact=True).pvalue)
    assert acc.p_value == pytest.approx(2 * (1 + 4) / 16)  # by hand
    assert [d.task_id for d in found.disagreements] == ["t0", "t2", "t3", "t6"]
    assert found.disagreements[1].outcomes == {"acc": (0, 1, 1)}


def test_only_tasks_both_were_scored_on_count():
    a = stored({f"t{i}": {"acc": (1, 1)} for i in range(1, 9)})  # t1..t8
    b = stored({f"t{i}": {"acc": (0, 1)} for i in range(2, 10)})  # t2..t9
    tasks = common_tasks(a, b)
    assert tasks == [f"t{i}" for i in range(2, 9)]
    (acc,) = compare(Plain(), [Column("acc", RATE)], a, b, tasks).metrics
    assert (acc.units_a, acc.units_b, acc.only_a, acc.only_b, acc.tasks) == (7, 7, 7, 0, 7)
    assert acc.p_value == pytest.approx(binomtest(0, 7, 0.5).pvalue)


def test_units_within_a_task_are_counted_one_by_one_and_tested_by_task():
    # Two windows per task: b and c count windows; the test takes each task's windows together.
    a = stored({"t1": {"acc": [(1, 1), (0, 1)]}, "t2": {"acc": [(1, 1), (1, 1)]}})
    b = stored({"t1": {"acc": [(0, 1), (0, 1)]}, "t2": {"acc": [(1, 1), (0, 1)]}})
    (acc,) = compare(Plain(), [Column("acc", RATE)], a, b, common_tasks(a, b)).metrics
    assert (acc.only_a, acc.only_b, acc.units_a, acc.tasks) == (2, 0, 4, 2)
    assert (acc.a, acc.b) == (75.0, 25.0)
    # Two tasks: below the minimum n, no test, and the note says why.
    assert (acc.p_value, acc.interval, acc.test) == (None, None, "")
    assert "n = 2 tasks" in acc.note and "6" in acc.note


def test_nested_units_are_tested_at_the_task_level():
    # Eight runs of ten windows: A passes every window of runs 0-6 and none of run 7, B none
    # of any. A window-level McNemar would give b = 70, c = 0 (p = 2 / 2**70); the runs are the
    # independent units: 8 runs whose differences are +10 (7 runs) and 0 (one run, a tie).
    a = stored({f"r{i}": {"acc": [(int(i < 7), 1)] * 10} for i in range(8)})
    b = stored({f"r{i}": {"acc": [(0, 1)] * 10} for i in range(8)})
    (acc,) = compare(Plain(), [Column("acc", RATE)], a, b, common_tasks(a, b)).metrics
    assert (acc.only_a, acc.only_b, acc.tasks) == (70, 0, 8)
    assert acc.test == "sign-flip permutation (exact)"
    # Sign-flip test of the 8 per-run differences (scipy, every arrangement): 2 / 2**7.
    expected = permutation_test(
        ([10.0] * 7 + [0.0],),
        np.sum,
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert expected == pytest.approx(2 / 2**7)
    assert acc.p_value == pytest.approx(expected)


def test_paired_bootstrap_is_reproduced_from_its_documented_draws():
    rng = random.Random(7)
    n = 60
    per_a, per_b = {}, {}
    for i in range(n):
        # A mean of per-task proportions, and a latency over tasks where the system spoke.
        per_a[f"t{i:02d}"] = {"score": (rng.random(), 1), "lat": (rng.uniform(0.2, 3), 1)}
        per_b[f"t{i:02d}"] = {"score": (rng.random() * 0.8, 1)}
        if rng.random() < 0.7:
            per_b[f"t{i:02d}"]["lat"] = (rng.uniform(0.5, 4), 1)
    a, b = stored(per_a), stored(per_b)
    tasks = common_tasks(a, b)
    found = {
        m.key: m
        for m in compare(
            Plain(), [Column("score", MEAN), Column("lat", LATENCY)], a, b, tasks
        ).metrics
    }

    # The documented procedure, written out independently: resample task indices, sum each
    # system's numerators and denominators over the resample, difference of the ratios.
    picks = np.random.default_rng(SEED).integers(0, n, size=(DRAWS, n))
    for key, scale in (("score", 100.0), ("lat", 1.0)):
        num_a = np.array([per_a[t].get(key, (0, 0))[0] for t in tasks])
        den_a = np.array([per_a[t].get(key, (0, 0))[1] for t in tasks], dtype=float)
        num_b = np.array([per_b[t].get(key, (0, 0))[0] for t in tasks])
        den_b = np.array([per_b[t].get(key, (0, 0))[1] for t in tasks], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            diffs = scale * (
                num_a[picks].sum(1) / den_a[picks].sum(1)
                - num_b[picks].sum(1) / den_b[picks].sum(1)
            )
        diffs = diffs[np.isfinite(diffs)]
        low, high = np.percentile(diffs, [2.5, 97.5])
        metric = found[key]
        assert metric.interval == pytest.approx((low, high), rel=1e-9, abs=1e-12)
        # Every task differs: more than 20, so the Monte Carlo permutation test, written out
        # from its documentation: swap each task's pair where random() < 0.5.
        assert metric.test == "sign-flip permutation (Monte Carlo, 10,000 draws)"
        swap = np.random.default_rng(SEED).random((10_000, n)) < 0.5
        pa_num = np.where(swap, num_b, num_a).sum(1)
        pa_den = np.where(swap, den_b, den_a).sum(1)
        pb_num = np.where(swap, num_a, num_b).sum(1)
        pb_den = np.where(swap, den_a, den_b).sum(1)
        permuted = scale * (pa_num / pa_den - pb_num / pb_den)
        observed = scale * (num_a.sum() / den_a.sum() - num_b.sum() / den_b.sum())
        extreme = (np.abs(permuted) >= abs(observed) - 1e-9).sum()
        assert metric.p_value == pytest.approx((1 + extreme) / (1 + 10_000))
        expected = scale * (num_a.sum() / den_a.sum() - num_b.sum() / den_b.sum())
        assert metric.difference == pytest.approx(expected)


# --- Rank ranges -----------------------------------------------------------------------------


def test_rank_ranges_by_hand():
    units = 30
    a = stored({f"t{i}": {"acc": (1, 1)} for i in range(units)})  # passes all 30
    b = stored({f"t{i}": {"acc": (int(i < 15), 1)} for i in range(units)})  # 15
    c = stored({f"t{i}": {"acc": (int(i < 14), 1)} for i in range(units)})  # 14, inside B's
    # A-B: b=15, c=0, p = 2/2^15: significant. B-C: 1 against 0, p = 1. A-C: significant.
    assert rank_ranges([a, b, c, None], "acc") == [(1, 1), (2, 3), (2, 3), None]
    # Grouped: each group ranks on its own.
    assert rank_ranges([a, b, c], "acc", ["x", "y", "y"]) == [(1, 1), (1, 2), (1, 2)]


def test_contributions_file_roundtrips_through_json():
    data = contributions_json([("t1", {"a": (1, 1)}), ("t2", {"a": [(0, 1), (1, 1)]})])
    assert json.loads(json.dumps(data)) == {
        "tasks": ["t1", "t2"],
        "tasks_sha": hashlib.sha256(b"t1\nt2").hexdigest()[:16],
        "metrics": {"a": [[0, 1, 1], [1, 0, 1], [1, 1, 1]]},
    }
