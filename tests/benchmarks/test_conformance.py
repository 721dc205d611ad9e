"""Every registered plug-in (and the example one) holds together: its declarations pass the
registry's checks, and its first demo run, scored by the offline judge, gives every declaration a
value to read — every metric's path resolves in the results, every stored contribution is a
declared column (its sums are the board's values: test_contributions.py), every slice attribute has slices, the run
compares with itself on every compared metric, every task filter's and task column's field is in
the tasks, every fact badge's fact is among the submission's facts, every row group used is
declared. Then: a plug-in whose declarations name something it does not declare is refused by
the registry, with a message naming the plug-in, the declaration, the unknown name and the
closest declared one."""

from __future__ import annotations

import sys
import types
from itertools import count

import pytest

from evaluation.benchmarks import PluginRefused, registry
from evaluation.benchmarks.base import (
    BenchmarkPlugin,
    CalibratedMetric,
    Chart,
    Metric,
    StudyKind,
)
from evaluation.benchmarks.checks import check_declarations
from evaluation.models import Score, Submission
from evaluation.services.pipeline import task_outcomes
from evaluation.slices import (
    Contributions,
    all_columns,
    common_tasks,
    compare,
    compared,
)
from tests.conftest import demo_runs_scored, every_plugin_board
from tests.toyplugin.toy import ToyBench

SLUGS = [*sorted(registry()), "toy-bench"]


def _resolves(results, path) -> bool:
    """Every part of the path is a key of the mapping it reaches (the value may be null: a
    rate with no units)."""
    node = results
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _declares_contributions(plugin) -> bool:
    cls = type(plugin)
    return (
        cls.metric_contributions is not BenchmarkPlugin.metric_contributions
        or cls.task_contributions is not BenchmarkPlugin.task_contributions
    )


@pytest.mark.django_db
@pytest.mark.parametrize("slug", SLUGS)
def test_every_declaration_resolves_on_the_plugins_first_demo_run(slug, settings, demo_files):
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="conform")
    assert check_declarations(plugin) == []
    (submission,) = demo_runs_scored(benchmark, plugin, demo_files(slug), count=1)
    assert submission.status == Submission.Status.SCORED
    offline = benchmark.judges.get(slug="offline")
    score = Score.objects.get(submission=submission, judge=offline)
    results = score.results

    # Every metric of every table the run is in (a split it predicts nothing of has none).
    splits = [split.key for split in plugin.splits]
    tables = [split for split in splits if split in results] if splits else [""]
    assert tables, f"the first demo run is in none of the splits {splits}"
    for table in tables:
        part = results[table] if table else results
        for metric in plugin.metrics:
            assert _resolves(part, metric.path), (table, metric.key, metric.path)
        for key in plugin.rank_keys:
            assert plugin.metric(key).value(part) is not None, (table, key)

    # Contributions: declared columns only (that the board's numbers are theirs is
    # tests/benchmarks/test_contributions.py).
    columns = {column.key: column for column in all_columns(plugin)}
    stored = score.contributions
    assert bool(stored) == _declares_contributions(plugin)
    if stored:
        found = Contributions.from_json(stored)
        for key in stored["metrics"]:
            assert key in columns, f"contribution to {key!r}, which is no declared column"

        # Slices: every declared attribute has some, and every slice is of a declared one.
        sliced = {name.partition("=")[0] for name in score.slices["values"]}
        assert sliced == {attribute.name for attribute in plugin.slices}

        # The run against itself: every compared column it contributes to, no difference.
        tasks = common_tasks(found, found)
        comparison = compare(plugin, list(columns.values()), found, found, tasks, draws=0)
        wanted = {key for key in stored["metrics"] if compared(columns[key].metric)}
        assert {m.key for m in comparison.metrics} == wanted
        assert all(m.difference in (None, 0) for m in comparison.metrics)

    # Task filters and columns read fields the tasks have.
    outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
    for item in (*plugin.task_filters, *plugin.task_columns):
        assert any(item.field in getattr(o, item.source) for o in outcomes), (
            f"no task has {item.source}[{item.field!r}] ({item.label})"
        )

    # Facts a badge reads are recorded; row groups used are declared.
    known = {**(submission.options or {}), **(submission.facts or {})}
    for badge in plugin.fact_badges:
        assert badge.fact in known, f"fact_badges: no submission fact {badge.fact!r}"
    groups = {group.key for group in plugin.row_groups}
    assert submission.row_group in groups
    assert {row.row_group for row in plugin.reported_rows()} <= groups


# --- Refused plug-ins ------------------------------------------------------------------------

_names = count()


def _register(settings, monkeypatch, **declarations) -> None:
    """A toy plug-in with these declarations, registered under a module of its own."""
    name = f"tests.misdeclared_{next(_names)}"
    module = types.ModuleType(name)
    module.plugin = type("Misdeclared", (ToyBench,), declarations)()
    monkeypatch.setitem(sys.modules, name, module)
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, name]


@pytest.mark.parametrize(
    "declarations, message",
    [
        (
            {"rank_keys": ("qualty",)},
            "rank_keys: 'qualty' is not a declared metric (did you mean 'quality'?)",
        ),
        (
            {"charts": (Chart(kind="bars", title="Answers", metrics=("quality", "answerd")),)},
            "charts ('Answers'): 'answerd' is not a declared metric (did you mean 'answered'?)",
        ),
        (
            {
                "study_kinds": (
                    StudyKind(key="grade", label="Grades", judge_kind="grades", labels=("y", "n")),
                )
            },
            "study_kinds ('grade') judge_kind: 'grades' is not a declared judge kind (did you "
            "mean 'grade'?)",
        ),
        (
            {"calibrated_metrics": (CalibratedMetric(metric="qualiti", study_kind="grade"),)},
            "calibrated_metrics ('qualiti') metric: 'qualiti' is not a declared metric (did you "
            "mean 'quality'?)",
        ),
        (
            {"calibrated_metrics": (CalibratedMetric(metric="quality", study_kind="grading"),)},
            "calibrated_metrics ('quality') study_kind: 'grading' is not a declared study kind "
            "(did you mean 'grade'?)",
        ),
        # Nothing close: no guess.
        ({"rank_keys": ("overall",)}, "rank_keys: 'overall' is not a declared metric;"),
        (
            {"rank_keys": ("quality", "quality")},
            "rank_keys: 'quality' is declared 2 times",
        ),
        (
            {"metrics": (*ToyBench.metrics, Metric(key="quality", label="Again", type="mean"))},
            "metrics: 'quality' is declared 2 times",
        ),
        (
            {"metrics": (*ToyBench.metrics, Metric(key="p", label="p", type="numbr"))},
            "metrics ('p'): type 'numbr' is not one of 'rate', 'mean', 'duration', 'count', "
            "'number'",
        ),
        (
            {"metrics": (*ToyBench.metrics, Metric(key="p", label="p", type="number"))},
            "metrics ('p'): a number is never a percentage",
        ),
        (
            {
                "metrics": (*ToyBench.metrics, Metric(key="n", label="n", type="count", unit="")),
                "rank_keys": ("n",),
            },
            "rank_keys: 'n' is a count, which is reported, not ranked",
        ),
        (
            {"default_row_group": "smal"},
            "default_row_group: 'smal' is not a declared row group (did you mean 'small'?)",
        ),
        ({"max_spans_per_run": 0}, "max_spans_per_run: 0 is not a positive whole number"),
        ({"max_spans_per_run": "5000"}, "max_spans_per_run: '5000' is not a positive whole number"),
        ({"max_spans_per_run": True}, "max_spans_per_run: True is not a positive whole number"),
    ],
)
def test_a_plugin_naming_what_it_does_not_declare_is_refused(
    declarations, message, settings, monkeypatch
):
    _register(settings, monkeypatch, **declarations)
    with pytest.raises(PluginRefused) as refused:
        registry()
    text = str(refused.value)
    assert text.startswith("the 'toy-bench' plug-in (tests.misdeclared_")
    assert message in text + ";"


def test_a_refusal_lists_every_problem(settings, monkeypatch):
    _register(
        settings,
        monkeypatch,
        rank_keys=("qualty",),
        charts=(Chart(kind="scatter", title="Odd", metrics=("quality",)),),
    )
    with pytest.raises(PluginRefused) as refused:
        registry()
    text = str(refused.value)
    assert "rank_keys: 'qualty'" in text
    assert "charts ('Odd'): a scatter chart takes pairs of metrics (x, y)" in text


def test_the_example_plugin_as_declared_is_accepted(settings):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    assert type(registry()["toy-bench"]) is ToyBench
