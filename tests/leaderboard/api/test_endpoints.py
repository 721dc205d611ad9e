"""What the endpoints say, checked against the benchmark's own tasks.jsonl and the stored rows."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from evaluation.models import Judgment, Score, Submission

pytestmark = pytest.mark.django_db

EXAMPLE_U = "scenario_argument-diag_1001-tier_1-task_1868"
EXAMPLE_D = "scenario_argument-diag_1001-tier_2-task_0"
EXAMPLE_T = "scenario_turnBasedGame-diag_112-tier_2-task_1"


@pytest.fixture(scope="module")
def shared_world(scored_world):
    """These tests read what the pipeline derived from the upload (each task's detection, the
    judge's prompts, the outcome of a missing task), so the world here is scored by it."""
    return scored_world


def test_benchmark_detail_counts_tasks_per_family(world, mpbench_tasks):
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


def test_judges_show_their_identity(world):
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


def test_submission_detail_has_status_progress_and_scores(world):
    body = world.client("bob").get(f"/api/submissions/{world.private.pk}/").json()
    assert body["status"] == "scored"
    assert body["is_published"] is False and body["team"] == "Lab A"
    assert body["progress"]["tasks_total"] == 927
    assert body["progress"]["tasks_ingested"] == 3  # the three example folders
    assert body["progress"]["judgments_failed"] == 0
    score = Score.objects.get(submission=world.private)
    assert body["scores"] == [
        {
            "judge": "offline",
            "official": False,
            "offline": True,
            "results": score.results,
            "held_out_results": None,
            "scorer": score.scorer,
            "older": [],
            "judgments_total": score.judgments_total,
            "judgments_failed": 0,
            "tokens": {"input": 0, "output": 0},
            "cost_usd": None,
            "computed_at": body["scores"][0]["computed_at"],
            "calibrated": {},  # no calibration study has labelled it
        }
    ]
    assert score.scorer["judge"]["slug"] == "offline" and score.scorer["rules"] == "harness-1"
    assert body["tasks_url"].endswith(f"/api/submissions/{world.private.pk}/tasks/")


@pytest.mark.parametrize(
    ("viewer", "which"),
    [("alice", "private"), ("bob", "private"), ("staff", "private"), ("anonymous", "published")],
)
def test_submission_detail_says_whether_it_waits_on_storage(world, viewer, which):
    """The state the submission page shows: waiting while a stage could not reach the store,
    not once the submission is scored (or failed), whatever mark was left."""
    submission = world.submission(which)
    url = f"/api/submissions/{submission.pk}/"
    body = world.client(viewer).get(url).json()
    assert (body["waiting_on_storage"], body["waiting_on_storage_since"]) == (False, None)
    since = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    rows = Submission.objects.filter(pk=submission.pk)
    rows.update(status=Submission.Status.JUDGING, storage_waiting_since=since)
    body = world.client(viewer).get(url).json()
    assert body["waiting_on_storage"] is True
    assert datetime.fromisoformat(body["waiting_on_storage_since"]) == since
    page = world.client(viewer).get(f"/submissions/{submission.pk}/progress/")
    assert b"the file store has not answered since 2026-03-01 12:30 UTC" in page.content
    rows.update(status=Submission.Status.SCORED)
    body = world.client(viewer).get(url).json()
    assert (body["waiting_on_storage"], body["waiting_on_storage_since"]) == (False, None)
    page = world.client(viewer).get(f"/submissions/{submission.pk}/progress/")
    assert page.status_code == 200 and b"Waiting on storage" not in page.content


def test_tasks_are_paginated_and_filtered(world, mpbench_tasks):
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
        ("verdict=perhaps", "verdict"),
    ],
)
def test_bad_task_filters_are_400(world, query, field):
    response = world.client("alice").get(f"/api/submissions/{world.published.pk}/tasks/?{query}")
    assert response.status_code == 400
    assert field in response.json()


def test_submission_filters(world):
    client = world.client("alice")
    scored = client.get("/api/submissions/?status=scored&page_size=100").json()
    assert {world.published.pk, world.private.pk} <= {r["id"] for r in scored["results"]}
    by_system = client.get(f"/api/submissions/?system={world.private.system_id}").json()
    assert [r["id"] for r in by_system["results"]] == [world.private.pk]
    assert client.get("/api/submissions/?benchmark=other").json()["count"] == 0
    assert client.get("/api/submissions/?status=queued").json()["count"] == 0
    bad = client.get("/api/submissions/?status=lost")
    assert bad.status_code == 400 and "status" in bad.json()
    assert client.get("/api/submissions/?system=abc").status_code == 400


def test_judgments_of_a_task(world, mpbench_tasks):
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


def test_publishing_twice_keeps_the_first_date(world):
    client = world.client("alice")
    first = client.post(f"/api/submissions/{world.private.pk}/publish/").json()
    second = world.client("staff").post(f"/api/submissions/{world.private.pk}/publish/").json()
    assert first["is_published"] is True
    assert first["published_at"] == second["published_at"] is not None


def test_api_root_links_everything(world):
    body = world.client("anonymous").get("/api/").json()
    assert set(body) == {"benchmarks", "systems", "submissions", "schema", "docs"}
    for url in body.values():
        assert world.client("anonymous").get(url).status_code == 200, url


def test_query_counts_do_not_grow_with_rows(world, django_assert_max_num_queries):
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
