"""A board's numbers, its slices and paired comparisons of two systems, all computed from the
per-task contributions (BenchmarkPlugin.metric_contributions): every metric is sum(numerators) /
sum(denominators) over its units, so the whole board (board_results), a subset of the tasks, or
two systems on the same tasks need no judge and no re-aggregation. Plain numpy, no Django; the
reads are in leaderboard/selectors_compare.py.

The documented procedures (the benchmark pages and the API say the same):

- A slice's rate has the Wilson interval of its counts (z: the plug-in's ``wilson_z``); a mean
  with a bootstrap interval gets the plug-in's interval of the slice's tasks
  (BenchmarkPlugin.mean_interval: by default the percentile interval of DRAWS resamples of
  them), none on fewer than MIN_TASKS tasks.
- A comparison counts only the tasks both systems were scored on, in task-id order; a metric's
  n is the tasks where either counts a unit of it. On fewer than MIN_TASKS (6: the fewest whose
  exact two-sided test can reach p < 0.05) there is a difference but no p-value and no
  interval, and the comparison says why.
- Where both were scored pass/fail on the same units, one unit per task, the test is the exact
  two-sided McNemar test on the units only one passed (b: only A, c: only B). Otherwise
  (means, latencies, and pass/fail units nested in a task — windows of a run, atoms of a
  case — which are not independent) it is a paired permutation test over tasks
  (stats.paired_permutation_test): each task's two contributions swapped or not; exact
  enumeration up to EXACT_MAX_TASKS tasks whose contributions differ, else
  PERMUTATION_DRAWS arrangements drawn from SEED. Tasks on which the two are exactly equal
  cannot move the test.
- The 95% interval of the difference (the whole comparison, or the slice asked for) is the
  percentile interval of DRAWS paired resamples of the metric's n tasks, drawn with
  replacement as ``numpy.random.default_rng(SEED).integers(0, n, size=(DRAWS, n))``, each
  resample scoring both systems on the same tasks; resamples leaving a system without a unit
  are left out and counted in the comparison's note. The comparison's table of slices shows
  the exact tests without intervals.
- A rank range counts, for the first rank key, the systems significantly better and worse
  (McNemar, p < 0.05) on the units both were scored on, absent tasks counting as failures as
  they do in the rank: best plausible rank 1 + better, worst plausible rank (systems ranked) -
  worse. Units nested in a task are taken as independent there.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from evaluation.stats import (
    EXACT_MAX_TASKS,
    Z95,
    bootstrap_products,
    mcnemar_exact,
    paired_permutation_tests,
    percentile_interval,
    smallest_significant_n,
)

DRAWS = 10_000
PERMUTATION_DRAWS = 10_000
SEED = 20261201
ALPHA = 0.05
# The fewest tasks behind a p-value or an interval: 6 at ALPHA 0.05.
MIN_TASKS = smallest_significant_n(ALPHA)
TEST_MCNEMAR = "McNemar (exact)"
TEST_PERMUTATION = "sign-flip permutation (exact)"
TEST_MONTE_CARLO = f"sign-flip permutation (Monte Carlo, {PERMUTATION_DRAWS:,} draws)"


# --- Stored contributions -------------------------------------------------------------------


def contributions_json(per_task: Iterable[tuple]) -> dict | None:
    """What the pipeline stores on a score, from (task id, metric_contributions()[, present])
    in task order: {"tasks": [ids], "metrics": {key: [[task index, num, den], ...]},
    "absent": [indices of tasks the submission left out]}. A (num, den) pair is the task as
    one unit (left out when the task does not count, den 0); a list of pairs is one unit each,
    all kept so that two systems' units line up. None when the plug-in declares no
    contributions. Absent tasks count in the board's numbers and its slices (as the benchmark
    scores them), never in a comparison."""
    tasks: list[str] = []
    absent: list[int] = []
    metrics: dict[str, list] = defaultdict(list)
    for index, (task_id, found, *present) in enumerate(per_task):
        tasks.append(task_id)
        if present and not present[0]:
            absent.append(index)
        for key, value in found.items():
            if isinstance(value, list):
                metrics[key].extend([index, num, den] for num, den in value)
            elif value[1]:
                metrics[key].append([index, value[0], value[1]])
    if not metrics:
        return None
    stored = {
        "tasks": tasks,
        # Boards read many scores' units at once; scores share their task lists by this key.
        "tasks_sha": hashlib.sha256("\n".join(tasks).encode()).hexdigest()[:16],
        "metrics": dict(sorted(metrics.items())),
    }
    if absent:
        stored["absent"] = absent
    return stored


@dataclass(frozen=True)
class Units:
    """A metric's units on a list of tasks: the task's place in the list, numerator,
    denominator; in task order, a task's units in their stored order."""

    task: np.ndarray
    num: np.ndarray
    den: np.ndarray

    def task_sums(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.bincount(self.task, weights=self.num, minlength=n),
            np.bincount(self.task, weights=self.den, minlength=n),
        )

    @property
    def pass_fail(self) -> bool:
        """Every unit counts once and passes (1) or fails (0)."""
        return bool(np.all(self.den == 1.0) and np.all((self.num == 0.0) | (self.num == 1.0)))


@dataclass
class Contributions:
    tasks: list[str]
    metrics: dict[str, np.ndarray]  # key -> (units, 3): task index, num, den
    absent: frozenset[str] = frozenset()  # tasks left out of the submission

    @property
    def scored(self) -> set[str]:
        """The tasks this system was scored on from its own output."""
        return set(self.tasks) - self.absent

    @classmethod
    def from_json(cls, data: Mapping | None) -> Contributions | None:
        if not data or not data.get("metrics"):
            return None
        metrics = {
            key: np.asarray(rows, dtype=np.float64).reshape(-1, 3)
            for key, rows in data["metrics"].items()
        }
        tasks = list(data["tasks"])
        absent = frozenset(tasks[i] for i in data.get("absent", ()))
        return cls(tasks, metrics, absent)

    def places(self, order: Mapping[str, int]) -> np.ndarray:
        """Each of this system's tasks' place in ``order`` (task id -> place), -1 where absent."""
        return np.array([order.get(task, -1) for task in self.tasks], dtype=np.int64)

    def units(self, key: str, order: Mapping[str, int], places: np.ndarray | None = None) -> Units:
        """The metric's units on the tasks of ``order`` (task id -> place), by place;
        ``places``: self.places(order), when the caller reads several metrics."""
        rows = self.metrics.get(key)
        if rows is None or not len(rows):
            return Units(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        if places is None:
            places = self.places(order)
        at = places[rows[:, 0].astype(np.int64)]
        kept = at >= 0
        at, rows = at[kept], rows[kept]
        sort = np.argsort(at, kind="stable")
        return Units(at[sort], rows[sort, 1], rows[sort, 2])


# --- Columns: every metric of every split ---------------------------------------------------


@dataclass(frozen=True)
class Column:
    key: str  # the split's key first where there are splits
    metric: object  # evaluation.benchmarks.base.Metric
    split: str = ""


def all_columns(plugin) -> list[Column]:
    splits = [split.key for split in plugin.splits] or [""]
    return [
        Column(f"{split}.{metric.key}" if split else metric.key, metric, split)
        for split in splits
        for metric in plugin.metrics
    ]


def compared(metric) -> bool:
    """Whether two systems' values of the metric are compared (a difference, a test): counts
    (how many probes, say) and plain numbers (a p-value, say) are reported, not compared."""
    return metric.type not in ("count", "number")


def _scale(metric) -> float:
    return 100.0 if metric.unit == "%" else 1.0


def _set(results: dict, path: Sequence[str], value) -> None:
    node = results
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


# --- Slices ---------------------------------------------------------------------------------


def slice_key(attribute: str, value) -> str:
    return f"{attribute}={slice_value(value)}"


def slice_value(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def slices_version(plugin) -> str:
    """Changes when the plug-in's slices, metrics or rules change: stored slice results made
    under another version are recomputed (manage.py score_slices)."""
    text = json.dumps(
        [
            plugin.rules_version,
            [(a.name, a.label, a.type) for a in plugin.slices],
            [
                (c.key, c.metric.type, c.metric.interval, c.metric.decimals)
                for c in all_columns(plugin)
            ],
            DRAWS,
            SEED,
            # The procedures: 2 adds the minimum n, the plug-in's own mean interval and
            # resampling only the tasks that count.
            2,
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def board_results(plugin, outcomes: Sequence, *, facts: Mapping) -> dict:
    """The board's results from every task's contributions (BenchmarkPlugin.aggregate unless a
    plug-in overrides it): results_on over all the tasks, absent ones counting as the benchmark
    scores them. A mean's interval is shown on any number of tasks, as a benchmark shows its
    own; a slice holds it back below MIN_TASKS."""
    return board_results_from(
        plugin,
        contributions_json(
            (outcome.task_id, contributed, outcome.present)
            for outcome, contributed in zip(
                outcomes, plugin.task_contributions(outcomes, facts=facts), strict=True
            )
        ),
    )


def board_results_from(plugin, contributions: dict | None) -> dict:
    """board_results from the contributions already made of the same outcomes (as
    contributions_json gives them, and a score stores them): {} when there are none."""
    found = Contributions.from_json(contributions)
    if found is None:
        return {}
    return results_on(plugin, found, found.tasks, min_tasks=1)


def results_on(
    plugin, contributions: Contributions, tasks: Sequence[str], *, min_tasks: int = MIN_TASKS
) -> dict:
    """Every metric on these tasks, in the plug-in's results format (a rate {"count", "total",
    "pct"}, a mean {"value" or "pct", "ci"?, "n"}, a duration or count a number), with the
    metric's own interval method; a mean's interval only on ``min_tasks`` tasks or more."""
    order = {task: i for i, task in enumerate(tasks)}
    places = contributions.places(order)
    n = len(tasks)
    found = []
    for column in all_columns(plugin):
        if column.key in contributions.metrics:
            units = contributions.units(column.key, order, places)
            total_num, total_den = float(units.num.sum()), float(units.den.sum())
            value = plugin.metric_value(column.metric, total_num, total_den)
            found.append((column, units, total_num, total_den, value))
    # Every bootstrap interval of these tasks: the plug-in's own method where it declares one,
    # else the core's, from one pass over the same resamples of the tasks that count.
    intervals: dict = {}
    booted = []
    for column, units, _, _, value in found:
        if column.metric.type != "mean" or column.metric.interval != "bootstrap" or value is None:
            continue
        num, den = units.task_sums(n)
        counted = den > 0
        if int(counted.sum()) < min_tasks:
            continue
        ids = [task for task, kept in zip(tasks, counted, strict=True) if kept]
        own = plugin.mean_interval(column.metric, ids, num[counted], den[counted])
        if own is not None:
            intervals[column.key] = (own, "plugin")
        else:
            booted.append((column, num[counted], den[counted], counted))
    by_tasks: dict[bytes, list] = defaultdict(list)
    for entry in booted:
        by_tasks[entry[3].tobytes()].append(entry)
    for group in by_tasks.values():
        operands = [part for _, num, den, _ in group for part in (num, den)]
        products = bootstrap_products(int(group[0][3].sum()), operands, draws=DRAWS, seed=SEED)
        for i, (column, _, _, _) in enumerate(group):
            draws = _scale(column.metric) * products[2 * i] / products[2 * i + 1]
            low, high = percentile_interval(draws)
            decimals = column.metric.decimals
            intervals[column.key] = ([round(low, decimals), round(high, decimals)], "core")
    results: dict = {}
    for column, units, total_num, total_den, value in found:
        metric = column.metric
        path = column.key.split(".")
        if metric.type == "rate":
            _set(
                results,
                path,
                {"count": int(round(total_num)), "total": int(round(total_den)), "pct": value},
            )
        elif metric.type == "mean":
            node = {"pct" if metric.unit == "%" else "value": value, "n": int(len(set(units.task)))}
            if column.key in intervals:
                node["ci"] = list(intervals[column.key][0])
            _set(results, path, node)
        elif metric.type == "count":
            _set(results, path, int(round(total_num)))
        else:
            _set(results, path, value)
    return results


def slice_results(plugin, contributions: Contributions, attributes: Mapping[str, Mapping]) -> dict:
    """Stored on a score beside its contributions: for every value of every slice attribute,
    the tasks of that slice and every metric on them. ``attributes``: task id -> the
    plug-in's task_attributes()."""
    values: dict = {}
    for attribute in plugin.slices:
        groups: dict[str, list[str]] = defaultdict(list)
        for task in contributions.tasks:
            found = attributes.get(task, {}).get(attribute.name)
            if found is not None:
                groups[slice_value(found)].append(task)
        for value, tasks in sorted(groups.items()):
            values[f"{attribute.name}={value}"] = {
                "tasks": len(tasks),
                "results": results_on(plugin, contributions, tasks),
            }
    return {"version": slices_version(plugin), "values": values}


# --- Paired comparison ----------------------------------------------------------------------


@dataclass(frozen=True)
class MetricComparison:
    key: str
    a: float | None
    b: float | None
    difference: float | None  # a - b in the metric's unit (unrounded sums)
    interval: tuple[float, float] | None  # 95% paired bootstrap interval of the difference
    p_value: float | None
    test: str  # TEST_MCNEMAR, TEST_PERMUTATION or TEST_MONTE_CARLO; "" without a test
    only_a: int | None  # units only A passed (McNemar's b), on pass/fail units
    only_b: int | None  # units only B passed (McNemar's c)
    units_a: int  # units A counts in this metric on the compared tasks
    units_b: int
    tasks: int = 0  # compared tasks where either system counts a unit of this metric: its n
    note: str = ""  # why there is no p-value or interval, or what the interval left out

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA


@dataclass(frozen=True)
class Disagreement:
    task_id: str
    # column key -> (A passed, B passed, units): the pass/fail metrics the two differ on
    outcomes: dict


@dataclass(frozen=True)
class Comparison:
    tasks: int  # tasks both systems were scored on (in the slice)
    draws: int  # bootstrap resamples behind the intervals (0: no intervals)
    seed: int
    metrics: list[MetricComparison]
    disagreements: list[Disagreement] = field(default_factory=list)


def common_tasks(a: Contributions, b: Contributions, keep=None) -> list[str]:
    """The tasks both were scored on (submitted), in task-id order; ``keep`` filters them (a
    slice)."""
    shared = a.scored & b.scored
    return sorted(task for task in shared if keep is None or keep(task))


def _one_per_task(units: Units) -> bool:
    return len(np.unique(units.task)) == len(units.task)


def compare(
    plugin, columns, a: Contributions, b: Contributions, tasks: Sequence[str], *, draws=DRAWS
) -> Comparison:
    """Each column (objects with .key and .metric) of system A against system B on ``tasks``
    (see common_tasks), by the procedure in this module's docstring. Every metric gets its
    difference and its exact (or Monte Carlo) test; with draws=0 no bootstrap intervals (a
    slice of the comparison page)."""
    order = {task: i for i, task in enumerate(tasks)}
    n = len(tasks)
    present = [
        c for c in columns if (c.key in a.metrics or c.key in b.metrics) and compared(c.metric)
    ]
    a_places, b_places = a.places(order), b.places(order)
    per_task = {}
    for column in present:
        ua, ub = a.units(column.key, order, a_places), b.units(column.key, order, b_places)
        per_task[column.key] = (ua, ub, np.column_stack([*ua.task_sums(n), *ub.task_sums(n)]))

    results, differing, to_resample, to_permute = [], defaultdict(dict), [], []
    for column in present:
        metric = column.metric
        ua, ub, sums_by_task = per_task[column.key]
        sums = sums_by_task.sum(axis=0)
        value_a = plugin.metric_value(metric, float(sums[0]), float(sums[1]))
        value_b = plugin.metric_value(metric, float(sums[2]), float(sums[3]))
        counted = (sums_by_task[:, 1] > 0) | (sums_by_task[:, 3] > 0)
        found = {
            "key": column.key,
            "a": value_a,
            "b": value_b,
            "difference": None,
            "interval": None,
            "p_value": None,
            "test": "",
            "only_a": None,
            "only_b": None,
            "units_a": int(len(ua.task)),
            "units_b": int(len(ub.task)),
            "tasks": int(counted.sum()),
            "note": "",
        }
        paired_units = np.array_equal(ua.task, ub.task) and ua.pass_fail and ub.pass_fail
        if paired_units and len(ua.task):
            found["only_a"] = int(((ua.num == 1) & (ub.num == 0)).sum())
            found["only_b"] = int(((ua.num == 0) & (ub.num == 1)).sum())
            for place in np.unique(ua.task[ua.num != ub.num]):
                at = ua.task == place
                differing[tasks[place]][column.key] = (
                    int(ua.num[at].sum()),
                    int(ub.num[at].sum()),
                    int(at.sum()),
                )
        if value_a is None or value_b is None:
            found["note"] = f"no units of {'A' if value_a is None else 'B'} to compare"
            results.append(found)
            continue
        scale = _scale(metric)
        found["difference"] = scale * (sums[0] / sums[1] - sums[2] / sums[3])
        if found["tasks"] < MIN_TASKS:
            found["note"] = (
                f"n = {found['tasks']} task{'s' if found['tasks'] != 1 else ''}: no test or "
                f"interval below {MIN_TASKS}, the fewest whose exact test can reach "
                f"p < {ALPHA:g}"
            )
            results.append(found)
            continue
        if paired_units and _one_per_task(ua):
            found["p_value"] = mcnemar_exact(found["only_a"], found["only_b"])
            found["test"] = TEST_MCNEMAR
        else:
            # Units nested in a task (windows of a run, atoms of a case) move together: the
            # task is the unit of the test.
            to_permute.append((len(results), sums_by_task, scale))
        if draws:
            to_resample.append((len(results), counted, sums_by_task, scale))
        results.append(found)

    tests = paired_permutation_tests(
        [table for _, table, _ in to_permute],
        [scale for _, _, scale in to_permute],
        draws=PERMUTATION_DRAWS,
        seed=SEED,
    )
    for (at, _, _), test in zip(to_permute, tests, strict=True):
        if test is not None:
            results[at]["p_value"] = test.p_value
            results[at]["test"] = TEST_PERMUTATION if test.exact else TEST_MONTE_CARLO
    _paired_intervals(results, to_resample, draws)
    disagreements = [Disagreement(task, differing[task]) for task in sorted(differing)]
    return Comparison(n, draws, SEED, [MetricComparison(**m) for m in results], disagreements)


def _paired_intervals(results: list[dict], wanted: list, draws: int) -> None:
    """The paired bootstrap interval of each wanted metric's difference, resampling the tasks
    that count in it (in task-id order); metrics counting on the same tasks share one pass
    over the same resamples."""
    by_tasks: dict[bytes, list] = defaultdict(list)
    for entry in wanted:
        by_tasks[entry[1].tobytes()].append(entry)
    for group in by_tasks.values():
        counted = group[0][1]
        operands = [np.ascontiguousarray(sums[counted]) for _, _, sums, _ in group]
        stacked = np.hstack(operands)
        (resampled,) = bootstrap_products(int(counted.sum()), [stacked], draws=draws, seed=SEED)
        for i, (at, _, _, scale) in enumerate(group):
            block = resampled[:, 4 * i : 4 * i + 4]
            with np.errstate(divide="ignore", invalid="ignore"):
                diffs = scale * (block[:, 0] / block[:, 1] - block[:, 2] / block[:, 3])
            undefined = int((~np.isfinite(diffs)).sum())
            results[at]["interval"] = percentile_interval(diffs)
            if undefined:
                results[at]["note"] = (
                    f"{undefined:,} of {draws:,} resamples left a system without a unit and "
                    "are not in the interval"
                )


# --- Rank ranges ----------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def mcnemar_critical(n: int) -> int:
    """The largest min(b, c) with b + c = n that McNemar's exact test finds significant
    (p < ALPHA); -1 when none is. Integer arithmetic: p < 0.05 iff 40 * tail < 2**n."""
    limit = 2**n
    scale = round(2 / ALPHA)
    tail, term, k = 0, 1, -1
    for i in range(n // 2 + 1):
        tail += term
        if scale * tail >= limit:
            break
        k = i
        term = term * (n - i) // (i + 1)
    return k


def rank_ranges(
    systems: Sequence[Contributions | None], key: str, groups: Sequence[str] | None = None
) -> list[tuple[int, int] | None]:
    """Each system's plausible rank range on one pass/fail metric (see the module docstring),
    within its group where ``groups`` is given. None for a system without contributions or
    where the metric is not pass/fail on units."""
    groups = list(groups) if groups is not None else [""] * len(systems)
    found: list[tuple[int, int] | None] = [None] * len(systems)
    for group in dict.fromkeys(groups):
        members = [
            i
            for i, system in enumerate(systems)
            if groups[i] == group and system is not None and key in system.metrics
        ]
        members = [i for i in members if _pass_fail_rows(systems[i].metrics[key])]
        if not members:
            continue
        passed, counted = _unit_matrix([systems[i] for i in members], key)
        only_row = (passed * counted) @ ((1 - passed) * counted).T  # b[i, j]: i passed, j not
        b = np.rint(only_row).astype(np.int64)
        c = b.T
        n = b + c
        # Few distinct n (at most the units): each critical value is computed once.
        values, where = np.unique(n, return_inverse=True)
        table = np.array([mcnemar_critical(int(v)) for v in values], np.int64)
        critical = table[where].reshape(n.shape)
        significant = np.minimum(b, c) <= critical
        np.fill_diagonal(significant, False)
        better = (significant & (c > b)).sum(axis=1)
        worse = (significant & (b > c)).sum(axis=1)
        for place, i in enumerate(members):
            found[i] = (int(1 + better[place]), int(len(members) - worse[place]))
    return found


def _pass_fail_rows(rows: np.ndarray) -> bool:
    return bool(np.all(rows[:, 2] == 1.0) and np.all((rows[:, 1] == 0.0) | (rows[:, 1] == 1.0)))


def _unit_matrix(systems: Sequence[Contributions], key: str) -> tuple[np.ndarray, np.ndarray]:
    """(systems, units) matrices of pass and counted over the union of the systems' units, a
    unit being (task id, its place among the task's units)."""
    task_ids: dict[str, int] = {}
    codes = []
    for system in systems:
        gids = np.array([task_ids.setdefault(t, len(task_ids)) for t in system.tasks], np.int64)
        rows = system.metrics[key]
        task = gids[rows[:, 0].astype(np.int64)]
        sort = np.argsort(task, kind="stable")
        task = task[sort]
        starts = np.searchsorted(task, task, side="left")
        ordinal = np.arange(len(task)) - starts
        codes.append((task * 1_000_000 + ordinal, rows[sort, 1]))
    universe = np.unique(np.concatenate([code for code, _ in codes]))
    passed = np.zeros((len(systems), len(universe)), np.float32)
    counted = np.zeros_like(passed)
    for row, (code, num) in enumerate(codes):
        at = np.searchsorted(universe, code)
        passed[row, at] = num
        counted[row, at] = 1.0
    return passed, counted


# --- Methods: what each metric's interval and test are, from the plug-in's declarations -------


@dataclass(frozen=True)
class MetricMethod:
    key: str
    group: str
    label: str
    interval: str
    test: str
    minimum: str
    resampled: str


def metric_methods(plugin) -> list[MetricMethod]:
    """Per metric of the board (each split alike), the interval the board and its slices show,
    the test a comparison of two systems uses, the fewest units behind either, and the unit a
    resample or a permutation moves: the benchmark's About page states them."""
    found = []
    for metric in plugin.metrics:
        units = metric.units
        nested = f"{units}, nested in {metric.nested_in}" if metric.nested_in else units
        by_task = (
            f"tasks ({metric.nested_in}: each one's {units} together)"
            if metric.nested_in
            else "tasks"
        )
        if metric.interval == "wilson":
            z = "1.959964" if plugin.wilson_z == Z95 else f"{plugin.wilson_z:g}"
            interval = f"95% Wilson score interval of the count of {nested} (z = {z})"
            if metric.nested_in:
                interval += f", taking the {units} as independent"
            minimum_interval = "1 unit"
            resampled = "none (a formula on the count)"
        elif metric.interval == "bootstrap":
            own = plugin.overrides("mean_interval")
            interval = (
                "95% percentile bootstrap interval, the benchmark's own procedure (see the "
                "metric's description)"
                if own
                else f"95% percentile bootstrap interval of {DRAWS:,} resamples (seed {SEED})"
            )
            minimum_interval = f"{MIN_TASKS} tasks"
            resampled = "tasks"
        else:
            interval = "none"
            minimum_interval = "–"
            resampled = "–"
        if metric.type == "count":
            test = "none (a count is reported, not compared)"
        elif metric.significant:
            test = "none (it is itself a test's p-value)"
        elif metric.type == "number":
            test = "none (a number is reported, not compared)"
        elif metric.type == "rate" and not metric.nested_in:
            test = (
                "exact two-sided McNemar test on the units both were scored on (a sign-flip "
                "permutation test over tasks where their units differ)"
            )
        else:
            test = (
                f"two-sided sign-flip permutation test over {by_task}: exact up to "
                f"{EXACT_MAX_TASKS} differing tasks, else {PERMUTATION_DRAWS:,} draws (seed "
                f"{SEED})"
            )
        minimum = (
            f"interval: {minimum_interval}; test and interval of a difference: {MIN_TASKS} tasks"
        )
        if not compared(metric) or metric.significant:
            minimum = "–"
        found.append(
            MetricMethod(
                metric.key,
                metric.group,
                metric.label,
                interval,
                test,
                minimum,
                f"{resampled}; differences: {by_task}" if minimum != "–" else "–",
            )
        )
    return found
