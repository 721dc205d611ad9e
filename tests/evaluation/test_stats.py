"""Wilson intervals and agreement statistics against independent computations."""

import math
import random
import warnings

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from evaluation.stats import (
    agreement,
    agreement_from_table,
    bootstrap_products,
    bootstrap_weights,
    wilson_interval,
    wilson_pct,
)

Z = 1.959963984540054


def wilson_by_quadratic(count: int, total: int) -> tuple[float, float]:
    """The Wilson bounds are the proportions p with (p_hat - p)^2 = z^2 p (1 - p) / n, i.e. the
    roots of (1 + z^2/n) p^2 - (2 p_hat + z^2/n) p + p_hat^2 = 0."""
    p_hat = count / total
    a = 1 + Z * Z / total
    b = -(2 * p_hat + Z * Z / total)
    c = p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def wilson_by_scipy(count: int, total: int) -> tuple[float, float]:
    """An independent implementation: scipy's binomial test's Wilson interval."""
    interval = binomtest(count, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


@pytest.mark.parametrize(
    "count,total",
    [(72, 256), (1, 1), (0, 1), (0, 10), (10, 10), (5, 10), (475, 543), (2, 128), (199, 927)],
)
def test_wilson_matches_two_hand_computations(count, total):
    low, high = wilson_interval(count, total)
    for expected in (wilson_by_quadratic(count, total), wilson_by_scipy(count, total)):
        assert low == pytest.approx(max(0.0, expected[0]), abs=1e-12)
        assert high == pytest.approx(min(1.0, expected[1]), abs=1e-12)
    assert 0.0 <= low <= count / total <= high <= 1.0


def test_wilson_worked_example_72_of_256():
    # 72/256 = 28.125%: the interval is about 22.97% to 33.92% (worked by hand above).
    low, high = wilson_interval(72, 256)
    assert (round(low, 4), round(high, 4)) == (0.2297, 0.3392)
    assert wilson_pct({"count": 72, "total": 256, "pct": 28.12}) == (22.97, 33.92)


def test_wilson_edges_and_bad_input():
    assert wilson_interval(0, 0) is None
    assert wilson_pct({"count": 0, "total": 0, "pct": None}) is None
    # Paper rows carry percentages only: no interval can be computed.
    assert wilson_pct({"count": None, "total": None, "pct": 28.12}) is None
    assert wilson_pct(None) is None
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and high == pytest.approx(wilson_by_quadratic(0, 20)[1])
    for count, total in [(3, 2), (-1, 5), (1, -1)]:
        with pytest.raises(ValueError, match="count <= total"):
            wilson_interval(count, total)


FIXED_A = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1]
FIXED_B = [1, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1]


def test_kappa_and_raw_agreement_match_sklearn_on_fixed_data():
    result = agreement(zip(FIXED_A, FIXED_B, strict=True))
    assert result.items == 20
    assert result.agreed == sum(a == b for a, b in zip(FIXED_A, FIXED_B, strict=True)) == 16
    assert result.raw == pytest.approx(16 / 20)
    assert result.kappa == pytest.approx(cohen_kappa_score(FIXED_A, FIXED_B), abs=1e-12)
    # By hand: p_o = 0.8; A and B each say yes 13/20; p_e = .65*.65 + .35*.35 = 0.545.
    assert result.kappa == pytest.approx((0.8 - 0.545) / (1 - 0.545), abs=1e-12)


def test_kappa_from_a_contingency_table_and_random_data():
    table = {(True, True): 40, (True, False): 9, (False, True): 6, (False, False): 25}
    a = [x for (x, _), n in table.items() for _ in range(n)]
    b = [y for (_, y), n in table.items() for _ in range(n)]
    result = agreement_from_table(table)
    assert result.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert result.raw == pytest.approx(65 / 80)

    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(5, 300)
        a = [rng.random() < 0.6 for _ in range(n)]
        b = [x if rng.random() < 0.75 else not x for x in a]
        if len(set(a)) == len(set(b)) == 1:
            continue
        expected = cohen_kappa_score(a, b)
        assert agreement(zip(a, b, strict=True)).kappa == pytest.approx(expected, abs=1e-12)


def test_kappa_is_undefined_when_both_raters_never_vary():
    result = agreement([(True, True)] * 5)
    assert (result.items, result.agreed, result.raw, result.kappa) == (5, 5, 1.0, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score([1] * 5, [1] * 5))
    assert agreement([]).kappa is None and agreement([]).items == 0


@pytest.mark.parametrize(
    ("n", "draws"),
    [(1, 50), (7, 10_000), (452, 2_000), (600, 997), (2**18 + 5, 3)],
)
def test_bootstrap_products_in_blocks_equal_the_whole_weights_matrix(n, draws):
    # Blocks of one resample (n above the block size), several, or all in one: the resamples
    # of the documented whole (draws, n) weights matrix, summed in another order at most.
    rng = np.random.default_rng(n)
    vector = rng.random(n)
    matrix = rng.random((n, 3))
    whole = bootstrap_weights(n, draws=draws, seed=11)
    by_blocks = bootstrap_products(n, [vector, matrix], draws=draws, seed=11)
    assert by_blocks[0].shape == (draws,) and by_blocks[1].shape == (draws, 3)
    np.testing.assert_allclose(by_blocks[0], whole @ vector, rtol=1e-12, atol=0)
    np.testing.assert_allclose(by_blocks[1], whole @ matrix, rtol=1e-12, atol=0)
    # With integer operands every sum is exact: equal whatever the order.
    counts = np.arange(n, dtype=np.float64) % 5
    (exact,) = bootstrap_products(n, [counts], draws=draws, seed=11)
    assert np.array_equal(exact, whole @ counts)
    # Each resample draws n tasks, the picks of numpy's generator for that seed.
    assert (whole.sum(axis=1) == n).all()
    picks = np.random.default_rng(11).integers(0, n, size=(draws, n))
    assert np.array_equal(whole[-1], np.bincount(picks[-1], minlength=n))
