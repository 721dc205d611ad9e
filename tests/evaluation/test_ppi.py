"""Prediction-powered (PPI++) calibration of judged means against ppi_py, hand computation and
simulation."""

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm

from evaluation.stats import Calibrated, Estimate, ppi_labels_needed, ppi_mean, ppi_ratio

Z = 1.959963984540054


def reference_lambda(y: np.ndarray, judged: np.ndarray, judge: np.ndarray) -> float:
    """ppi_py's power-tuned lambda for a mean, computed as ppi_mean_ci computes it."""
    centre = ppi_mean_pointestimate(y, judged, judge, lam=1)
    return float(
        _calc_lam_glm(
            (y - centre)[:, None],
            (judged - centre)[:, None],
            (judge - centre)[:, None],
            np.eye(1),
            clip=True,
        )
    )


def reference(y, judged, judge, lam, *, unit: bool):
    """(point, low, high) from ppi_py under this estimator's finite-population convention.

    ppi_py's point estimate is the same. ppi_py's interval treats the judge's N outcomes as an
    independent infinite-population sample; its rectifier half-width alone (the one ppi_mean_ci
    gives when the "unlabeled" predictions are all zero) times sqrt((1 - n/N) n / (n - 1)) is
    the half-width of a sample without replacement from the N units (sample variance with
    divisor n - 1 and the finite-population correction)."""
    n, size = len(y), len(judge)
    point = float(np.squeeze(ppi_mean_pointestimate(y, judged, judge, lam=lam)))
    low, high = ppi_mean_ci(y, judged, np.zeros(size), alpha=0.05, lam=lam)
    rectifier = float(np.squeeze(high - low)) / 2
    half = rectifier * math.sqrt((1 - n / size) * n / (n - 1))
    low, high = point - half, point + half
    if unit:
        point, low, high = min(max(point, 0.0), 1.0), max(low, 0.0), min(high, 1.0)
    return point, low, high


def random_case(seed: int):
    """A population of N units, people's outcome and a judge of random quality, and a simple
    random sample of n; 0/1 outcomes for even seeds, real scores for odd ones."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(40, 3000))
    n = int(rng.integers(8, max(9, size // 3)))
    while True:
        if seed % 2 == 0:
            human = (rng.random(size) < rng.uniform(0.1, 0.9)).astype(float)
            false_yes, false_no = rng.uniform(0.0, 0.5, size=2)
            flip = np.where(human == 1, rng.random(size) < false_no, rng.random(size) < false_yes)
            judge = np.where(flip, 1 - human, human)
        else:
            human = rng.normal(3.0, 1.5, size)
            judge = rng.uniform(0, 1.2) * human + rng.normal(rng.uniform(-1, 1), 1.0, size)
        index = rng.choice(size, n, replace=False)
        residual = human[index] - judge[index]
        if np.var(human[index]) > 0 and np.var(residual) > 0:
            return human, judge, index


@pytest.mark.parametrize("seed", range(30))
def test_it_matches_ppi_py_on_simple_random_samples(seed):
    human, judge, index = random_case(seed)
    unit = seed % 2 == 0
    fixed = [None, 0.0, 0.37, 1.0][seed % 4]
    found = ppi_mean(judge=judge, labelled=index, human=human[index], tuning=fixed)
    y, judged = human[index], judge[index]
    lam = reference_lambda(y, judged, judge) if fixed is None else fixed
    assert found.tuning == pytest.approx(lam, abs=1e-9)
    point, low, high = reference(y, judged, judge, lam, unit=unit)
    assert found.calibrated.value == pytest.approx(point, abs=1e-9)
    assert found.calibrated.low == pytest.approx(low, abs=1e-9)
    assert found.calibrated.high == pytest.approx(high, abs=1e-9)
    point, low, high = reference(y, judged, judge, 0.0, unit=unit)
    assert (found.classical.value, found.classical.low, found.classical.high) == pytest.approx(
        (point, low, high), abs=1e-9
    )
    assert found.judge == pytest.approx(judge.mean(), abs=1e-12)
    assert found.bias.value == pytest.approx(judge.mean() - found.calibrated.value, abs=1e-12)
    assert found.bias.low == pytest.approx(judge.mean() - found.calibrated.high, abs=1e-12)
    assert found.bias.high == pytest.approx(judge.mean() - found.calibrated.low, abs=1e-12)
    assert (found.labelled, found.population) == (len(index), len(judge))
    # ppi_py's infinite-population interval is never the narrower one.
    wide = ppi_mean_ci(y, judged, judge, alpha=0.05, lam=lam)
    assert float(np.squeeze(wide[1] - wide[0])) >= (
        found.calibrated.high - found.calibrated.low - 1e-12
    )


def test_a_fixed_lambda_at_zero_is_the_classical_estimate_exactly():
    human, judge, index = random_case(4)
    found = ppi_mean(judge=judge, labelled=index, human=human[index], tuning=0.0)
    y = human[index]
    assert found.calibrated == found.classical
    assert found.calibrated.value == y.mean()
    n, size = len(y), len(judge)
    half = Z * math.sqrt((1 - n / size) * np.var(y, ddof=1) / n)
    assert found.classical.low == pytest.approx(max(0.0, y.mean() - half), abs=1e-12)
    assert found.classical.high == pytest.approx(min(1.0, y.mean() + half), abs=1e-12)


def test_a_fixed_lambda_at_one_is_plain_ppi():
    human, judge, index = random_case(6)
    found = ppi_mean(judge=judge, labelled=index, human=human[index], tuning=1.0)
    expected = judge.mean() + (human[index] - judge[index]).mean()
    assert found.tuning == 1.0
    assert found.calibrated.value == pytest.approx(expected, abs=1e-12)


def test_tuned_lambda_is_clipped_at_one_as_ppi_py_clips_it():
    # A judge that compresses people's scores by half: the unclipped optimum is about 2.
    rng = np.random.default_rng(11)
    human = rng.normal(0, 1, 400)
    judge = 0.5 * human + rng.normal(0, 0.01, 400)
    index = rng.choice(400, 40, replace=False)
    found = ppi_mean(judge=judge, labelled=index, human=human[index])
    assert reference_lambda(human[index], judge[index], judge) == 1.0
    assert found.tuning == 1.0
    point, low, high = reference(human[index], judge[index], judge, 1.0, unit=False)
    assert (found.calibrated.value, found.calibrated.low, found.calibrated.high) == (
        pytest.approx((point, low, high), abs=1e-9)
    )


def test_nothing_labelled_gives_no_calibrated_value():
    judge = np.array([1.0, 0.0, 1.0])
    empty = np.array([], dtype=int)
    assert ppi_mean(judge=judge, labelled=empty, human=np.array([])) is None
    assert (
        ppi_ratio(
            judge_num=judge,
            judge_den=np.ones(3),
            labelled=empty,
            human_num=np.array([]),
            human_den=np.array([]),
        )
        is None
    )


def test_one_label_gives_the_point_but_the_widest_interval():
    judge = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    found = ppi_mean(judge=judge, labelled=np.array([2]), human=np.array([0.0]), tuning=0.5)
    # 0.5 * 3/5 + (0 - 0.5 * 1) = -0.2, clipped to the range of a rate.
    assert found.calibrated == Estimate(value=0.0, low=0.0, high=1.0)
    assert found.classical == Estimate(value=0.0, low=0.0, high=1.0)
    # Tuned: one label carries no covariance, so lambda is 0 as in ppi_py.
    tuned = ppi_mean(judge=judge, labelled=np.array([2]), human=np.array([0.0]))
    assert tuned.tuning == 0.0
    assert reference_lambda(np.array([0.0]), np.array([1.0]), judge) == 0.0
    # Real-valued outcomes have no natural bounds: the interval is unbounded.
    scores = ppi_mean(judge=judge * 7, labelled=np.array([2]), human=np.array([3.0]), tuning=1)
    assert scores.calibrated.value == pytest.approx(7 * 3 / 5 + 3 - 7)
    assert (scores.calibrated.low, scores.calibrated.high) == (-math.inf, math.inf)


def test_every_unit_labelled_is_people_s_mean_exactly():
    judge = np.array([1.0, 0.0, 1.0, 1.0])
    human = np.array([0.0, 0.0, 1.0, 1.0])
    found = ppi_mean(judge=judge, labelled=np.arange(4), human=human)
    for got, want in ((found.calibrated, 0.5), (found.bias, 0.25)):
        assert (got.value, got.low, got.high) == pytest.approx((want, want, want), abs=1e-12)
        assert got.low == got.high


def test_people_agreeing_with_the_judge_everywhere():
    rng = np.random.default_rng(3)
    judge = (rng.random(300) < 0.6).astype(float)
    index = rng.choice(300, 30, replace=False)
    human = judge[index]
    found = ppi_mean(judge=judge, labelled=index, human=human)
    lam = reference_lambda(human, judge[index], judge)
    assert found.tuning == pytest.approx(lam, abs=1e-9)
    point, low, high = reference(human, judge[index], judge, lam, unit=True)
    assert (found.calibrated.value, found.calibrated.low, found.calibrated.high) == (
        pytest.approx((point, low, high), abs=1e-9)
    )
    # Plain PPI: the residual is 0 on every label and the estimate is the judge's mean, but 30
    # agreements do not prove the 270 others agree: the residual's variance is taken as that
    # of one more label differing by 1, n / (n + 1)^2.
    plain = ppi_mean(judge=judge, labelled=index, human=human, tuning=1.0)
    assert plain.calibrated.value == pytest.approx(judge.mean(), abs=1e-12)
    half = Z * math.sqrt((1 - 30 / 300) * (30 / 31**2) / 30)
    assert plain.calibrated.low == pytest.approx(judge.mean() - half, abs=1e-12)
    assert plain.calibrated.high == pytest.approx(judge.mean() + half, abs=1e-12)
    assert plain.bias.low < 0 < plain.bias.high


def test_a_judge_that_is_always_wrong_gets_no_weight():
    rng = np.random.default_rng(8)
    human_all = (rng.random(500) < 0.3).astype(float)
    judge = 1 - human_all
    index = rng.choice(500, 50, replace=False)
    found = ppi_mean(judge=judge, labelled=index, human=human_all[index])
    assert reference_lambda(human_all[index], judge[index], judge) == 0.0
    assert found.tuning == 0.0
    assert found.calibrated == found.classical
    assert found.calibrated.value == human_all[index].mean()
    assert found.bias.value == pytest.approx(judge.mean() - human_all[index].mean())
    # At lambda 1 it still is unbiased: the judge's mean plus the mean of 2 y - 1.
    plain = ppi_mean(judge=judge, labelled=index, human=human_all[index], tuning=1.0)
    expected = judge.mean() + (2 * human_all[index] - 1).mean()
    assert plain.calibrated.value == pytest.approx(expected, abs=1e-12)


def test_bad_input_is_named():
    judge = np.array([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="twice"):
        ppi_mean(judge=judge, labelled=np.array([1, 1]), human=np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="outside"):
        ppi_mean(judge=judge, labelled=np.array([3]), human=np.array([1.0]))
    with pytest.raises(ValueError, match="human has 1 values, expected 2"):
        ppi_mean(judge=judge, labelled=np.array([0, 1]), human=np.array([1.0]))
    with pytest.raises(ValueError, match="judge has a missing"):
        ppi_mean(judge=np.array([1.0, np.nan]), labelled=np.array([0]), human=np.array([1.0]))
    with pytest.raises(ValueError, match="tuning"):
        ppi_mean(judge=judge, labelled=np.array([0]), human=np.array([1.0]), tuning=1.5)
    with pytest.raises(ValueError, match="strata"):
        ppi_mean(judge=judge, labelled=np.array([0]), human=np.array([1.0]), strata=np.array([0]))


# --- Stratified samples ------------------------------------------------------------------------


def test_a_tiny_stratified_sample_by_hand():
    # Stratum a: 5 units, 3 labelled (weight 5/8); stratum b: 3 units, 2 labelled (weight 3/8).
    judge = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=float)
    strata = np.array(["a"] * 5 + ["b"] * 3)
    labelled = np.array([0, 1, 2, 5, 6])
    human = np.array([1, 1, 0, 1, 1], dtype=float)
    found = ppi_mean(judge=judge, labelled=labelled, human=human, strata=strata, tuning=0.5)
    # Judge's mean 4/8. Residuals y - j/2: a [1/2, 1, -1/2] (mean 1/3, S^2 7/12);
    # b [1, 1/2] (mean 3/4, S^2 1/8). Estimate 1/2 * 1/2 + 5/8 * 1/3 + 3/8 * 3/4 = 71/96.
    # Variance (5/8)^2 (1 - 3/5) (7/12) / 3 + (3/8)^2 (1 - 2/3) (1/8) / 2
    #        = 35/1152 + 3/1024 = 307/9216.
    assert found.judge == 0.5
    assert found.calibrated.value == pytest.approx(71 / 96, abs=1e-12)
    half = Z * math.sqrt(307 / 9216)
    assert found.calibrated.low == pytest.approx(71 / 96 - half, abs=1e-12)
    assert found.calibrated.high == 1.0  # 71/96 + 0.358 clipped to the range of a rate
    # Classical: a [1, 1, 0] (mean 2/3, S^2 1/3); b [1, 1] shows no spread, so S^2 is that of
    # one more differing label, 2/9. Estimate 5/8 * 2/3 + 3/8 * 1 = 19/24; variance
    # (5/8)^2 (2/5) (1/3) / 3 + (3/8)^2 (1/3) (2/9) / 2 = 5/288 + 1/192 = 13/576.
    assert found.classical.value == pytest.approx(19 / 24, abs=1e-12)
    half = Z * math.sqrt(13 / 576)
    assert found.classical.low == pytest.approx(19 / 24 - half, abs=1e-12)
    assert found.classical.high == 1.0
    # Tuned: covariance in a is (1/3 * 1/3 - 1/3 * 2/3 - 2/3 * 1/3) / 3 = -1/9, in b 0: the
    # judge gets no weight.
    tuned = ppi_mean(judge=judge, labelled=labelled, human=human, strata=strata)
    assert tuned.tuning == 0.0
    assert tuned.calibrated == tuned.classical


def test_stratified_estimate_is_the_horvitz_thompson_one_and_one_stratum_is_srs():
    rng = np.random.default_rng(21)
    size = 900
    strata = rng.integers(0, 4, size)
    human = (rng.random(size) < 0.2 + 0.15 * strata).astype(float)
    judge = np.where(rng.random(size) < 0.2, 1 - human, human)
    labelled = np.concatenate(
        [rng.choice(np.flatnonzero(strata == h), 10 + 8 * h, replace=False) for h in range(4)]
    )
    found = ppi_mean(
        judge=judge, labelled=labelled, human=human[labelled], strata=strata, tuning=0.6
    )
    sizes = np.bincount(strata)
    drawn = np.bincount(strata[labelled])
    inclusion = drawn[strata[labelled]] / sizes[strata[labelled]]
    expected = (
        0.6 * judge.mean() + np.sum((human[labelled] - 0.6 * judge[labelled]) / inclusion) / size
    )
    assert found.calibrated.value == pytest.approx(expected, abs=1e-12)
    # One stratum code for every unit is the simple random sample.
    same = ppi_mean(
        judge=judge, labelled=labelled, human=human[labelled], strata=np.zeros(size), tuning=0.6
    )
    plain = ppi_mean(judge=judge, labelled=labelled, human=human[labelled], tuning=0.6)
    assert same == plain


def test_a_stratum_nobody_labelled_counts_at_the_judge_s_mean_with_the_widest_interval():
    judge = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    strata = np.array([0, 0, 0, 0, 1, 1])
    labelled = np.array([0, 1, 2])
    human = np.array([0, 0, 1], dtype=float)
    found = ppi_mean(judge=judge, labelled=labelled, human=human, strata=strata, tuning=0.5)
    # Stratum 0 (weight 4/6): 0.5 * 3/4 + mean([-0.5, 0, 0.5]) = 3/8; stratum 1 (weight 2/6):
    # the judge's 1/2. Together 4/6 * 3/8 + 2/6 * 1/2 = 5/12.
    assert found.calibrated.value == pytest.approx(5 / 12, abs=1e-12)
    assert (found.calibrated.low, found.calibrated.high) == (0.0, 1.0)
    # The classical estimate has no people in stratum 1 either: the judge's mean stands in.
    assert found.classical.value == pytest.approx(4 / 6 * 1 / 3 + 2 / 6 * 1 / 2, abs=1e-12)


def test_a_stratified_ratio_is_the_ratio_of_horvitz_thompson_means():
    rng = np.random.default_rng(31)
    size = 600
    strata = rng.integers(0, 3, size)
    present = (rng.random(size) < 0.8).astype(float)
    right = present * (rng.random(size) < 0.5 + 0.1 * strata)
    judge_present = np.where(rng.random(size) < 0.05, 1 - present, present)
    judge_right = judge_present * np.where(rng.random(size) < 0.15, 1 - right, right)
    labelled = np.concatenate(
        [rng.choice(np.flatnonzero(strata == h), 15 + 10 * h, replace=False) for h in range(3)]
    )
    found = ppi_ratio(
        judge_num=judge_right,
        judge_den=judge_present,
        labelled=labelled,
        human_num=right[labelled],
        human_den=present[labelled],
        strata=strata,
        tuning=0.7,
    )
    inclusion = (np.bincount(strata[labelled]) / np.bincount(strata))[strata[labelled]]

    def horvitz_thompson(judge, human):
        return 0.7 * judge.mean() + np.sum((human - 0.7 * judge[labelled]) / inclusion) / size

    expected = horvitz_thompson(judge_right, right[labelled]) / horvitz_thompson(
        judge_present, present[labelled]
    )
    assert found.calibrated.value == pytest.approx(expected, abs=1e-12)
    assert found.calibrated.low < expected < found.calibrated.high
    classical = np.sum(right[labelled] / inclusion) / np.sum(present[labelled] / inclusion)
    assert found.classical.value == pytest.approx(classical, abs=1e-12)


def test_stratified_coverage_by_simulation():
    # Three strata of unequal size, rate and judge quality, sampled disproportionately.
    rng = np.random.default_rng(2024)
    sizes, rates, errors = [600, 400, 200], [0.3, 0.5, 0.7], [0.1, 0.2, 0.3]
    drawn = [40, 60, 80]
    strata = np.repeat(np.arange(3), sizes)
    members = [np.flatnonzero(strata == h) for h in range(3)]
    covered = []
    centred = []
    for _ in range(1000):
        human = (rng.random(1200) < np.repeat(rates, sizes)).astype(float)
        judge = np.where(rng.random(1200) < np.repeat(errors, sizes), 1 - human, human)
        labelled = np.concatenate(
            [rng.choice(m, k, replace=False) for m, k in zip(members, drawn, strict=True)]
        )
        found = ppi_mean(judge=judge, labelled=labelled, human=human[labelled], strata=strata)
        truth = human.mean()
        covered.append(found.calibrated.low <= truth <= found.calibrated.high)
        centred.append(found.calibrated.value - truth)
    assert 0.93 <= np.mean(covered) <= 0.97
    # Unbiased: the mean error is within three of its standard errors of 0.
    assert abs(np.mean(centred)) < 3 * np.std(centred) / math.sqrt(len(centred))


# --- The simulation --------------------------------------------------------------------


def test_the_calibrated_interval_covers_people_s_mean_and_the_judge_s_does_not():
    """N = 2,000 units, n = 200 labels; the judge says yes to 30% of the units people say no to
    and no to 10% of those they say yes to; 2,000 draws of population and sample."""
    rng = np.random.default_rng(39)
    size, n, draws = 2000, 200, 2000
    calibrated = classical = judge_point = judge_naive = 0
    calibrated_width = classical_width = 0.0
    for _ in range(draws):
        human = (rng.random(size) < 0.4).astype(float)
        slip = rng.random(size)
        judge = np.where(human == 1, slip >= 0.10, slip < 0.30).astype(float)
        labelled = rng.choice(size, n, replace=False)
        found = ppi_mean(judge=judge, labelled=labelled, human=human[labelled])
        truth = human.mean()
        calibrated += found.calibrated.low <= truth <= found.calibrated.high
        classical += found.classical.low <= truth <= found.classical.high
        calibrated_width += found.calibrated.high - found.calibrated.low
        classical_width += found.classical.high - found.classical.low
        judge_point += found.judge == truth
        half = Z * math.sqrt(found.judge * (1 - found.judge) / size)
        judge_naive += found.judge - half <= truth <= found.judge + half
    assert 0.93 <= calibrated / draws <= 0.97
    assert 0.93 <= classical / draws <= 0.97
    assert judge_point / draws < 0.05
    assert judge_naive / draws < 0.05
    # The judge's labels narrow the interval people alone give.
    assert calibrated_width < 0.9 * classical_width


# --- Ratios -----------------------------------------------------------------------------------


def test_a_tiny_ratio_by_hand():
    judge_num = np.array([1, 0, 1, 0, 0, 1], dtype=float)
    judge_den = np.array([1, 1, 1, 0, 1, 1], dtype=float)
    labelled = np.array([0, 1, 2, 3])
    human_num = np.array([1, 1, 0, 0], dtype=float)
    human_den = np.array([1, 1, 1, 1], dtype=float)
    found = ppi_ratio(
        judge_num=judge_num,
        judge_den=judge_den,
        labelled=labelled,
        human_num=human_num,
        human_den=human_den,
        tuning=0.5,
    )
    # a = 1/2 * 3/6 + mean([1/2, 1, -1/2, 0]) = 1/2; b = 1/2 * 5/6 + mean([1/2]*3 + [1]) = 25/24;
    # r = 12/25 = 0.48. Linearised (num - r den) / b = 0.96 (num - 0.48 den): people
    # 0.96 [.52, .52, -.48, -.48], judge 0.96 [.52, -.48, .52, 0]; residual people - judge / 2
    # = 0.96 [.26, .76, -.74, -.48] (mean -.05; squared deviations .0961 + .6561 + .4761 +
    # .1849 = 1.4132). Variance (1 - 4/6) * 0.96^2 * 1.4132 / 3 / 4.
    assert found.calibrated.value == pytest.approx(0.48, abs=1e-12)
    half = Z * math.sqrt((1 / 3) * 0.96**2 * 1.4132 / 3 / 4)
    assert found.calibrated.low == pytest.approx(0.48 - half, abs=1e-12)
    assert found.calibrated.high == pytest.approx(0.48 + half, abs=1e-12)
    # Classical: r = 2/4 over 4/4 = 1/2, b = 1; residual num - den/2 = [.5, .5, -.5, -.5],
    # S^2 = 1/3; variance (1/3) (1/3) / 4 = 1/36.
    assert found.classical.value == pytest.approx(0.5, abs=1e-12)
    assert found.classical.low == pytest.approx(0.5 - Z / 6, abs=1e-12)
    assert found.classical.high == pytest.approx(0.5 + Z / 6, abs=1e-12)
    assert found.judge == pytest.approx(3 / 5)
    assert found.bias.value == pytest.approx(0.6 - 0.48, abs=1e-12)
    assert (found.labelled, found.population) == (4, 6)


def test_a_ratio_over_a_denominator_of_one_is_the_mean():
    for seed in (2, 5):
        human, judge, index = random_case(seed)
        ratio = ppi_ratio(
            judge_num=judge,
            judge_den=np.ones(len(judge)),
            labelled=index,
            human_num=human[index],
            human_den=np.ones(len(index)),
        )
        mean = ppi_mean(judge=judge, labelled=index, human=human[index])
        assert ratio.tuning == pytest.approx(mean.tuning, abs=1e-9)
        for got, want in ((ratio.calibrated, mean.calibrated), (ratio.classical, mean.classical)):
            assert (got.value, got.low, got.high) == pytest.approx(
                (want.value, want.low, want.high), abs=1e-9
            )


def test_a_ratio_with_no_denominator_has_no_value():
    found = ppi_ratio(
        judge_num=np.zeros(4),
        judge_den=np.zeros(4),
        labelled=np.array([0, 1]),
        human_num=np.zeros(2),
        human_den=np.zeros(2),
    )
    assert found is None
    # The judge finds answers but people found none among the labelled units.
    found = ppi_ratio(
        judge_num=np.array([1.0, 0.0, 1.0, 0.0]),
        judge_den=np.ones(4),
        labelled=np.array([0, 1]),
        human_num=np.zeros(2),
        human_den=np.zeros(2),
    )
    assert found is None


def test_ratio_coverage_by_simulation():
    # Accuracy among answers that are present: people find 70% present and 60% of those right;
    # the judge misses presence 5% of the time and flips correctness 20% of the time.
    rng = np.random.default_rng(7)
    size, n = 2000, 200
    covered = 0
    draws = 1000
    for _ in range(draws):
        present = (rng.random(size) < 0.7).astype(float)
        right = present * (rng.random(size) < 0.6)
        judge_present = np.where(rng.random(size) < 0.05, 1 - present, present)
        judge_right = judge_present * np.where(rng.random(size) < 0.2, 1 - right, right)
        labelled = rng.choice(size, n, replace=False)
        found = ppi_ratio(
            judge_num=judge_right,
            judge_den=judge_present,
            labelled=labelled,
            human_num=right[labelled],
            human_den=present[labelled],
        )
        truth = right.sum() / present.sum()
        covered += found.calibrated.low <= truth <= found.calibrated.high
    assert 0.93 <= covered / draws <= 0.97


# --- Planning ---------------------------------------------------------------------------------


def test_the_planned_labels_reach_the_width_in_most_samples():
    rng = np.random.default_rng(12)
    size, start, width = 2000, 50, 0.1
    reached = []
    for _ in range(300):
        human = (rng.random(size) < 0.4).astype(float)
        judge = np.where(human == 1, rng.random(size) >= 0.1, rng.random(size) < 0.3)
        judge = judge.astype(float)
        order = rng.permutation(size)
        more = ppi_labels_needed(
            judge=judge, labelled=order[:start], human=human[order[:start]], width=width
        )
        assert 0 < more <= size - start
        labelled = order[: start + more]
        found = ppi_mean(judge=judge, labelled=labelled, human=human[labelled])
        reached.append(found.calibrated.high - found.calibrated.low <= width)
    assert np.mean(reached) >= 0.75


def test_a_stratified_plan_reaches_the_width_in_most_samples():
    rng = np.random.default_rng(14)
    sizes, width = [1000, 600, 400], 0.08
    strata = np.repeat(np.arange(3), sizes)
    members = [np.flatnonzero(strata == h) for h in range(3)]
    reached = []
    for _ in range(200):
        human = (rng.random(2000) < np.repeat([0.3, 0.5, 0.6], sizes)).astype(float)
        judge = np.where(rng.random(2000) < np.repeat([0.1, 0.15, 0.25], sizes), 1 - human, human)
        orders = [rng.permutation(m) for m in members]
        start = np.concatenate([order[:20] for order in orders])
        more = ppi_labels_needed(
            judge=judge, labelled=start, human=human[start], strata=strata, width=width
        )
        # The extra labels spread over the strata in proportion to their size.
        extra = [math.ceil(more * size / 2000) for size in sizes]
        labelled = np.concatenate([order[: 20 + k] for order, k in zip(orders, extra, strict=True)])
        found = ppi_mean(judge=judge, labelled=labelled, human=human[labelled], strata=strata)
        reached.append(found.calibrated.high - found.calibrated.low <= width)
    assert np.mean(reached) >= 0.75


def test_no_more_labels_when_the_interval_is_already_narrow_enough():
    rng = np.random.default_rng(13)
    human = (rng.random(1000) < 0.5).astype(float)
    judge = np.where(rng.random(1000) < 0.1, 1 - human, human)
    labelled = rng.choice(1000, 300, replace=False)
    found = ppi_mean(judge=judge, labelled=labelled, human=human[labelled])
    width = found.calibrated.high - found.calibrated.low
    assert (
        ppi_labels_needed(judge=judge, labelled=labelled, human=human[labelled], width=width) == 0
    )
    assert (
        ppi_labels_needed(judge=judge, labelled=labelled, human=human[labelled], width=0.9 * width)
        > 0
    )


def test_with_fewer_than_two_labels_the_plan_takes_the_worst_case():
    judge = np.tile([1.0, 0.0], 500)
    none = ppi_labels_needed(
        judge=judge, labelled=np.array([], dtype=int), human=np.array([]), width=0.1
    )
    # Worst-case variance 1/4 with k of 1000 labelled: (1 - k/1000) / (4 k) <= (0.05 / z)^2.
    target = (0.05 / Z) ** 2
    expected = next(k for k in range(1, 1001) if (1 - k / 1000) / (4 * k) <= target)
    assert none == expected
    one = ppi_labels_needed(judge=judge, labelled=np.array([3]), human=np.array([1.0]), width=0.1)
    assert one == expected - 1


def test_planning_refuses_a_width_that_is_not_positive():
    with pytest.raises(ValueError, match="width"):
        ppi_labels_needed(judge=np.ones(3), labelled=np.array([0]), human=np.ones(1), width=0)


def test_the_result_types_are_the_agreed_ones():
    found = ppi_mean(judge=np.array([1.0, 0.0]), labelled=np.array([0]), human=np.array([1.0]))
    assert isinstance(found, Calibrated)
    assert isinstance(found.calibrated, Estimate)
