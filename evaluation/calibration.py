"""Calibration of judged metrics by human labels: which metrics a plug-in declares, what a
submission's population of units is, and how the About page says so. Pure computation (the
annotation app reads the rows and writes the results; the estimator is evaluation/stats.py).

A declared metric is one of the board's metrics; a calibration study calibrates one column of
it (the metric itself, or the metric in one split: ``<split>.<key>``, as the board's columns and
the scores' contributions name it, and as CalibratedScore.metric holds it). Its population for
one submission is every unit the column counts, read from the score's stored contributions,
with the judge's outcome on each: the
units the plug-in offers for rating (``study_units``) carry the judge's label; what the board
counts beyond them (a verdict decided without a call, a unit the judge never saw) is *fixed*:
decided by the board's rule, with people's outcome taken equal to the judge's and inclusion
probability 1. So the judge's mean over the population is the board's value, exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.benchmarks.base import CalibratedMetric, Metric
from evaluation.slices import all_columns

# Fewer labelled units than this (per submission) give no calibrated value, only the number of
# labels still needed: with one or two labels the judge-human disagreement is not estimated.
MIN_LABELLED = 10


class CalibrationError(ValueError):
    """A calibration that cannot be set up; the message names the problem."""


@dataclass(frozen=True)
class Draw:
    """What the sampler draws: one unit (``slots`` of one), or a whole task for a metric
    counted per task (every slot of it), with the judge's outcome (1: the kind's first label)."""

    row: int  # the task result
    slots: tuple[str, ...]
    judge: int


@dataclass(frozen=True)
class Population:
    draws: tuple[Draw, ...]
    fixed: tuple[int, ...]  # outcomes of units the board decides without the judge's label

    @property
    def size(self) -> int:
        return len(self.draws) + len(self.fixed)

    def judge_mean(self) -> float | None:
        if not self.size:
            return None
        return (sum(d.judge for d in self.draws) + sum(self.fixed)) / self.size


def calibrated_columns(plugin) -> list[tuple[str, CalibratedMetric, Metric]]:
    """(column key, declaration, metric) of every board column a declaration makes
    calibratable: the metric itself, or the metric in each split (``<split>.<key>``, the key
    of the board's column and of its contributions) where the benchmark has splits. A
    calibration study calibrates one column."""
    found = []
    for declared in plugin.calibrated_metrics:
        metric = resolve(plugin, declared)
        for column in all_columns(plugin):
            if column.metric.key == declared.metric:
                found.append((column.key, declared, metric))
    return found


def declared_metric(plugin, key: str) -> tuple[CalibratedMetric, Metric]:
    """The plug-in's declaration behind the column ``key`` and the board metric it
    calibrates."""
    for column, declared, metric in calibrated_columns(plugin):
        if column == key:
            return declared, metric
    offered = ", ".join(column for column, _, _ in calibrated_columns(plugin)) or "none"
    raise CalibrationError(
        f"{plugin.name} declares no calibrated metric {key!r} (it declares: {offered})"
    )


def resolve(plugin, declared: CalibratedMetric) -> Metric:
    """The board metric a declaration names, checked: a rate or percent mean of the plug-in's
    metrics, of a study kind it offers, with an estimator and unit the core knows."""
    metric = next((m for m in plugin.metrics if m.key == declared.metric), None)
    problems = []
    if metric is None:
        problems.append(f"{declared.metric!r} is not a metric of the board")
    elif metric.type not in ("rate", "mean"):
        problems.append(f"{declared.metric!r} is a {metric.type}, not a rate or a mean")
    if declared.study_kind not in {kind.key for kind in plugin.study_kinds}:
        problems.append(f"study kind {declared.study_kind!r} is not one of the plug-in's")
    if declared.unit not in ("unit", "task"):
        problems.append(f"unit {declared.unit!r} is not 'unit' or 'task'")
    if declared.estimator != "mean":
        problems.append(
            f"estimator {declared.estimator!r}: calibration studies estimate means of 0/1 "
            "outcomes over the units a metric counts"
        )
    if problems:
        raise CalibrationError(f"{plugin.name}, calibrated metric: " + "; ".join(problems))
    return metric


def metric_label(plugin, key: str) -> str:
    """A column's name as the board heads it: the split's label, the group and the metric."""
    splits = {split.key: split.label for split in plugin.splits}
    column = next(c for c in all_columns(plugin) if c.key == key)
    parts = [splits.get(column.split, ""), column.metric.group, column.metric.label]
    return " · ".join(part for part in parts if part)


def _whole(value: float) -> int | None:
    rounded = round(value)
    return int(rounded) if abs(value - rounded) < 1e-9 else None


def population(
    *,
    key: str,
    declared: CalibratedMetric,
    positive: str,
    contributions: Mapping | None,
    units: Iterable[tuple[str, int, str, str | None]],
) -> Population:
    """A submission's population for one declared metric. ``contributions``: the score's stored
    contributions (Score.contributions); ``units``: (task id, task result id, slot, judge
    label) of every unit the plug-in offers for rating under the declared study kind, in task
    order. A task whose rateable units cannot reproduce what it adds to the board is fixed
    whole (its board outcome, never drawn). ``key``: the column (see calibrated_columns)."""
    if not contributions:
        raise CalibrationError(f"the score holds no per-task contributions (to {key!r})")
    rows = contributions.get("metrics", {}).get(key)
    if not rows:
        return Population((), ())  # no task of the submission counts in it
    tasks = contributions["tasks"]
    counted: dict[str, list[float]] = {}
    for index, num, den in rows:
        found = counted.setdefault(tasks[int(index)], [0.0, 0.0])
        found[0] += num
        found[1] += den
    offered: dict[str, tuple[int, list[tuple[str, str | None]]]] = {}
    for task_id, row, slot, label in units:
        offered.setdefault(task_id, (row, []))[1].append((slot, label))
    draws: list[Draw] = []
    fixed: list[int] = []
    for task_id in sorted(counted):
        num, den = (_whole(value) for value in counted[task_id])
        if num is None or den is None or not 0 <= num <= den:
            raise CalibrationError(
                f"{key!r} is not a count of 0/1 outcomes (task {task_id!r} adds "
                f"{counted[task_id][0]} of {counted[task_id][1]})"
            )
        row, found = offered.get(task_id, (0, []))
        if declared.unit == "task":
            outcome = int(bool(found) and all(label == positive for _, label in found))
            if (
                den == 1
                and found
                and all(label is not None for _, label in found)
                and (outcome == num)
            ):
                draws.append(Draw(row, tuple(slot for slot, _ in found), outcome))
            else:
                fixed.extend([1] * num + [0] * (den - num))
            continue
        judged = [(slot, int(label == positive)) for slot, label in found if label is not None]
        ones, rest = num - sum(o for _, o in judged), den - len(judged)
        if 0 <= ones <= rest:
            draws.extend(Draw(row, (slot,), outcome) for slot, outcome in judged)
            fixed.extend([1] * ones + [0] * (rest - ones))
        else:
            fixed.extend([1] * num + [0] * (den - num))
    return Population(tuple(draws), tuple(fixed))


def majority(labels: Sequence[str | None], *, positive: str) -> int | None:
    """People's outcome on one unit: 1 when the label most raters gave (strictly more than any
    other) is ``positive``, 0 when it is another label; None ("can't judge" only, a tie, no
    rating): the unit counts as unlabelled. Calibration drops ties whatever the study's tie
    rule, which for agreement figures may resolve a tie against the judge (a verdict steering
    the outcome)."""
    counts: dict[str, int] = defaultdict(int)
    for label in labels:
        if label is not None:
            counts[label] += 1
    if not counts:
        return None
    top = max(counts.values())
    winners = [label for label, count in counts.items() if count == top]
    if len(winners) > 1:
        return None
    return int(winners[0] == positive)


def methods_paragraph(plugin) -> str:
    """The About page's sentence on calibration, from the plug-in's declarations ("" when it
    declares none)."""
    declared = plugin.calibrated_metrics
    if not declared:
        return ""
    kinds = {kind.key: kind for kind in plugin.study_kinds}
    splits = " in each of " + ", ".join(s.label for s in plugin.splits) if plugin.splits else ""
    parts = []
    for item in declared:
        kind = kinds.get(item.study_kind)
        what = (
            f"per task ({kind.label.lower() if kind else item.study_kind}: a task counts as "
            f"{kind.labels[0] if kind else 'positive'} when every one of its units is, and only "
            "tasks whose every unit people labelled count as labelled)"
            if item.unit == "task"
            else f"per unit ({kind.label.lower() if kind else item.study_kind})"
        )
        metric = next(m for m in plugin.metrics if m.key == item.metric)
        name = " · ".join(part for part in (metric.group, metric.label) if part)
        parts.append(f"{name}{splits}, {what}")
    return (
        "Human-calibrated values. Where a calibration study exists, the judge's value of "
        + "; ".join(parts)
        + " is corrected by people's labels on a sample of units drawn uniformly at random "
        "within each submission (never chosen by the judge's verdict): prediction-powered "
        "inference (PPI++, power-tuned) combines the judge's outcome on every unit with "
        "people's outcome (the majority of the raters not excluded; ties and \"can't judge\" "
        "leave a unit unlabelled) on the sample, giving an estimate of the value people would "
        "give with a 95% interval that holds whatever the judge's errors, beside the "
        "humans-only estimate and the judge's bias. Units the board decides without the "
        "judge (a verdict decided without a call, a unit the judge never saw) count as decided. "
        f"A submission with fewer than {MIN_LABELLED} labelled units has no calibrated value."
    )
