"""Comparing two systems through the real pipeline (offline judge) on MP-Bench's three example
folders, by MP-Bench's rules (skipped without its data): A as recorded, B silent on every task.
B fails every pass/fail unit, so McNemar's b is the number of units A passed (read from A's
stored detections and verdicts by MP-Bench's rules), c is 0; B, never speaking, has no latency;
a family slice counts only its family's units. The comparison's pages, permissions and cache
are tested on the example plug-in (tests/leaderboard/test_compare.py)."""

import json

import pytest
from django.core.cache import cache
from django.urls import reverse

from evaluation.models import Submission, TaskJudgment
from tests.conftest import copy_examples, fresh_all, scoring_here
from tests.leaderboard.cast import lab_and_rivals, lab_run
from tests.leaderboard.test_compare import counted_by_hand

pytestmark = pytest.mark.django_db

SILENT = {"text": "", "chunks": []}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def make_runs(benchmark, mpbench_dir, folders, people) -> dict[str, Submission]:
    """Through the real pipeline (offline judge): Talker as recorded, Mute silent on every
    task (both published), and an unpublished Secret, all of team Lab."""

    def submit(name: str, folder: str, *, publish: bool, silent: bool = False) -> Submission:
        tree = copy_examples(mpbench_dir, folders / folder)
        if silent:
            for response in tree.glob("*/response.json"):
                response.write_text(json.dumps(SILENT))
        return lab_run(benchmark, tree, name=name, people=people, publish=publish)

    return {
        "a": submit("Talker", "a", publish=True),
        "b": submit("Mute", "b", publish=True, silent=True),
        "secret": submit("Secret", "c", publish=False),
    }


@pytest.fixture(scope="module")
def shared_runs(shared_mpbench, mpbench_dir, tmp_path_factory):
    with scoring_here():
        return make_runs(
            shared_mpbench, mpbench_dir, tmp_path_factory.mktemp("runs"), lab_and_rivals()
        )


@pytest.fixture
def runs(db, shared_runs):
    return fresh_all(shared_runs)


def passed_units(submission: Submission, mpbench_tasks) -> dict[str, dict[str, bool]]:
    """Each submitted task's pass/fail units, by MP-Bench's rules written out here: turn-taking is
    spoke == should_speak; appropriateness is the judge's verdict (for turn-based games with
    no verdict: silent where silence was right)."""
    units = {}
    for row in submission.task_results.select_related("task"):
        if not row.files:
            continue  # left out of the bundle: not compared
        spec = mpbench_tasks[row.task.task_id]
        verdicts = {
            link.kind: (link.judgment.verdict if link.judgment else link.fixed.get("verdict"))
            for link in TaskJudgment.objects.filter(task_result=row).select_related("judgment")
        }
        spoke = bool(row.detection.get("spoke"))
        family = spec["family"]
        found = {}
        if family == "understanding":
            found["understanding.overall_acc"] = verdicts.get("understanding") is True
            if spec["is_speaker_name"]:
                found["understanding.spk_name_acc"] = verdicts.get("speaker_name") is True
        else:
            found[f"{family}.tt_acc"] = spoke == spec["should_speak"]
            verdict = verdicts.get(family)
            if verdict is None and family == "turnbased":
                found[f"{family}.app_acc"] = not spoke and not spec["should_speak"]
            else:
                found[f"{family}.app_acc"] = verdict is True
        units[row.task.task_id] = found
    return units


def compare_url(a, b, **extra):
    query = "&".join(f"{k}={v}" for k, v in {"a": a.pk, "b": b.pk, **extra}.items())
    return f"{reverse('api-benchmark-compare', args=['mp-bench'])}?{query}"


def test_comparison_counts_and_tests_by_hand(client, runs, mpbench_tasks):
    a, b = runs["a"], runs["b"]
    expected_a = passed_units(a, mpbench_tasks)
    expected_b = passed_units(b, mpbench_tasks)
    response = client.get(compare_url(a, b))
    assert response.status_code == 200, response.content
    body = response.json()
    metrics = counted_by_hand(body, expected_a, expected_b)
    # Latency: B never spoke, so it has no latency and no difference.
    assert metrics["discussion.latency_s"]["b"] is None
    assert metrics["discussion.latency_s"]["difference"] is None
    assert {s["slice"] for s in body["by_slice"]} >= {
        "family=understanding",
        "family=discussion",
        "family=turnbased",
    }


def test_slice_limits_the_tasks_and_unknown_slices_are_named(client, runs):
    a, b = runs["a"], runs["b"]
    body = client.get(compare_url(a, b, slice="family=turnbased")).json()
    assert body["overall"]["slice"] == "family=turnbased"
    assert body["overall"]["tasks"] == 1
    assert body["by_slice"] == []
    counted = {m["key"] for m in body["overall"]["metrics"] if m["units_a"]}
    assert {"turnbased.tt_acc", "turnbased.app_acc"} <= counted
    assert counted <= {"turnbased.tt_acc", "turnbased.app_acc", "turnbased.latency_s"}
    response = client.get(compare_url(a, b, slice="family=karaoke"))
    assert response.status_code == 400
    assert "family has no value 'karaoke'" in response.json()["detail"]
    response = client.get(compare_url(a, b, slice="colour=red"))
    assert "no attribute 'colour'" in response.json()["detail"]
