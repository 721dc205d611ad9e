"""Uncertainty and agreement statistics shared by the board, judge agreement and rating
studies. Plain Python and numpy: no Django."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

# Two-sided 95% quantile of the standard normal distribution.
Z95 = 1.959963984540054


def wilson_interval(count: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for count successes out of total, as fractions in [0, 1].
    None when there is nothing to estimate (total is 0)."""
    if total < 0 or count < 0 or count > total:
        raise ValueError(f"need 0 <= count <= total, got {count} of {total}")
    if total == 0:
        return None
    p = count / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denominator
    # At p = 0 and p = 1 the bound is exactly 0 or 1; floating point can miss by an ulp.
    low = 0.0 if count == 0 else max(0.0, centre - half)
    high = 1.0 if count == total else min(1.0, centre + half)
    return low, high


def wilson_pct(
    rate: Mapping | None, digits: int | None = 2, *, z: float = Z95
) -> tuple[float, float] | None:
    """The 95% interval, in percent, of a rate {"count", "total", "pct"}, rounded to ``digits``
    (None: unrounded, for a page that rounds once to the metric's own decimals). None when the
    rate carries no counts (numbers copied from a paper), covers no item, or its value is
    withheld (pct null: below the benchmark's minimum n)."""
    if not isinstance(rate, Mapping) or rate.get("pct") is None:
        return None
    count, total = rate.get("count"), rate.get("total")
    if not isinstance(count, int) or not isinstance(total, int) or isinstance(count, bool):
        return None
    interval = wilson_interval(count, total, z)
    if interval is None:
        return None
    low, high = 100 * interval[0], 100 * interval[1]
    if digits is None:
        return low, high
    return round(low, digits), round(high, digits)


@dataclass(frozen=True)
class Agreement:
    """Two raters over the same items: how many, how many alike, raw agreement and Cohen's
    kappa (fractions). kappa is None when chance agreement is certain (both raters gave one
    and the same label to every item), where it is undefined."""

    items: int
    agreed: int
    raw: float | None
    kappa: float | None


class PairAgreement(NamedTuple):
    raw: np.ndarray
    kappa: np.ndarray
    ac1: np.ndarray


def last_sum(x: np.ndarray) -> np.ndarray:
    # Over thousands of resamples with a short last axis, a product beats .sum(axis=-1) by ~10x.
    return x @ np.ones(x.shape[-1])


def confusion_agreement(confusion: np.ndarray) -> PairAgreement:
    """Raw agreement, Cohen's kappa and Gwet's AC1 from (..., q, q) confusion matrices of two
    raters over q categories; NaN where undefined."""
    table = np.asarray(confusion, dtype=np.float64)
    q = table.shape[-1]
    first, second = last_sum(table), last_sum(np.swapaxes(table, -1, -2))
    n = last_sum(first)
    agree = last_sum(np.diagonal(table, axis1=-2, axis2=-1))
    chance = last_sum(first * second)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.where(n > 0, agree / n, np.nan)
        # Counts, not proportions: the kappa denominator is 0 exactly when p_e = 1.
        kappa = np.where(n * n - chance > 0, (n * agree - chance) / (n * n - chance), np.nan)
        pi = (first + second) / (2 * n[..., None])
        pe = last_sum(pi * (1 - pi)) / (q - 1) if q >= 2 else np.full_like(n, np.nan)
        ac1 = np.where((n > 0) & (q >= 2), (raw - pe) / (1 - pe), np.nan)
    return PairAgreement(raw, kappa, ac1)


def agreement_from_table(table: Mapping[tuple[Hashable, Hashable], int]) -> Agreement:
    """From a contingency table {(label of rater A, label of rater B): items}."""
    n = sum(table.values())
    if n == 0:
        return Agreement(items=0, agreed=0, raw=None, kappa=None)
    labels = sorted({label for pair in table for label in pair}, key=repr)
    index = {label: i for i, label in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    for (a, b), count in table.items():
        confusion[index[a], index[b]] += count
    found = confusion_agreement(confusion)
    agreed = sum(count for (a, b), count in table.items() if a == b)
    kappa = float(found.kappa)
    return Agreement(
        items=n, agreed=agreed, raw=agreed / n, kappa=None if math.isnan(kappa) else kappa
    )


def agreement(pairs: Iterable[tuple[Hashable, Hashable]]) -> Agreement:
    """From (label of rater A, label of rater B) per item."""
    return agreement_from_table(Counter(pairs))


def merge_tables(
    tables: Iterable[Mapping[tuple[Hashable, Hashable], int]],
) -> dict[tuple[Hashable, Hashable], int]:
    merged: Counter = Counter()
    for table in tables:
        merged.update(table)
    return dict(merged)


# --- Paired comparisons -----------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: min(1, 2 P[X <= min(b, c)]), X ~ Binomial(b + c, 1/2).
    b: units only the first system passed; c: units only the second passed."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


def bootstrap_weights(n: int, *, draws: int, seed: int) -> np.ndarray:
    """(draws, n) counts of how often each of n tasks is drawn in each resample: the picks are
    ``numpy.random.default_rng(seed).integers(0, n, size=(draws, n))``, row by row."""
    return _resample_weights(np.random.default_rng(seed), n, draws)


def _resample_weights(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """The next ``rows`` resamples' weights from ``rng``, as bootstrap_weights documents."""
    picks = rng.integers(0, n, size=(rows, n))
    picks += np.arange(rows)[:, None] * n
    counts = np.bincount(picks.ravel(), minlength=rows * n)
    del picks
    return counts.reshape(rows, n).astype(np.float64)


# Resamples are drawn this many task picks at a time (2 MB of picks, counts and weights each).
BLOCK_PICKS = 2**18


def bootstrap_products(
    n: int, operands: Sequence[np.ndarray], *, draws: int, seed: int
) -> list[np.ndarray]:
    """``[bootstrap_weights(n, draws=draws, seed=seed) @ operand for operand in operands]``
    with the weights drawn a block of resamples at a time, so memory stays bounded whatever
    ``draws * n``. The resamples are the same (the generator's stream does not depend on how
    its draws are split); a sum may differ in its last bit, as the linear-algebra library
    orders a product's additions by the product's size."""
    rng = np.random.default_rng(seed)
    rows = max(1, BLOCK_PICKS // max(1, n))
    found = [np.empty((draws, *np.shape(operand)[1:])) for operand in operands]
    for start in range(0, draws, rows):
        count = min(rows, draws - start)
        weights = _resample_weights(rng, n, count)
        for into, operand in zip(found, operands, strict=True):
            into[start : start + count] = weights @ operand
    return found


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return (math.nan, math.nan)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


# --- Paired permutation tests -----------------------------------------------------------------

# Up to this many tasks whose two contributions differ, every arrangement is enumerated (2**20,
# about a million); above it, a Monte Carlo sample of arrangements.
EXACT_MAX_TASKS = 20
# Arrangements are built this many rows at a time: memory stays bounded whatever the tasks.
_ARRANGEMENT_ROWS = 2**16


def smallest_significant_n(alpha: float) -> int:
    """The fewest paired tasks whose exact two-sided sign-flip test can reach p < alpha: the
    most extreme arrangement has p = 2 / 2**n (6 at alpha = 0.05). The same n for McNemar's
    exact test (2 * 0.5**n). Below it no p-value or interval is shown."""
    n = 1
    while 2 / 2**n >= alpha:
        n += 1
    return n


@dataclass(frozen=True)
class PermutationTest:
    p_value: float
    exact: bool  # every arrangement enumerated (else Monte Carlo)
    differing: int  # tasks whose two contributions differ (the others cannot move the result)
    arrangements: int  # arrangements counted: 2**differing, or the Monte Carlo draws


def _ratio_differences(
    sums: np.ndarray, swaps: np.ndarray, deltas: np.ndarray, scale: float
) -> np.ndarray:
    """scale * (A's ratio - B's ratio) under each arrangement. sums: (num A, den A, num B,
    den B) on the observed data; swaps: (rows, tasks) of 0/1, 1 where the task's two systems
    trade places; deltas: (tasks, 2) of B's minus A's (num, den) per task. NaN where a system
    is left with no unit."""
    return _ratio_moved(sums, swaps @ deltas, scale)


def _ratio_moved(sums: np.ndarray, moved: np.ndarray, scale: float) -> np.ndarray:
    """_ratio_differences from the (num, den) each arrangement moves from B to A."""
    num_a, den_a = sums[0] + moved[:, 0], sums[1] + moved[:, 1]
    num_b, den_b = sums[2] - moved[:, 0], sums[3] - moved[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        found = scale * (num_a / den_a - num_b / den_b)
    # A denominator that is zero up to rounding is an arrangement with no unit.
    found[(np.abs(den_a) < 0.5e-9) | (np.abs(den_b) < 0.5e-9)] = np.nan
    return found


def _extreme(found: np.ndarray, observed: float, spread: float) -> int:
    """Arrangements at least as far from zero as the observed one. Equal values computed in
    another order can differ in their last bits: a margin of 1e-9 of the largest difference
    seen keeps them equal. An arrangement leaving a system without a unit counts as extreme
    (the conservative choice)."""
    margin = 1e-9 * spread
    with np.errstate(invalid="ignore"):
        return int(np.sum(~(np.abs(found) < abs(observed) - margin)))


def paired_permutation_test(
    num_a: np.ndarray,
    den_a: np.ndarray,
    num_b: np.ndarray,
    den_b: np.ndarray,
    *,
    scale: float = 1.0,
    draws: int,
    seed: int,
) -> PermutationTest | None:
    """Two-sided paired permutation test of the difference of two ratio metrics,
    sum(num A)/sum(den A) - sum(num B)/sum(den B), over tasks: under the null hypothesis the
    two systems' contributions to a task are exchangeable, so each task's pair is swapped or
    not. With one unit per task and equal denominators this is the sign-flip test of the
    per-task differences.

    Tasks whose two contributions are exactly equal cannot move the statistic and are left
    out (ties at zero are compared on the stored numbers, not on rounded differences). With
    at most EXACT_MAX_TASKS tasks left, all 2**m arrangements are enumerated and p is the
    share at least as extreme as the observed one; above, ``draws`` arrangements are drawn as
    ``numpy.random.default_rng(seed).random((draws, n)) < 0.5`` over all n tasks in the order
    given (True: swapped), and p = (1 + draws at least as extreme) / (1 + draws). None when a
    ratio is undefined (a system with no unit)."""
    (found,) = paired_permutation_tests(
        [np.column_stack([num_a, den_a, num_b, den_b])], [scale], draws=draws, seed=seed
    )
    return found


def paired_permutation_tests(
    per_task: Sequence[np.ndarray], scales: Sequence[float], *, draws: int, seed: int
) -> list[PermutationTest | None]:
    """paired_permutation_test of several metrics on the same n tasks, each an (n, 4) array
    of (num A, den A, num B, den B) per task: the metrics tested by Monte Carlo share one pass
    over the same drawn arrangements (each metric's are those its own test would draw)."""
    found: list[PermutationTest | None] = [None] * len(per_task)
    sampled = []
    for i, (table, scale) in enumerate(zip(per_task, scales, strict=True)):
        table = np.asarray(table, dtype=np.float64).reshape(-1, 4)
        sums = table.sum(axis=0)
        if sums[1] == 0 or sums[3] == 0:
            continue
        deltas = table[:, [2, 3]] - table[:, [0, 1]]
        differing = np.flatnonzero(np.any(deltas != 0, axis=1))
        m = len(differing)
        observed = float(_ratio_differences(sums, np.zeros((1, len(table))), deltas, scale)[0])
        if m == 0:
            found[i] = PermutationTest(1.0, True, 0, 1)
        elif m <= EXACT_MAX_TASKS:
            found[i] = _exact_test(sums, deltas[differing], scale, observed)
        else:
            sampled.append((i, sums, deltas, scale, observed, m))
    if sampled:
        n = len(per_task[sampled[0][0]])
        stacked = np.hstack([deltas for _, _, deltas, _, _, _ in sampled])
        rng = np.random.default_rng(seed)
        rows = max(1, _ARRANGEMENT_ROWS * 4 // max(1, n))
        chunks: list[list[np.ndarray]] = [[] for _ in sampled]
        for start in range(0, draws, rows):
            count = min(rows, draws - start)
            moved = (rng.random((count, n)) < 0.5).astype(np.float64) @ stacked
            for j, (_, sums, _, scale, _, _) in enumerate(sampled):
                chunks[j].append(_ratio_moved(sums, moved[:, 2 * j : 2 * j + 2], scale))
        for j, (i, _, _, _, observed, m) in enumerate(sampled):
            values = np.concatenate(chunks[j])
            spread = max(float(np.nanmax(np.abs(values), initial=0.0)), abs(observed))
            extreme = _extreme(values, observed, spread)
            found[i] = PermutationTest((1 + extreme) / (1 + draws), False, m, draws)
    return found


def _exact_test(sums: np.ndarray, deltas: np.ndarray, scale: float, observed: float):
    m = len(deltas)
    total = 2**m
    chunks = []
    for start in range(0, total, _ARRANGEMENT_ROWS):
        rows = np.arange(start, min(total, start + _ARRANGEMENT_ROWS), dtype=np.int64)
        swaps = ((rows[:, None] >> np.arange(m)) & 1).astype(np.float64)
        chunks.append(_ratio_differences(sums, swaps, deltas, scale))
    values = np.concatenate(chunks)
    spread = float(np.nanmax(np.abs(values), initial=0.0))
    return PermutationTest(_extreme(values, observed, spread) / total, True, m, total)


# --- Prediction-powered inference (human-calibrated judge scores) --------------------------------

# ppi_labels_needed plans with an upper confidence bound of this level on the current variance:
# the planned labels give the target width in about four samples out of five.
PLANNING_ASSURANCE = 0.8


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Calibrated:
    """A judged mean corrected by people's labels on a random sample of its units.

    calibrated: the PPI++ (power-tuned) estimate of the mean people would give over all N
    units; classical: people only, from the labelled units (inclusion-weighted when
    stratified); judge: the judge's own mean over all N units (known exactly, no interval);
    bias: judge minus people, ``judge - calibrated`` with the calibrated interval mirrored;
    tuning: the weight lambda in [0, 1] given to the judge; labelled: n; population: N."""

    calibrated: Estimate
    classical: Estimate
    judge: float
    bias: Estimate
    tuning: float
    labelled: int
    population: int


@dataclass(frozen=True)
class _Design:
    """Stratified simple random sampling without replacement: unit i of stratum h is labelled
    with probability drawn[h] / sizes[h]."""

    codes: np.ndarray  # stratum of every unit, 0..H-1
    sizes: np.ndarray  # N_h
    drawn: np.ndarray  # n_h
    picked: np.ndarray  # stratum of every labelled unit, aligned with labelled

    @property
    def weights(self) -> np.ndarray:
        return self.sizes / self.sizes.sum()


def _values(name: str, values, length: int | None = None) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if length is not None and len(array) != length:
        raise ValueError(f"{name} has {len(array)} values, expected {length}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} has a missing or infinite value")
    return array


def _design(*, size: int, labelled, strata) -> tuple[np.ndarray, _Design]:
    if size < 1:
        raise ValueError("judge has no units: nothing to calibrate")
    index = np.asarray(labelled)
    if index.ndim != 1:
        raise ValueError(f"labelled must be one-dimensional, got shape {index.shape}")
    if len(index) and not np.issubdtype(index.dtype, np.integer):
        raise ValueError("labelled must hold integer unit indices")
    index = index.astype(np.int64)
    if len(index) and (index.min() < 0 or index.max() >= size):
        raise ValueError(f"labelled holds an index outside the {size} judged units")
    if len(np.unique(index)) != len(index):
        raise ValueError("labelled holds a unit twice: the sample is without replacement")
    if strata is None:
        codes = np.zeros(size, dtype=np.int64)
    else:
        labels = np.asarray(strata)
        if labels.shape != (size,):
            raise ValueError(f"strata must give one stratum per judged unit ({size})")
        codes = np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.int64)
    sizes = np.bincount(codes).astype(np.float64)
    picked = codes[index]
    drawn = np.bincount(picked, minlength=len(sizes)).astype(np.float64)
    return index, _Design(codes=codes, sizes=sizes, drawn=drawn, picked=picked)


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def _chi2_quantile(probability: float, degrees: np.ndarray) -> np.ndarray:
    """The chi-square quantile by the Wilson-Hilferty cube (within a few percent from one
    degree of freedom up; the planning figure needs no more)."""
    z = NormalDist().inv_cdf(probability)
    scale = 2 / (9 * degrees)
    return degrees * np.maximum(1 - scale + z * np.sqrt(scale), 1e-3) ** 3


def _by_stratum_mean(values: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    sums = np.bincount(codes, weights=values, minlength=len(counts))
    return np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)


def _tuned(design: _Design, human: np.ndarray, judged: np.ndarray, judge: np.ndarray) -> float:
    """The power-tuning weight of PPI++ (Angelopoulos, Duchi, Zrnic 2023), as ppi_py's
    ``_calc_lam_glm`` computes it for a mean, summed over strata: lambda minimises
    sum_h W_h^2 [lambda^2 v_h / N_h + var_h(human - lambda judge) / n_h], with c_h the
    covariance of people's and the judge's outcome over the stratum's labelled units (divisor
    n_h) and v_h the judge's variance over the stratum's labelled units and all its units
    together (divisor n_h + N_h - 1), i.e. lambda = sum W_h^2 c_h / n_h over
    sum W_h^2 v_h (1 / n_h + 1 / N_h); one stratum gives ppi_py's c / ((1 + n/N) v). Strata
    with fewer than two labels do not inform it; clipped to [0, 1]; 0 when the judge is
    constant wherever it could inform."""
    weights, drawn, sizes = design.weights, design.drawn, design.sizes
    numerator = denominator = 0.0
    for h in np.flatnonzero(drawn >= 2):
        mine = design.picked == h
        y, j = human[mine], judged[mine]
        covariance = float(np.mean((y - y.mean()) * (j - j.mean())))
        spread = float(np.var(np.concatenate([j, judge[design.codes == h]]), ddof=1))
        numerator += weights[h] ** 2 * covariance / drawn[h]
        denominator += weights[h] ** 2 * spread * (1 / drawn[h] + 1 / sizes[h])
    if denominator <= 0:
        return 0.0
    return float(np.clip(numerator / denominator, 0.0, 1.0))


def _stratum_variances(design: _Design, residual: np.ndarray, spread: float) -> np.ndarray:
    """Each stratum's sample variance of the residual (divisor n_h - 1); inf where it cannot
    be estimated (one label) and the stratum is not a census. Where every label gives the same
    residual and the stratum is not a census, the variance is raised to that of one more label
    differing by ``spread`` (the outcomes' range; inf when unbounded): no spread in a sample
    does not prove there is none in the population."""
    found = np.zeros(len(design.sizes))
    for h in range(len(design.sizes)):
        n_h, size = design.drawn[h], design.sizes[h]
        if n_h >= size:
            continue
        if n_h < 2:
            found[h] = math.inf
            continue
        variance = float(np.var(residual[design.picked == h], ddof=1))
        if variance == 0:
            variance = spread * spread * n_h / (n_h + 1) ** 2
        found[h] = variance
    return found


def _variance(design: _Design, variances: np.ndarray, drawn: np.ndarray) -> float:
    """sum_h W_h^2 (1 - n_h/N_h) S_h^2 / n_h: the variance of the stratified mean of the
    residual under sampling without replacement (a census stratum adds nothing)."""
    weights, sizes = design.weights, design.sizes
    total = 0.0
    for h in range(len(sizes)):
        if drawn[h] >= sizes[h]:
            continue
        if drawn[h] <= 0 or math.isinf(variances[h]):
            return math.inf
        total += weights[h] ** 2 * (1 - drawn[h] / sizes[h]) * variances[h] / drawn[h]
    return total


def _interval(value: float, se: float, z: float, bounds: tuple[float, float] | None) -> Estimate:
    low, high = value - z * se, value + z * se
    if bounds is not None:
        value = min(max(value, bounds[0]), bounds[1])
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Estimate(value=float(value), low=float(low), high=float(high))


def _unit_range(*arrays: np.ndarray) -> bool:
    return all(len(a) == 0 or (a.min() >= 0 and a.max() <= 1) for a in arrays)


def _ppi_fit(design, human, judged, judge, tuning):
    """(lambda, residuals, point estimate) of the stratified PPI mean: lambda * mean_N(judge)
    + sum_h W_h mean_h(human - lambda * judge). A stratum nobody labelled has no correction to
    offer: its residual mean is taken as (1 - lambda) times its judge mean, so it contributes
    the judge's own mean (its interval is the widest, see _stratum_variances)."""
    lam = _tuned(design, human, judged, judge) if tuning is None else tuning
    residual = human - lam * judged
    means = _by_stratum_mean(residual, design.picked, design.drawn)
    empty = design.drawn == 0
    if empty.any():
        judge_means = _by_stratum_mean(judge, design.codes, design.sizes)
        means[empty] = (1 - lam) * judge_means[empty]
    return lam, residual, lam * float(judge.mean()) + float(design.weights @ means)


def _tuning(tuning: float | None) -> float | None:
    if tuning is not None and not 0 <= tuning <= 1:
        raise ValueError(f"tuning must be in [0, 1], got {tuning}")
    return None if tuning is None else float(tuning)


def _calibrated(
    *,
    calibrated: Estimate,
    classical: Estimate,
    judge: float,
    tuning: float,
    labelled: int,
    population: int,
) -> Calibrated:
    """The result, with the judge's bias: its mean over all N is known exactly, so the bias is
    that mean minus the calibrated estimate, with the calibrated interval mirrored."""
    bias = Estimate(
        value=judge - calibrated.value, low=judge - calibrated.high, high=judge - calibrated.low
    )
    return Calibrated(
        calibrated=calibrated,
        classical=classical,
        judge=judge,
        bias=bias,
        tuning=tuning,
        labelled=labelled,
        population=population,
    )


def ppi_mean(
    *,
    judge: np.ndarray,
    labelled: np.ndarray,
    human: np.ndarray,
    strata: np.ndarray | None = None,
    confidence: float = 0.95,
    tuning: float | None = None,
) -> Calibrated | None:
    """The mean people would give over N judged units, from the judge's outcome on all N and
    people's outcome on a random sample of n of them: prediction-powered inference
    (Angelopoulos et al., Science 2023) with the power-tuned weight of PPI++ (Angelopoulos,
    Duchi, Zrnic 2023).

    judge: the judge's outcome on every one of the N units (0/1 floats, or any reals);
    labelled: the indices (into judge) of the units people labelled, a uniform random sample
    without replacement within each stratum; human: people's outcome on those units, aligned
    with labelled; strata: each unit's stratum code (length N; None: one stratum), the
    inclusion probability of a unit being n_h / N_h of its stratum; tuning: fixed lambda
    (None: power-tuned, clipped to [0, 1]). None when nothing is labelled (n = 0).

    The target is the finite population: the mean of people's outcome over these N units (a
    submission's answers), not over some larger population they were drawn from. The judge
    labelled every unit, the n labelled ones included, so its mean over the N is known exactly
    and the estimate

        theta = lambda * mean_N(judge) + sum_h W_h mean_{n_h}(human - lambda * judge),

    W_h = N_h / N, is exactly unbiased for any fixed lambda (it is the Horvitz-Thompson
    estimator of the residual's total with inclusion probabilities n_h / N_h, plus the known
    judge total). Its variance is that of a stratified sample without replacement,
    sum_h W_h^2 (1 - n_h / N_h) S_h^2 / n_h, S_h^2 the residual's sample variance (divisor
    n_h - 1); the interval is theta +- z * sqrt(variance). One lambda serves every stratum.

    Against ppi_py (``ppi_mean_pointestimate`` / ``ppi_mean_ci`` with the judge's N outcomes as
    its "unlabeled" predictions), one stratum: the point estimate and the tuned lambda are the
    same; ppi_py's interval treats the N judged units as an independent sample from an infinite
    population (half-width z sqrt(lambda^2 sd_N(judge)^2 / N + sd_n(residual)^2 / n), standard
    deviations with divisor N and n), which overstates this variance; ours is its rectifier term
    times sqrt((1 - n/N) n / (n - 1)), and zero when every unit is labelled (the estimate is
    then people's mean itself).

    lambda = 0 gives the classical, people-only estimate exactly; lambda = 1 is plain PPI.
    Where a stratum's variance cannot be estimated (one label in a stratum of more than one
    unit, n = 1 in particular) the interval is the widest possible: [0, 1] when every outcome
    lies in [0, 1], unbounded otherwise; a stratum nobody labelled counts at the judge's own
    mean, with the same widest interval. A stratum whose labels show no spread in the residual
    (every label agreeing with the judge, or a judge always wrong, at lambda 1) is given the
    variance of one more label differing by the outcomes' range, so agreement in a sample is
    not taken for certainty. When every outcome lies in [0, 1], values and bounds are clipped
    to [0, 1] (a mean of such outcomes cannot leave it)."""
    judge = _values("judge", judge)
    index, design = _design(size=len(judge), labelled=labelled, strata=strata)
    human = _values("human", human, len(index))
    tuning = _tuning(tuning)
    z = _z(confidence)
    if not len(index):
        return None
    judged = judge[index]
    unit = _unit_range(judge, human)
    bounds = (0.0, 1.0) if unit else None
    spread = 1.0 if unit else math.inf

    def estimate(lam_fixed: float | None) -> tuple[float, Estimate]:
        lam, residual, value = _ppi_fit(design, human, judged, judge, lam_fixed)
        variances = _stratum_variances(design, residual, spread)
        se = math.sqrt(_variance(design, variances, design.drawn))
        return lam, _interval(value, se, z, bounds)

    lam, calibrated = estimate(tuning)
    _, classical = estimate(0.0)
    return _calibrated(
        calibrated=calibrated,
        classical=classical,
        judge=float(judge.mean()),
        tuning=lam,
        labelled=len(index),
        population=len(judge),
    )


def ppi_ratio(
    *,
    judge_num: np.ndarray,
    judge_den: np.ndarray,
    labelled: np.ndarray,
    human_num: np.ndarray,
    human_den: np.ndarray,
    strata: np.ndarray | None = None,
    confidence: float = 0.95,
    tuning: float | None = None,
) -> Calibrated | None:
    """The same for a ratio of two means (sum num / sum den over units, e.g. accuracy among
    answers that are present), by the delta method.

    Numerator and denominator each get the PPI estimate of ppi_mean with one shared lambda,
    a and b, and the ratio is r = a / b. Its variance is that of the PPI mean of the
    linearised outcome (num - r den) / b (people's and the judge's), under the same design;
    lambda is tuned on the linearised outcome at lambda = 1's ratio. The classical estimate is
    lambda = 0 (the combined ratio of people's stratified means). None when nothing is
    labelled, or when the judge's, the calibrated or the classical denominator is not
    positive (no ratio to estimate: e.g. people found no answer present in any labelled
    unit). When 0 <= num <= den <= 1 on every unit, values and bounds are clipped to [0, 1].
    Narrow-sample conventions are those of ppi_mean."""
    judge_num = _values("judge_num", judge_num)
    judge_den = _values("judge_den", judge_den, len(judge_num))
    index, design = _design(size=len(judge_num), labelled=labelled, strata=strata)
    human_num = _values("human_num", human_num, len(index))
    human_den = _values("human_den", human_den, len(index))
    tuning = _tuning(tuning)
    z = _z(confidence)
    if not len(index) or judge_den.sum() <= 0:
        return None
    judged_num, judged_den = judge_num[index], judge_den[index]
    unit = _unit_range(judge_num, judge_den, human_num, human_den) and bool(
        np.all(judge_num <= judge_den) and np.all(human_num <= human_den)
    )
    bounds = (0.0, 1.0) if unit else None

    def ratio(lam: float) -> tuple[float, float]:
        a = _ppi_fit(design, human_num, judged_num, judge_num, lam)[2]
        b = _ppi_fit(design, human_den, judged_den, judge_den, lam)[2]
        return (a / b if b > 0 else math.nan), b

    def linearised(r: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            (human_num - r * human_den) / b,
            (judged_num - r * judged_den) / b,
            (judge_num - r * judge_den) / b,
        )

    def estimate(lam: float) -> Estimate | None:
        r, b = ratio(lam)
        if not b > 0:
            return None
        y, j, everyone = linearised(r, b)
        residual = y - lam * j
        spread = 1.0 / b if unit else math.inf
        variances = _stratum_variances(design, residual, spread)
        se = math.sqrt(_variance(design, variances, design.drawn))
        return _interval(r, se, z, bounds)

    if tuning is None:
        r1, b1 = ratio(1.0)
        lam = _tuned(design, *linearised(r1, b1)) if b1 > 0 else 0.0
    else:
        lam = tuning
    calibrated, classical = estimate(lam), estimate(0.0)
    if calibrated is None or classical is None:
        return None
    return _calibrated(
        calibrated=calibrated,
        classical=classical,
        judge=float(judge_num.sum() / judge_den.sum()),
        tuning=lam,
        labelled=len(index),
        population=len(judge_num),
    )


def ppi_labels_needed(
    *,
    judge: np.ndarray,
    labelled: np.ndarray,
    human: np.ndarray,
    strata: np.ndarray | None = None,
    width: float,
    confidence: float = 0.95,
) -> int:
    """How many more labelled units (spread over strata in proportion to their size) the
    calibrated interval needs to be at most `width` wide (full width, same unit as the
    outcomes, i.e. 0..1 for rates), from the current judge-human disagreement; 0 when it
    already is. When fewer than 2 units are labelled, a conservative figure from the
    worst-case variance (0.25 for 0/1 outcomes).

    The power analysis of ppi_mean's variance: each stratum keeps its current residual
    variance at the current tuned lambda, taken at its one-sided upper confidence bound of
    level PLANNING_ASSURANCE, (n_h - 1) S_h^2 / chi2_{1 - assurance}(n_h - 1)
    (Wilson-Hilferty), so the planned labels reach the width in most samples, not half (capped at (1 + lambda)^2 / 4 for
    outcomes in [0, 1]; the worst case where a stratum has fewer than two labels: 0.25 for
    outcomes in [0, 1], else a quarter of the judge's squared range), and
    k more labels give stratum h n_h + k N_h / N of them (at most N_h); the answer is the
    smallest k whose interval, 2 z sqrt(variance), is at most ``width``, at most the N - n
    units still unlabelled (a census has no width)."""
    judge = _values("judge", judge)
    index, design = _design(size=len(judge), labelled=labelled, strata=strata)
    human = _values("human", human, len(index))
    if not width > 0:
        raise ValueError(f"width must be positive, got {width}")
    z = _z(confidence)
    current = ppi_mean(
        judge=judge, labelled=index, human=human, strata=strata, confidence=confidence
    )
    if current is not None and current.calibrated.high - current.calibrated.low <= width:
        return 0
    unit = _unit_range(judge, human)
    worst = 0.25 if unit else float(np.ptp(judge)) ** 2 / 4
    judged = judge[index]
    if len(index):
        lam, residual, _ = _ppi_fit(design, human, judged, judge, None)
        variances = _stratum_variances(design, residual, 1.0 if unit else math.inf)
        # The estimate's own uncertainty: plan with its upper confidence bound, so the
        # planned labels reach the width in most samples rather than in half of them.
        degrees = np.maximum(design.drawn - 1, 1)
        variances = variances * degrees / _chi2_quantile(1 - PLANNING_ASSURANCE, degrees)
        if unit:
            # A residual between -lambda and 1 varies by at most (1 + lambda)^2 / 4.
            variances = np.minimum(variances, (1 + lam) ** 2 / 4)
    else:
        variances = np.full(len(design.sizes), math.inf)
    variances = np.where(np.isinf(variances) | np.isnan(variances), worst, variances)
    target = (width / (2 * z)) ** 2
    remaining = int(len(judge) - len(index))

    def fits(more: int) -> bool:
        drawn = np.minimum(design.sizes, design.drawn + more * design.weights)
        return _variance(design, variances, drawn) <= target

    low, high = 0, remaining  # fits(remaining): every unit labelled
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return max(low, 1) if remaining else 0
