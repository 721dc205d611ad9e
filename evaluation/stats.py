"""Uncertainty and agreement statistics shared by the board, judge agreement and rating
studies. Plain Python and numpy: no Django."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
