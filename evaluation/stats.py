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


def wilson_pct(rate: Mapping | None, digits: int = 2) -> tuple[float, float] | None:
    """The 95% interval, in percent, of a rate {"count", "total", "pct"}. None when the rate
    carries no counts (numbers copied from a paper) or covers no item."""
    if not isinstance(rate, Mapping):
        return None
    count, total = rate.get("count"), rate.get("total")
    if not isinstance(count, int) or not isinstance(total, int) or isinstance(count, bool):
        return None
    interval = wilson_interval(count, total)
    if interval is None:
        return None
    low, high = interval
    return round(100 * low, digits), round(100 * high, digits)


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
