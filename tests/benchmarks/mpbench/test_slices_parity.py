"""Slices from stored contributions equal MP-Bench's own aggregation (scoring.aggregate) run on
each subset of its real tasks, with outcomes drawn at random."""

import random

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import JudgedSlot, TaskOutcome
from evaluation.benchmarks.mpbench import scoring
from evaluation.slices import Contributions, contributions_json, slice_results


def _random_outcome(rng: random.Random, task_id: str, spec: dict) -> TaskOutcome:
    spoke = rng.random() < 0.8
    latency = round(rng.uniform(0.1, 4.0), 3) if spoke and rng.random() < 0.9 else None
    kinds = scoring.kinds_for(
        scoring.TaskSpec(
            task_id,
            spec["family"],
            spec["should_speak"],
            "",
            "",
            "",
            spec.get("is_speaker_name", False),
        )
    )
    judged = {}
    for kind in kinds:
        roll = rng.random()
        if roll < 0.1:
            continue  # no verdict
        state = "failed" if roll < 0.15 else "done"
        judged[(kind, "")] = JudgedSlot(state, rng.random() < 0.6 if state == "done" else None, {})
    return TaskOutcome(
        task_id=task_id,
        spec=spec,
        data={},
        detection={"spoke": spoke, "latency": latency},
        judged=judged,
        present=True,
    )


def test_slices_equal_mpbench_aggregation_on_each_subset(mpbench_tasks):
    plugin = get_plugin("mp-bench")
    rng = random.Random(20261201)
    specs = {
        task_id: {k: v for k, v in t.items() if k != "task_dir"}
        for task_id, t in sorted(mpbench_tasks.items())
    }
    outcomes = [_random_outcome(rng, task_id, spec) for task_id, spec in specs.items()]
    contributions = Contributions.from_json(
        contributions_json((o.task_id, plugin.metric_contributions(o, facts={})) for o in outcomes)
    )
    attributes = {o.task_id: plugin.task_attributes(o.task_id, o.spec) for o in outcomes}
    found = slice_results(plugin, contributions, attributes)

    # The whole set, first: contributions summed equal the plug-in's own aggregation.
    def by_hand(subset):
        return scoring.aggregate(
            scoring.TaskOutcome(
                task=scoring.TaskSpec(
                    o.task_id,
                    o.spec["family"],
                    bool(o.spec["should_speak"]),
                    o.spec["metatranscript"],
                    o.spec.get("question_text", ""),
                    o.spec.get("answer_text", ""),
                    bool(o.spec.get("is_speaker_name")),
                ),
                spoke=o.detection["spoke"],
                latency=o.detection["latency"],
                verdicts={
                    kind: (slot.verdict if slot.state == "done" else None)
                    for (kind, _), slot in o.judged.items()
                },
            )
            for o in subset
        )

    def metrics_only(results):
        return {
            family: {k: v for k, v in values.items() if k != "n"}
            for family, values in results.items()
        }

    assert plugin.aggregate(outcomes, facts={}) == by_hand(outcomes)
    checked = 0
    for attribute in plugin.slices:
        values = {str(a[attribute.name]) for a in attributes.values()}
        for value in values:
            subset = [o for o in outcomes if str(attributes[o.task_id][attribute.name]) == value]
            shown = "yes" if value == "True" else "no" if value == "False" else value
            stored_slice = found["values"][f"{attribute.name}={shown}"]
            assert stored_slice["tasks"] == len(subset)
            expected = metrics_only(by_hand(subset))
            got = stored_slice["results"]
            for family, values_ in expected.items():
                for key, value_ in values_.items():
                    assert got[family][key] == value_, (attribute.name, value, family, key)
                    checked += 1
    assert checked > 50
