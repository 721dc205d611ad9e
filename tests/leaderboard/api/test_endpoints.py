"""What the endpoints say, checked against the benchmark's own tasks (the example plug-in's
release, tests/toyplugin/toy.py) and the stored rows. MP-Bench's own declaration, filters and
judge rules are checked on its data in tests/benchmarks/mpbench/test_api_endpoints.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evaluation.models import Judgment, Score, Submission
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db

TASKS = {task["id"]: task for task in toy.TASKS}  # q1 to q6
ANSWERED = "q1"  # answered right by toy_upload: "It is 2"
MISSING = "q4"  # left out of toy_upload


@pytest.fixture(scope="module")
def shared_world(scored_world):
    """These tests read what the pipeline derived from the upload (each task's measurement,
    the judge's prompts, the outcome of a missing task), so the world here is scored by it."""
    return scored_world


def test_benchmark_detail_counts_tasks_and_declares_the_plugin(world):
    body = world.client("anonymous").get("/api/benchmarks/toy-bench/").json()
    assert body["task_count"] == len(TASKS) == 6
    declared = body["declaration"]
    # What a client needs to read the results: the toy's columns, splits, groups and filters.
    assert [m["key"] for m in declared["metrics"]] == ["quality", "answered"]
    assert [(m["type"], m["interval"]) for m in declared["metrics"]] == [
        ("mean", "bootstrap"),
        ("rate", "wilson"),
    ]
    assert [s["key"] for s in declared["splits"]] == ["en", "de"]
    assert [g["key"] for g in declared["row_groups"]] == ["small", "large"]
    assert {f["name"] for f in declared["task_filters"]} == {"topic"}
    assert declared["upload"]["suffixes"] == [".zip", ".jsonl"]
    assert [j["slug"] for j in body["judges"]] == ["official", "offline"]
    assert body["leaderboard_url"].endswith("/api/benchmarks/toy-bench/leaderboard/")
    listing = world.client("anonymous").get("/api/benchmarks/").json()
    assert listing["count"] == 1 and listing["results"][0]["task_count"] == 6


def test_judges_show_their_identity(world):
    judges = world.client("anonymous").get("/api/benchmarks/toy-bench/judges/").json()["results"]
    official = judges[0]
    assert official["slug"] == "official" and official["official"] is True
    # The toy's official judge (ToyBench.official_judge): toy-1 grades.
    assert official["models"] == {"grade": "toy-1"}
    assert official["sampling"] == {
        "temperature": 0.0,
        "top_p": 1.0,
        "max_completion_tokens": 4096,
    }
    assert set(official["prompt_versions"]) == {"grade"}
    assert all(
        v["version"] == 1 and len(v["sha256"]) == 64 for v in official["prompt_versions"].values()
    )
    assert judges[1]["slug"] == "offline" and judges[1]["offline"] is True


def test_submission_detail_has_status_progress_and_scores(world):
    body = world.client("bob").get(f"/api/submissions/{world.private.pk}/").json()
    assert body["status"] == "scored"
    assert body["is_published"] is False and body["team"] == "Lab A"
    assert body["progress"]["tasks_total"] == 6
    assert body["progress"]["tasks_ingested"] == 3  # toy_upload answers q1 to q3
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
    assert (
        score.scorer["judge"]["slug"] == "offline" and score.scorer["rules"] == "1"
    )  # the toy's rules_version
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


def test_tasks_are_paginated_and_filtered(world):
    client = world.client("alice")
    base = f"/api/submissions/{world.published.pk}/tasks/"
    first = client.get(base).json()
    assert first["count"] == 6 and len(first["results"]) == 6  # under PAGE_SIZE (50)
    assert first["previous"] is None and first["next"] is None
    page = client.get(base + "?page_size=2&page=2").json()
    assert [r["task_id"] for r in page["results"]] == ["q3", "q4"]
    assert page["previous"] and page["next"].endswith("?page=3&page_size=2")
    last = client.get(base + "?page_size=2&page=3").json()
    assert [r["task_id"] for r in last["results"]] == ["q5", "q6"] and last["next"] is None
    everything = client.get(base + "?page_size=5000").json()
    rows = {row["task_id"]: row for row in everything["results"]}
    assert set(rows) == set(TASKS)

    # The toy's one filter, topic: odd tasks are math (q1, q3, q5), even ones facts.
    for topic, expected in (("math", {"q1", "q3", "q5"}), ("fact", {"q2", "q4", "q6"})):
        found = client.get(base + f"?topic={topic}").json()
        assert {r["task_id"] for r in found["results"]} == expected, topic
    # The measure step's answer lengths: "It is 2", "It is 4" (7 characters each), q3 wrong
    # ("Maybe " and two digits, 8) and nothing for the missing tasks.
    assert {t: rows[t]["detection"]["length"] for t in sorted(rows)} == {
        "q1": 7,
        "q2": 7,
        "q3": 8,
        "q4": 0,
        "q5": 0,
        "q6": 0,
    }
    assert {t: rows[t]["data"] for t in ("q1", "q4")} == {"q1": {"answer": "It is 2"}, "q4": {}}


@pytest.mark.parametrize(
    ("query", "field"),
    [("verdict=perhaps", "verdict")],  # MP-Bench's own filters: tests/benchmarks/mpbench
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


def test_judgments_of_a_task(world):
    client = world.client("alice")
    path = f"/api/submissions/{world.private.pk}/tasks/{ANSWERED}/judgments/"
    body = client.get(path).json()
    assert body["task"]["task_id"] == ANSWERED and body["task"]["spec"]["topic"] == "math"
    # Each answer is graded twice: accuracy, then style.
    assert [(j["kind"], j["slot"]) for j in body["judgments"]] == [
        ("grade", "accuracy"),
        ("grade", "style"),
    ]
    stored = {
        found.prompt: found
        for found in Judgment.objects.filter(
            uses__task_result__submission=world.private,
            uses__task_result__task__task_id=ANSWERED,
        )
    }
    for judgment in body["judgments"]:
        assert judgment["judge"] == "offline"
        # The toy's template filled with the task's question and the upload's answer.
        assert judgment["prompt"] == (
            f"Grade the {judgment['slot']} of this answer.\n"
            "Question: What is 1 plus 1?\nAnswer: It is 2\n"
        )
        row = stored[judgment["prompt"]]
        assert judgment["raw_output"] == row.raw_output and judgment["verdict"] is True
        assert judgment["verdict"] == row.verdict and judgment["reasoning"] == row.reasoning
        assert judgment["skipped"] is False
        for key in ("input_tokens", "output_tokens", "latency_ms", "error", "status", "model"):
            assert key in judgment

    # A missing task has no answer: both grades are 0, decided without asking the judge.
    missing = client.get(f"/api/submissions/{world.private.pk}/tasks/{MISSING}/judgments/").json()[
        "judgments"
    ]
    assert [(j["slot"], j["skipped"], j["verdict"]) for j in missing] == [
        ("accuracy", True, False),
        ("style", True, False),
    ]
    assert all(j["prompt"] is None and j["raw_output"] is None for j in missing)
    assert all(j["fixed"] == {"verdict": False, "score": 0.0} for j in missing)

    assert (
        client.get(f"/api/submissions/{world.private.pk}/tasks/nope/judgments/").status_code == 404
    )
    only = client.get(path + "?judge=official").json()
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
    # 6 task rows, 3 submissions (2 of Lab A and the toy paper's row), 3 systems: a fixed
    # handful of queries each (session, user, visibility, count, page), as for MP-Bench's 927
    # rows (tests/benchmarks/mpbench/test_api_endpoints.py).
    with django_assert_max_num_queries(8):
        body = client.get(f"/api/submissions/{world.private.pk}/tasks/?page_size=1000").json()
    assert len(body["results"]) == 6
    with django_assert_max_num_queries(8):
        assert client.get("/api/submissions/?page_size=100").json()["count"] == 3
    with django_assert_max_num_queries(8):
        assert client.get("/api/systems/?page_size=100").json()["count"] == 3
    with django_assert_max_num_queries(10):
        client.get(f"/api/systems/{world.private.system_id}/")
