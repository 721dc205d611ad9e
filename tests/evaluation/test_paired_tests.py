"""Paired tests and the minimum n of a comparison, against scipy's permutation test, statsmodels'
McNemar test, scipy's binomial test and enumerations written out here; with the edge cases n = 0,
1 and 2, identical systems, disjoint task sets and all-ties."""

import itertools
import random

import numpy as np
import pytest
from scipy.stats import binomtest, permutation_test
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evaluation.benchmarks.base import BenchmarkPlugin, Metric
from evaluation.slices import Column, Contributions, common_tasks, compare, contributions_json
from evaluation.stats import paired_permutation_test, smallest_significant_n

RATE = Metric(key="acc", label="Acc", interval="wilson")
MEAN = Metric(key="score", label="Score", type="mean", interval="bootstrap")
LATENCY = Metric(
    key="lat", label="Lat", type="duration", higher_is_better=False, decimals=1, unit="s"
)
COLUMNS = [Column("acc", RATE), Column("score", MEAN), Column("lat", LATENCY)]


class Plain(BenchmarkPlugin):
    metrics = (RATE, MEAN, LATENCY)


def stored(per_task: dict[str, dict]) -> Contributions:
    return Contributions.from_json(contributions_json(per_task.items()))


def scipy_sign_flip(differences) -> float:
    """scipy's exact paired permutation test of the mean difference (every arrangement)."""
    return permutation_test(
        (np.asarray(differences, dtype=float),),
        np.mean,
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue


def test_the_minimum_n_is_the_fewest_tasks_an_exact_test_can_make_significant():
    # scipy: the smallest n whose most extreme outcome (all n one way) has p < 0.05.
    n = next(n for n in range(1, 20) if binomtest(0, n, 0.5).pvalue < 0.05)
    assert n == 6
    assert smallest_significant_n(0.05) == 6
    assert smallest_significant_n(0.01) == next(
        n for n in range(1, 20) if binomtest(0, n, 0.5).pvalue < 0.01
    )


@pytest.mark.parametrize("seed", range(8))
def test_exact_sign_flip_against_scipy(seed):
    rng = random.Random(seed)
    n = rng.randint(6, 13)
    a = [rng.random() for _ in range(n)]
    b = [rng.random() if rng.random() < 0.7 else a[i] for i in range(n)]  # some exact ties
    ones = np.ones(n)
    found = paired_permutation_test(
        np.array(a), ones, np.array(b), ones, scale=100.0, draws=10_000, seed=1
    )
    assert found.exact
    assert found.differing == sum(x != y for x, y in zip(a, b, strict=True))
    assert found.p_value == pytest.approx(scipy_sign_flip(np.subtract(a, b)), rel=1e-12)


def test_the_issues_cases_one_task_six_tasks_nine_tasks():
    one = np.ones(1)
    # One common task: +50 points, every arrangement is as extreme: p = 1.
    assert paired_permutation_test(
        np.array([1.0]), one, np.array([0.5]), one, scale=100, draws=10_000, seed=1
    ).p_value == pytest.approx(1.0)
    # Six tasks all one way: 2 / 64, the smallest p six tasks allow.
    six = np.ones(6)
    found = paired_permutation_test(six, six, np.zeros(6), six, draws=10_000, seed=1)
    assert found.p_value == pytest.approx(2 / 64) == pytest.approx(scipy_sign_flip(six))


def test_ratio_metrics_with_unequal_denominators_by_enumeration():
    # A latency counted only where a system spoke: (seconds, 1) or (0, 0) per task.
    a = [(1.2, 1), (0.8, 1), (0, 0), (2.5, 1), (1.1, 1), (0.4, 1), (3.0, 1)]
    b = [(1.9, 1), (0, 0), (1.4, 1), (2.6, 1), (2.0, 1), (0.9, 1), (3.0, 1)]
    observed = sum(x for x, _ in a) / sum(d for _, d in a) - sum(x for x, _ in b) / sum(
        d for _, d in b
    )
    extreme = 0
    for swap in itertools.product((False, True), repeat=len(a)):
        pa = [y if s else x for x, y, s in zip(a, b, swap, strict=True)]
        pb = [x if s else y for x, y, s in zip(a, b, swap, strict=True)]
        den_a, den_b = sum(d for _, d in pa), sum(d for _, d in pb)
        if not den_a or not den_b:
            extreme += 1  # no unit left: counted as extreme
            continue
        t = sum(x for x, _ in pa) / den_a - sum(x for x, _ in pb) / den_b
        extreme += abs(t) >= abs(observed) - 1e-12
    expected = extreme / 2 ** len(a)
    found = paired_permutation_test(*np.array(a).T, *np.array(b).T, draws=10_000, seed=1)
    # Task 7 is an exact tie and cannot move the statistic: 6 tasks enumerated.
    assert (found.differing, found.arrangements) == (6, 64)
    assert found.p_value == pytest.approx(expected)


def test_ties_are_compared_on_the_stored_numbers_not_on_rounding_noise():
    # 0.1 + 0.2 differs from 0.3 only in the last bit: the task must not change the p-value.
    clean = [0.5, 0.4, 0.3, 0.6, 0.7, 0.2, 0.45]
    a = np.array(clean + [0.1 + 0.2])
    b = np.array([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.05] + [0.3])
    found = paired_permutation_test(a, np.ones(8), b, np.ones(8), draws=10_000, seed=1)
    assert found.p_value == pytest.approx(scipy_sign_flip(np.subtract(clean, b[:7])))
    assert found.p_value == pytest.approx(2 / 2**7)


def test_identical_and_empty_inputs():
    same = np.array([0.2, 0.5, 0.9, 0.1, 0.4, 0.7])
    ones = np.ones(6)
    found = paired_permutation_test(same, ones, same, ones, draws=10_000, seed=1)
    assert (found.p_value, found.differing) == (1.0, 0)
    empty = np.zeros(0)
    assert paired_permutation_test(empty, empty, empty, empty, draws=10, seed=1) is None


# --- compare(): every metric, the minimum n and the edge cases -------------------------------


def systems(n: int, *, same: bool = False, rng_seed: int = 3):
    rng = random.Random(rng_seed)
    per_a, per_b = {}, {}
    for i in range(n):
        task = f"t{i:02d}"
        per_a[task] = {"acc": (rng.random() < 0.7, 1), "score": (rng.random(), 1)}
        per_b[task] = (
            dict(per_a[task])
            if same
            else {"acc": (rng.random() < 0.4, 1), "score": (rng.random() * 0.5, 1)}
        )
    return per_a, per_b


@pytest.mark.parametrize("n", [0, 1, 2])
def test_below_the_minimum_there_is_a_difference_but_no_p_or_interval(n):
    per_a, per_b = systems(max(n, 1))
    per_a = dict(list(per_a.items())[:n]) or {"x": {"acc": (1, 1)}}
    per_b = dict(list(per_b.items())[:n]) or {"y": {"acc": (1, 1)}}
    a, b = stored(per_a), stored(per_b)
    tasks = common_tasks(a, b)
    assert len(tasks) == n
    found = compare(Plain(), COLUMNS, a, b, tasks)
    for m in found.metrics:
        assert (m.p_value, m.interval, m.test) == (None, None, ""), m
        assert m.note, m
        if n:
            assert m.tasks == n and m.difference is not None
            assert m.note.startswith(f"n = {n} task")
        else:
            assert m.difference is None  # disjoint task sets: nothing to compare


def test_the_one_task_case_of_the_issue_is_not_significant():
    a = stored({"t1": {"score": (1.0, 1)}})
    b = stored({"t1": {"score": (0.5, 1)}})
    (score,) = compare(Plain(), [Column("score", MEAN)], a, b, ["t1"]).metrics
    assert score.difference == pytest.approx(50.0)
    assert not score.significant and score.p_value is None and score.interval is None


def test_identical_systems():
    per_a, _ = systems(12)
    a, b = stored(per_a), stored(per_a)
    found = compare(Plain(), COLUMNS, a, b, common_tasks(a, b))
    by_key = {m.key: m for m in found.metrics}
    assert by_key["acc"].test == "McNemar (exact)"
    assert (by_key["acc"].only_a, by_key["acc"].only_b) == (0, 0)
    assert by_key["acc"].p_value == pytest.approx(sm_mcnemar([[8, 0], [0, 4]]).pvalue) == 1.0
    for m in found.metrics:
        assert m.difference == 0.0 and m.p_value == 1.0 and m.interval == (0.0, 0.0)
    assert found.disagreements == []


def test_all_ties_on_a_mean_give_p_one():
    a = stored({f"t{i}": {"score": (0.5, 1)} for i in range(9)})
    b = stored({f"t{i}": {"score": (0.5, 1)} for i in range(9)})
    (score,) = compare(Plain(), [Column("score", MEAN)], a, b, common_tasks(a, b)).metrics
    assert (score.difference, score.p_value, score.test) == (
        0.0,
        1.0,
        "sign-flip permutation (exact)",
    )


def test_means_on_nine_tasks_use_the_exact_test_not_the_bootstrap():
    per_a, per_b = systems(9, rng_seed=11)
    a, b = stored(per_a), stored(per_b)
    tasks = common_tasks(a, b)
    by_key = {m.key: m for m in compare(Plain(), COLUMNS, a, b, tasks).metrics}
    differences = [per_a[t]["score"][0] - per_b[t]["score"][0] for t in tasks]
    assert by_key["score"].test == "sign-flip permutation (exact)"
    assert by_key["score"].p_value == pytest.approx(scipy_sign_flip(differences))
    acc_b = sum(per_a[t]["acc"][0] and not per_b[t]["acc"][0] for t in tasks)
    acc_c = sum(per_b[t]["acc"][0] and not per_a[t]["acc"][0] for t in tasks)
    assert by_key["acc"].p_value == pytest.approx(
        sm_mcnemar([[0, acc_b], [acc_c, 0]], exact=True).pvalue
    )


def test_slices_get_their_tests_without_intervals():
    per_a, per_b = systems(14, rng_seed=5)
    a, b = stored(per_a), stored(per_b)
    half = [t for t in common_tasks(a, b) if int(t[1:]) % 2 == 0]
    found = compare(Plain(), COLUMNS, a, b, half, draws=0)
    by_key = {m.key: m for m in found.metrics}
    assert by_key["acc"].p_value is not None and by_key["acc"].test == "McNemar (exact)"
    assert by_key["score"].p_value == pytest.approx(
        scipy_sign_flip([per_a[t]["score"][0] - per_b[t]["score"][0] for t in half])
    )
    assert all(m.interval is None for m in found.metrics)


def test_the_interval_resamples_only_the_tasks_that_count_in_the_metric():
    # Latency counts on 8 of 20 tasks; the other 12 must not be resampled.
    per_a, per_b = {}, {}
    rng = random.Random(9)
    counted = []
    for i in range(20):
        task = f"t{i:02d}"
        per_a[task], per_b[task] = {"acc": (1, 1)}, {"acc": (0, 1)}
        if i % 5 < 2:
            per_a[task]["lat"] = (rng.uniform(0.2, 2), 1)
            per_b[task]["lat"] = (rng.uniform(0.2, 2), 1)
            counted.append(task)
    a, b = stored(per_a), stored(per_b)
    (lat,) = compare(Plain(), [Column("lat", LATENCY)], a, b, common_tasks(a, b)).metrics
    assert lat.tasks == 8
    n = len(counted)
    picks = np.random.default_rng(20261201).integers(0, n, size=(10_000, n))
    la = np.array([per_a[t]["lat"][0] for t in counted])
    lb = np.array([per_b[t]["lat"][0] for t in counted])
    diffs = la[picks].mean(1) - lb[picks].mean(1)
    assert lat.interval == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])), rel=1e-9)
