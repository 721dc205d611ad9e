"""MP-Bench's own rules as the API shows them, on its real tasks (skipped without its data):
its declaration (Table 3's columns, row groups and task filters), its official judge's models,
the task filters of its rules (family, should_speak, spoke, turn-taking) and which missing tasks
its judge is still asked about. The endpoints themselves are tested on the example plug-in
(tests/leaderboard/api/test_endpoints.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from evaluation.models import Judgment
from tests.conftest import copy_examples, zip_tree
from tests.leaderboard.accounts import people
from tests.leaderboard.accounts.people import (  # noqa: F401 (a fixture)
    World,
    _fresh_throttle_counts,
    pipeline_world,
)

world = people.world  # the module's world read afresh for each test

pytestmark = pytest.mark.django_db

EXAMPLE_U = "scenario_argument-diag_1001-tier_1-task_1868"
EXAMPLE_D = "scenario_argument-diag_1001-tier_2-task_0"
EXAMPLE_T = "scenario_turnBasedGame-diag_112-tier_2-task_1"


@pytest.fixture(scope="module")
def shared_world(shared_db, shared_mpbench, mpbench_dir, tmp_path_factory) -> World:
    """Lab A's published and unpublished submission of MP-Bench's three example folders,
    scored by the pipeline (offline judge, every stage run here), made once for the module."""
    folder = tmp_path_factory.mktemp("world")
    bundle = zip_tree(copy_examples(mpbench_dir, folder / "examples"), folder / "bundle.zip")
    return pipeline_world(shared_mpbench, bundle)


def test_benchmark_detail_declares_table_3(world, mpbench_tasks):
    body = world.client("anonymous").get("/api/benchmarks/mp-bench/").json()
    assert body["task_count"] == len(mpbench_tasks) == 927
    declared = body["declaration"]
    # What a client needs to read the results: Table 3's columns, its groups and filters.
    assert [m["key"] for m in declared["metrics"]] == [
        "understanding.overall_acc",
        "understanding.spk_name_acc",
        "understanding.latency_s",
        "discussion.tt_acc",
        "discussion.app_acc",
        "discussion.latency_s",
        "turnbased.tt_acc",
        "turnbased.app_acc",
        "turnbased.latency_s",
    ]
    assert [g["key"] for g in declared["row_groups"]] == ["text-llm", "non-realtime", "realtime"]
    assert {f["name"] for f in declared["task_filters"]} == {
        "family",
        "should_speak",
        "spoke",
        "turn_taking",
    }
    assert declared["upload"]["suffixes"] == [".zip"]
    assert [j["slug"] for j in body["judges"]] == ["official", "offline"]
    assert body["leaderboard_url"].endswith("/api/benchmarks/mp-bench/leaderboard/")
    listing = world.client("anonymous").get("/api/benchmarks/").json()
    assert listing["count"] == 1 and listing["results"][0]["task_count"] == 927


def test_the_official_judge_is_the_papers(world):
    judges = world.client("anonymous").get("/api/benchmarks/mp-bench/judges/").json()["results"]
    official = judges[0]
    assert official["slug"] == "official" and official["official"] is True
    # The benchmark's official models (its README): gpt-5.4, and gpt-5.2 for speaker names.
    assert official["models"] == {
        "understanding": "gpt-5.4",
        "discussion": "gpt-5.4",
        "turnbased": "gpt-5.4",
        "speaker_name": "gpt-5.2",
    }
    assert official["sampling"] == {
        "temperature": 0.0,
        "top_p": 1.0,
        "max_completion_tokens": 4096,
    }
    assert set(official["prompt_versions"]) == {
        "understanding",
        "speaker_name",
        "discussion",
        "turnbased",
    }
    assert all(
        v["version"] == 1 and len(v["sha256"]) == 64 for v in official["prompt_versions"].values()
    )
    assert judges[1]["slug"] == "offline" and judges[1]["offline"] is True


def test_tasks_are_filtered_by_mp_bench_rules(world, mpbench_tasks):
    client = world.client("alice")
    base = f"/api/submissions/{world.published.pk}/tasks/"
    first = client.get(base).json()
    assert first["count"] == 927 and len(first["results"]) == 50  # PAGE_SIZE
    assert first["previous"] is None and first["next"].endswith("?page=2")
    page = client.get(base + "?page_size=7&page=3").json()
    assert len(page["results"]) == 7 and page["previous"] and page["next"]
    everything = client.get(base + "?page_size=5000").json()
    assert len(everything["results"]) == 927  # page_size is capped at 1000 anyway
    rows = {row["task_id"]: row for row in everything["results"]}
    assert set(rows) == set(mpbench_tasks)

    for name in ("discussion", "turnbased", "understanding"):
        expected = Counter(t["family"] for t in mpbench_tasks.values())[name]
        assert client.get(base + f"?family={name}").json()["count"] == expected
    expected = sum(1 for t in mpbench_tasks.values() if t["should_speak"])
    assert client.get(base + "?should_speak=true").json()["count"] == expected
    assert client.get(base + "?should_speak=false").json()["count"] == 927 - expected

    spoke = [t for t, row in rows.items() if row["detection"]["spoke"]]
    assert set(spoke) <= {EXAMPLE_U, EXAMPLE_D, EXAMPLE_T}  # only these have a response at all
    assert client.get(base + "?spoke=1").json()["count"] == len(spoke)
    # Turn-taking correct means spoke == should_speak (the benchmark's rule).
    correct = [
        t
        for t, row in rows.items()
        if row["detection"]["spoke"] == mpbench_tasks[t]["should_speak"]
    ]
    assert client.get(base + "?turn_taking=true&page_size=1000").json()["count"] == len(correct)
    both = client.get(base + "?turn_taking=false&family=discussion&page_size=1000").json()
    assert {r["task_id"] for r in both["results"]} == {
        t
        for t in rows
        if mpbench_tasks[t]["family"] == "discussion"
        and rows[t]["detection"]["spoke"] != mpbench_tasks[t]["should_speak"]
    }


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("spoke=maybe", "spoke"),
        ("turn_taking=2", "turn_taking"),
        ("should_speak=", "should_speak"),
    ],
)
def test_bad_mp_bench_task_filters_are_400(world, query, field):
    response = world.client("alice").get(f"/api/submissions/{world.published.pk}/tasks/?{query}")
    assert response.status_code == 400
    assert field in response.json()


def test_which_missing_tasks_the_judge_is_asked_about(world, mpbench_tasks):
    client = world.client("alice")
    body = client.get(f"/api/submissions/{world.private.pk}/tasks/{EXAMPLE_D}/judgments/").json()
    assert body["task"]["task_id"] == EXAMPLE_D and body["task"]["spec"]["family"] == "discussion"
    [judgment] = body["judgments"]
    assert judgment["judge"] == "offline" and judgment["kind"] == "discussion"
    stored = Judgment.objects.get(
        uses__task_result__submission=world.private, uses__task_result__task__task_id=EXAMPLE_D
    )
    assert judgment["prompt"] == stored.prompt
    assert mpbench_tasks[EXAMPLE_D]["metatranscript"] in judgment["prompt"]
    assert judgment["raw_output"] == stored.raw_output and judgment["verdict"] == stored.verdict
    assert judgment["reasoning"] == stored.reasoning and judgment["skipped"] is False
    for key in ("input_tokens", "output_tokens", "latency_ms", "error", "status", "model"):
        assert key in judgment

    # A missing discussion task has an empty response: false without asking the judge.
    missing_d = next(
        t
        for t, task in sorted(mpbench_tasks.items())
        if task["family"] == "discussion" and t != EXAMPLE_D
    )
    [skipped] = client.get(
        f"/api/submissions/{world.private.pk}/tasks/{missing_d}/judgments/"
    ).json()["judgments"]
    assert skipped["skipped"] is True and skipped["verdict"] is False
    assert skipped["prompt"] is None and skipped["raw_output"] is None
    # ... but a turn-based one is always sent (the benchmark's rule).
    missing_t = next(
        t
        for t, task in sorted(mpbench_tasks.items())
        if task["family"] == "turnbased" and t != EXAMPLE_T
    )
    [sent] = client.get(f"/api/submissions/{world.private.pk}/tasks/{missing_t}/judgments/").json()[
        "judgments"
    ]
    assert sent["skipped"] is False and sent["prompt"]

    assert (
        client.get(f"/api/submissions/{world.private.pk}/tasks/nope/judgments/").status_code == 404
    )
    only = client.get(
        f"/api/submissions/{world.private.pk}/tasks/{EXAMPLE_D}/judgments/?judge=official"
    ).json()
    assert only["judgments"] == []


def test_query_counts_do_not_grow_with_927_rows(world, django_assert_max_num_queries):
    client = world.client("alice")
    # 927 task rows, 16 submissions, 16 systems: a fixed handful of queries each (session, user,
    # visibility, count, page).
    with django_assert_max_num_queries(8):
        body = client.get(f"/api/submissions/{world.private.pk}/tasks/?page_size=1000").json()
    assert len(body["results"]) == 927
    with django_assert_max_num_queries(8):
        assert client.get("/api/submissions/?page_size=100").json()["count"] == 16
    with django_assert_max_num_queries(8):
        assert client.get("/api/systems/?page_size=100").json()["count"] == 16
    with django_assert_max_num_queries(10):
        client.get(f"/api/systems/{world.private.system_id}/")
