"""Uncertainty and agreement statistics behind the leaderboard. Plain Python: no Django."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

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


def agreement_from_table(table: Mapping[tuple[Hashable, Hashable], int]) -> Agreement:
    """From a contingency table {(label of rater A, label of rater B): items}."""
    n = sum(table.values())
    if n == 0:
        return Agreement(items=0, agreed=0, raw=None, kappa=None)
    agreed = sum(count for (a, b), count in table.items() if a == b)
    rows: Counter = Counter()
    columns: Counter = Counter()
    for (a, b), count in table.items():
        rows[a] += count
        columns[b] += count
    # kappa = (p_o - p_e) / (1 - p_e), multiplied through by n^2 to stay in integers.
    expected = sum(rows[label] * columns[label] for label in rows)
    kappa = None if expected == n * n else (agreed * n - expected) / (n * n - expected)
    return Agreement(items=n, agreed=agreed, raw=agreed / n, kappa=kappa)


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
