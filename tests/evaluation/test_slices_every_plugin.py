"""For every installed plug-in that declares slices: its demo release and its first demo system go
through the pipeline (offline judge), and every stored slice's numbers equal the plug-in's own
aggregation run on that subset of the tasks. (Every demo system is scored by each plug-in's demo
test; one is enough here, where every score would be checked the same way.)"""

from __future__ import annotations

import pytest

from evaluation.benchmarks import registry
from evaluation.models import Score, Submission
from evaluation.services import benchmark_import
from evaluation.services.pipeline import hook_facts, task_outcomes
from evaluation.slices import all_columns, slice_value
from tests.conftest import demo_runs_scored

pytestmark = pytest.mark.django_db(transaction=True)

SLICED = sorted(slug for slug, plugin in registry().items() if plugin.slices)


def _node(results, key: str):
    value = results
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _comparable(metric, node):
    """What must match: a rate's counts and percentage, a mean's value, a number."""
    if metric.type == "rate":
        if not isinstance(node, dict):
            return node
        return (node.get("count"), node.get("total"), node.get("pct"))
    if metric.type == "mean":
        if not isinstance(node, dict):
            return node
        return node.get("pct" if metric.unit == "%" else "value")
    return node


@pytest.mark.parametrize("slug", SLICED)
def test_every_slice_equals_the_plugins_aggregation_on_its_tasks(slug, tmp_path):
    plugin = registry()[slug]
    plugin.write_demo_source(tmp_path / "source")
    benchmark = benchmark_import(
        slug=f"{slug}-slices", directory=tmp_path / "source", plugin=slug, is_demo=True
    ).benchmark
    offline = benchmark.judges.get(slug="offline")
    demo_runs_scored(benchmark, plugin, tmp_path, count=1)
    submissions = list(Submission.objects.filter(benchmark=benchmark, is_reported=False))
    assert submissions and all(s.status == Submission.Status.SCORED for s in submissions)
    checked = 0
    for submission in submissions:
        score = Score.objects.get(submission=submission, judge=offline)
        assert score.slices and score.slices["values"], submission.system.name
        outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
        facts = hook_facts(submission)
        attributes = {o.task_id: plugin.task_attributes(o.task_id, o.spec) for o in outcomes}
        for name, stored in score.slices["values"].items():
            attribute, _, value = name.partition("=")
            subset = [
                o
                for o in outcomes
                if attributes[o.task_id].get(attribute) is not None
                and slice_value(attributes[o.task_id][attribute]) == value
            ]
            assert stored["tasks"] == len(subset), name
            expected = plugin.aggregate(subset, facts=facts)
            for column in all_columns(plugin):
                if column.key not in score.contributions["metrics"]:
                    continue
                if column.split and column.split not in expected:
                    continue  # the subset predicts nothing in this split
                want = _comparable(column.metric, _node(expected, column.key))
                got = _comparable(column.metric, _node(stored["results"], column.key))
                assert got == want, (submission.system.name, name, column.key)
                checked += 1
    assert checked > 20
