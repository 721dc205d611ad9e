"""One source for each number, over the registry and the example plug-in: each plug-in's first
demo run is scored by the offline judge, and the core recomputes the board from the run's per-task
contributions (slices.board_results: every metric the sum of its numerators over the sum of its
denominators, rounded by the plug-in's metric_value).

A plug-in without an aggregate of its own stores exactly those results. A plug-in that keeps one
(for what its rules cannot say per task) must report every metric it contributes to as the
contributions give it — a rate's count, total and percentage, a mean's value and its interval
where the plug-in fixes the procedure, a duration's, count's or number's value — on the whole run
and on every slice of it (the slice results stored with the score, against the override run on
that slice's tasks). No tolerance: the override and the sums round the same ratio the same way,
or the board and its slices would disagree."""

from __future__ import annotations

import sys
import types

import pytest

from evaluation.benchmarks import PluginRefused, registry
from evaluation.benchmarks.base import BenchmarkPlugin
from evaluation.models import Score
from evaluation.services.pipeline import hook_facts, task_outcomes
from evaluation.slices import all_columns, board_results, slice_value
from tests.conftest import demo_runs_scored, every_plugin_board
from tests.toyplugin.toy import ToyBench

SLUGS = [*sorted(registry()), "toy-bench"]


def _node(results, key: str):
    value = results
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _shown(metric, node, *, interval: bool):
    """What the board shows of a metric's node: a rate's count, total and percentage; a
    mean's value (and interval, when asked); otherwise the number itself. None: no value."""
    if metric.type == "rate":
        if not isinstance(node, dict) or node.get("pct") is None:
            return None
        return (node.get("count"), node.get("total"), node.get("pct"))
    if metric.type == "mean":
        if not isinstance(node, dict):
            return None
        value = node.get("pct" if metric.unit == "%" else "value")
        if value is None:
            return None
        return (value, node.get("ci")) if interval else value
    return node


def _agree(plugin, override: dict, derived: dict, keys, where: str) -> int:
    """Every contributed column of the override's results equals the derived one; the number of
    columns compared."""
    checked = 0
    for column in all_columns(plugin):
        if column.key not in keys:
            continue
        if column.split and column.split not in override:
            continue  # these tasks predict nothing in the split: the override has no table
        metric = column.metric
        sums_node = _node(derived, column.key)
        # A mean's interval must agree where the plug-in fixes its own procedure (a slice of
        # fewer than MIN_TASKS tasks shows none).
        interval = (
            metric.interval == "bootstrap"
            and plugin.overrides("mean_interval")
            and isinstance(sums_node, dict)
            and "ci" in sums_node
        )
        ours = _shown(metric, _node(override, column.key), interval=interval)
        sums = _shown(metric, sums_node, interval=interval)
        assert ours == sums, (where, column.key, ours, sums)
        checked += 1
    return checked


@pytest.mark.django_db
@pytest.mark.parametrize("slug", SLUGS)
def test_every_number_of_the_board_is_the_one_its_contributions_give(slug, settings, demo_files):
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="sums")
    (submission,) = demo_runs_scored(benchmark, plugin, demo_files(slug), count=1)
    offline = benchmark.judges.get(slug="offline")
    score = Score.objects.get(submission=submission, judge=offline)
    outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
    facts = hook_facts(submission)
    derived = board_results(plugin, outcomes, facts=facts)
    assert derived, "the contributions give the board no number"

    if not plugin.overrides("aggregate"):
        assert score.results == derived
        return

    keys = set(score.contributions["metrics"])
    checked = _agree(plugin, score.results, derived, keys, "the whole run")
    attributes = {o.task_id: plugin.task_attributes(o.task_id, o.spec) for o in outcomes}
    assert score.slices and score.slices["values"]
    for name, stored in score.slices["values"].items():
        attribute, _, value = name.partition("=")
        subset = [
            o
            for o in outcomes
            if attributes[o.task_id].get(attribute) is not None
            and slice_value(attributes[o.task_id][attribute]) == value
        ]
        assert stored["tasks"] == len(subset), name
        override = plugin.aggregate(subset, facts=facts)
        checked += _agree(plugin, override, stored["results"], keys, name)
    assert checked > 20


def test_a_plugin_without_contributions_is_refused(settings, monkeypatch):
    """The registry refuses a plug-in that declares metrics but not what each task adds to them:
    its board would otherwise have no numbers, slices, comparisons or rank ranges."""
    module = types.ModuleType("tests.uncontributing")
    module.plugin = type(
        "Uncontributing",
        (ToyBench,),
        {"metric_contributions": BenchmarkPlugin.metric_contributions},
    )()
    monkeypatch.setitem(sys.modules, "tests.uncontributing", module)
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.uncontributing"]
    with pytest.raises(PluginRefused) as refused:
        registry()
    assert "metric_contributions: not implemented" in str(refused.value)
