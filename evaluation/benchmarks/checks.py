"""The checks the registry runs on a plug-in's declarations when it loads it.

Every name a declaration uses must name something the plug-in declares (a rank key or a chart's
metric a metric, a study kind's judge kind a judge kind, ...), keys are unique, and each field
with a fixed set of values holds one of them. A plug-in that fails is refused with every
problem listed, each naming the declaration, the unknown name and the closest declared one: a
misspelt rank key would otherwise be dropped and every row ranked 1. A plug-in that declares
metrics must say what each task contributes to them: without contributions its board would have
no numbers, no slices, no comparisons and no rank ranges.

What only data can show (that a task filter's field is in the tasks' specs, that a fact badge's
fact is one a step records, that an aggregate override agrees with the contributions) is
checked by the conformance tests over the registry (tests/benchmarks/test_conformance.py,
tests/benchmarks/test_contributions.py), on each plug-in's demo.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections import Counter
from collections.abc import Iterable

from evaluation.benchmarks import base

# Types whose values the board never compares between systems nor ranks by.
REPORTED_ONLY = ("count", "number")


def check_declarations(plugin: base.BenchmarkPlugin) -> list[str]:
    """Every problem of the plug-in's declarations, in words (empty: none)."""
    problems: list[str] = []
    metrics = {metric.key: metric for metric in plugin.metrics}
    judge_kinds = [kind.key for kind in plugin.judge_kinds]
    study_kinds = [kind.key for kind in plugin.study_kinds]
    row_groups = [group.key for group in plugin.row_groups]

    for name, keys in (
        ("metrics", [metric.key for metric in plugin.metrics]),
        ("splits", [split.key for split in plugin.splits]),
        ("row_groups", row_groups),
        ("rank_keys", list(plugin.rank_keys)),
        ("judge_kinds", judge_kinds),
        ("study_kinds", study_kinds),
        ("steps", [step.name for step in plugin.steps]),
        ("task_filters", [item.name for item in plugin.task_filters]),
        ("slices", [item.name for item in plugin.slices]),
        ("task_columns", [column.label for column in plugin.task_columns]),
        ("import_options", [option.name for option in plugin.import_options]),
        ("upload.options", [option.name for option in _upload_options(plugin)]),
        ("facts", [key for key, _ in plugin.facts]),
        (
            "calibrated_metrics",
            [f"{item.metric} by {item.study_kind}" for item in plugin.calibrated_metrics],
        ),
    ):
        for key, count in Counter(keys).items():
            if count > 1:
                problems.append(f"{name}: {key!r} is declared {count} times")

    for key in plugin.rank_keys:
        if key not in metrics:
            problems.append(_unknown("rank_keys", key, "metric", metrics))
        elif metrics[key].type in REPORTED_ONLY:
            problems.append(
                f"rank_keys: {key!r} is a {metrics[key].type}, which is reported, not ranked"
            )
    for chart in plugin.charts:
        where = f"charts ({chart.title!r})"
        for key in chart.metrics:
            if key not in metrics:
                problems.append(_unknown(where, key, "metric", metrics))
        if chart.kind == "scatter" and (not chart.metrics or len(chart.metrics) % 2):
            problems.append(f"{where}: a scatter chart takes pairs of metrics (x, y)")
    for metric in plugin.metrics:
        where = f"metrics ({metric.key!r})"
        if metric.interval == "wilson" and metric.type != "rate":
            problems.append(f"{where}: a Wilson interval needs a rate, not a {metric.type}")
        if metric.interval == "bootstrap" and metric.type != "mean":
            problems.append(f"{where}: a bootstrap interval needs a mean, not a {metric.type}")
        if metric.type == "number" and metric.unit == "%":
            problems.append(
                f"{where}: a number is never a percentage (a rate or a mean is); declare its "
                "unit ('' for none)"
            )
    for kind in plugin.study_kinds:
        if kind.judge_kind not in judge_kinds:
            where = f"study_kinds ({kind.key!r}) judge_kind"
            problems.append(_unknown(where, kind.judge_kind, "judge kind", judge_kinds))
    for item in plugin.calibrated_metrics:
        where = f"calibrated_metrics ({item.metric!r})"
        if item.metric not in metrics:
            problems.append(_unknown(f"{where} metric", item.metric, "metric", metrics))
        if item.study_kind not in study_kinds:
            problems.append(
                _unknown(f"{where} study_kind", item.study_kind, "study kind", study_kinds)
            )
    if plugin.official_judge is not None:
        for kind in plugin.official_judge.models_by_kind:
            if kind not in judge_kinds:
                where = "official_judge.models_by_kind"
                problems.append(_unknown(where, kind, "judge kind", judge_kinds))
    if plugin.default_row_group and plugin.default_row_group not in row_groups:
        problems.append(
            _unknown("default_row_group", plugin.default_row_group, "row group", row_groups)
        )

    if metrics and not (
        plugin.overrides("metric_contributions") or plugin.overrides("task_contributions")
    ):
        # The board's numbers, its slices, comparisons and rank ranges all come from them.
        problems.append(
            "metric_contributions: not implemented; every metric of the board is computed from "
            "what each task contributes to it"
        )

    bound = plugin.max_spans_per_run
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
        # The core refuses every run above it: 0 or a non-number would refuse every upload.
        problems.append(f"max_spans_per_run: {bound!r} is not a positive whole number")

    for name, value in _declarations(plugin):
        problems.extend(_literal_problems(name, value))
    return problems


def _upload_options(plugin) -> tuple:
    upload = getattr(plugin, "upload", None)
    return upload.options if upload is not None else ()


def _unknown(where: str, key: str, what: str, declared: Iterable[str]) -> str:
    text = f"{where}: {key!r} is not a declared {what}"
    closest = difflib.get_close_matches(key, list(declared), n=1)
    return text + (f" (did you mean {closest[0]!r}?)" if closest else "")


def _declarations(plugin) -> Iterable[tuple[str, object]]:
    """(name, declaration) for every declaration object of the plug-in."""
    for name in (
        "import_options",
        "steps",
        "judge_kinds",
        "metrics",
        "splits",
        "row_groups",
        "charts",
        "task_filters",
        "slices",
        "task_columns",
        "study_kinds",
        "calibrated_metrics",
        "fact_badges",
    ):
        for value in getattr(plugin, name):
            yield name, value
    for option in _upload_options(plugin):
        yield "upload.options", option


def _literal_problems(name: str, value: object) -> list[str]:
    """Each field declared as one of fixed values (Literal[...]) that holds another."""
    if not dataclasses.is_dataclass(value):
        return [f"{name}: {value!r} is not a declaration"]
    hints = _hints(type(value))
    problems = []
    for item in dataclasses.fields(value):
        allowed = hints.get(item.name)
        if typing.get_origin(allowed) is not typing.Literal:
            continue
        found = getattr(value, item.name)
        if found not in typing.get_args(allowed):
            key = getattr(value, "key", None) or getattr(value, "name", None) or ""
            where = f"{name} ({key!r})" if key else name
            choices = ", ".join(repr(choice) for choice in typing.get_args(allowed))
            problems.append(f"{where}: {item.name} {found!r} is not one of {choices}")
    return problems


def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls, vars(base))
