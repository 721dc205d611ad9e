"""Slices and paired comparisons, recomputed from stored per-task contributions (see
BenchmarkPlugin.metric_contributions): every metric is sum(numerators) / sum(denominators) over
its tasks, so a subset of the tasks, or two systems on the same tasks, need no judge and no
re-aggregation. Plain numpy; the reads are in leaderboard/selectors_compare.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.stats import (
    bootstrap_weights,
    mcnemar_exact,
    percentile_interval,
    wilson_interval,
)

DRAWS = 10_000
SEED = 20261201


@dataclass
class Contributions:
    """One score's contributions as arrays: num and den are (metrics, tasks)."""

    tasks: list[str]
    keys: list[str]
    num: np.ndarray
    den: np.ndarray

    @classmethod
    def from_json(cls, data: dict | None) -> Contributions | None:
        if not data or not data.get("metrics"):
            return None
        keys = sorted(data["metrics"])
        pairs = np.array([data["metrics"][key] for key in keys], dtype=np.float64)
        return cls(list(data["tasks"]), keys, pairs[..., 0], pairs[..., 1])

    def restricted(self, tasks: list[str]) -> Contributions:
        """The same contributions on these tasks (in this order), which this score must have."""
        index = {task: i for i, task in enumerate(self.tasks)}
        order = [index[task] for task in tasks]
        return Contributions(list(tasks), self.keys, self.num[:, order], self.den[:, order])


@dataclass(frozen=True)
class SliceValue:
    value: float | None
    numerator: float
    denominator: float
    interval: tuple[float, float] | None
    tasks: int  # tasks of the slice this metric counts in


def metric_rows(plugin, columns, contributions: Contributions, mask: np.ndarray) -> dict:
    """Every column's value on the tasks where ``mask`` is true, with its interval by the
    metric's own method (Wilson from the counts; a seeded task bootstrap for the others)."""
    found = {}
    weights = None
    for column in columns:
        if column.key not in contributions.keys:
            continue
        row = contributions.keys.index(column.key)
        num, den = contributions.num[row][mask], contributions.den[row][mask]
        total_num, total_den = float(num.sum()), float(den.sum())
        value = plugin.metric_value(column.metric, total_num, total_den)
        interval = None
        if value is not None and column.metric.interval == "wilson":
            bounds = wilson_interval(int(round(total_num)), int(round(total_den)))
            interval = None if bounds is None else (100 * bounds[0], 100 * bounds[1])
        elif value is not None and column.metric.interval == "bootstrap":
            if weights is None:
                weights = bootstrap_weights(int(mask.sum()), draws=2000, seed=SEED)
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = (weights @ num) / (weights @ den)
            scale = 100 if column.metric.unit == "%" else 1
            low, high = percentile_interval(draws * scale)
            interval = (round(low, column.metric.decimals), round(high, column.metric.decimals))
        found[column.key] = SliceValue(value, total_num, total_den, interval, int((den > 0).sum()))
    return found


@dataclass(frozen=True)
class MetricComparison:
    key: str
    a: float | None
    b: float | None
    difference: float | None  # a - b, in the metric's unit
    interval: tuple[float, float] | None  # 95% paired bootstrap interval of the difference
    p_value: float | None
    test: str  # "McNemar (exact)" or "paired bootstrap"
    only_a: int | None  # McNemar's b: units only the first system passed
    only_b: int | None  # McNemar's c
    units: int  # units both were scored on


def _binary_units(num_a, den_a, num_b, den_b) -> bool:
    """Both systems scored pass/fail on the same units: the same 0/1 denominators."""
    return (
        np.array_equal(den_a, den_b)
        and np.isin(den_a, (0.0, 1.0)).all()
        and np.isin(num_a, (0.0, 1.0)).all()
        and np.isin(num_b, (0.0, 1.0)).all()
    )


def compare(
    plugin, columns, a: Contributions, b: Contributions, mask: np.ndarray, *, draws: int = DRAWS
) -> list[MetricComparison]:
    """Each column of system A against system B on the same tasks (``mask`` over a's task order,
    b restricted to a's tasks): exact McNemar on pass/fail units, else a paired bootstrap over
    tasks (both resampled together, seeded)."""
    n = int(mask.sum())
    weights = bootstrap_weights(n, draws=draws, seed=SEED) if n else None
    results = []
    for column in columns:
        if column.key not in a.keys or column.key not in b.keys:
            continue
        ra, rb = a.keys.index(column.key), b.keys.index(column.key)
        num_a, den_a = a.num[ra][mask], a.den[ra][mask]
        num_b, den_b = b.num[rb][mask], b.den[rb][mask]
        value_a = plugin.metric_value(column.metric, float(num_a.sum()), float(den_a.sum()))
        value_b = plugin.metric_value(column.metric, float(num_b.sum()), float(den_b.sum()))
        scale = 100 if column.metric.unit == "%" else 1
        difference = interval = p_value = only_a = only_b = None
        test = "paired bootstrap"
        if value_a is not None and value_b is not None and n:
            difference = value_a - value_b
            with np.errstate(divide="ignore", invalid="ignore"):
                diffs = scale * (
                    (weights @ num_a) / (weights @ den_a) - (weights @ num_b) / (weights @ den_b)
                )
            low, high = percentile_interval(diffs)
            interval = (low, high)
            if _binary_units(num_a, den_a, num_b, den_b):
                counted = den_a > 0
                only_a = int(((num_a == 1) & (num_b == 0) & counted).sum())
                only_b = int(((num_a == 0) & (num_b == 1) & counted).sum())
                p_value = mcnemar_exact(only_a, only_b)
                test = "McNemar (exact)"
            else:
                finite = diffs[np.isfinite(diffs)]
                if len(finite):
                    below = float((finite <= 0).mean())
                    above = float((finite >= 0).mean())
                    p_value = min(1.0, 2 * min(below, above))
        results.append(
            MetricComparison(
                column.key,
                value_a,
                value_b,
                difference,
                interval,
                p_value,
                test,
                only_a,
                only_b,
                int(((den_a > 0) & (den_b > 0)).sum()),
            )
        )
    return results
