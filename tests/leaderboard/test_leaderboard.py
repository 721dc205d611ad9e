"""The first leaderboard: Table 3 layout, ranking, paper rows, offline scores kept apart. MP-Bench
is its plug-in's demo release (18 tasks) with the paper's rows; the uploads the pipeline takes
are the example plug-in's."""

import pytest
from django.contrib.auth.models import User

from evaluation.models import Judgment, Score, Submission
from evaluation.services import submission_create
from tests import factories
from tests.conftest import scoring_here, submit_offline
from tests.leaderboard.test_board_page import mp_results

pytestmark = pytest.mark.django_db

# Three tasks of the demo release's 18 (write_demo_source), the ones a scored row answered.
EXAMPLE_TASKS = [
    "scenario_demo-discussion-1",
    "scenario_demo-discussion-2",
    "scenario_demo-turnbased-1",
]


@pytest.fixture(scope="module", autouse=True)
def _one_import(shared_mpbench_demo):
    """MP-Bench is imported once for the module (tests/conftest.py shared_db)."""


@pytest.fixture
def scored_offline(mpbench_demo):
    """Three tasks of 18 scored under the offline judge and published."""
    return factories.scored_submission(
        mpbench_demo,
        system="Offline Agent",
        results=mp_results(300, 50, 120, 64, 130, 72),
        tasks=EXAMPLE_TASKS,
    )


def test_official_board_shows_paper_rows_ranked(client, mpbench_demo):
    data = client.get("/api/benchmarks/mp-bench/leaderboard/?group=none").json()
    assert data["judge"]["slug"] == "official"
    assert data["chance_pct"] == {"understanding.spk_name_acc": 33.3, "turnbased.tt_acc": 50.0}
    names = [e["system"] for e in data["entries"]]
    # Ranked by overall understanding accuracy (Table 3): 87.48, 73.30, 34.44, 32.60, ...
    assert names[:4] == ["Gemini-3.1-Pro (SpkD-ASR)", "Gemini-3.1-Pro", "Qwen3-Omni", "Covo-Audio"]
    assert names[-1] == "Freeze-Omni"  # 0.18
    assert [e["rank"] for e in data["entries"]] == list(range(1, 15))
    # By default rows are grouped as in Table 3 (text LLMs, non-realtime, realtime), ranked within.
    grouped = client.get("/api/benchmarks/mp-bench/leaderboard/").json()["entries"]
    assert [e["system_type"] for e in grouped] == ["text-llm"] * 2 + ["non-realtime"] * 2 + [
        "realtime"
    ] * 10
    assert [e["system"] for e in grouped[:4]] == [
        "Gemini-3.1-Pro (SpkD-ASR)",
        "Gemini-3.1-Pro (ASR-only)",
        "Gemini-3.1-Pro",
        "Qwen3-Omni",
    ]
    # Grouped, ranks count within each group: text LLMs 87.48 then 4.79; non-realtime 73.30
    # then 34.44.
    assert [e["rank"] for e in grouped[:4]] == [1, 2, 1, 2]
    moshi = next(e for e in data["entries"] if e["system"] == "Moshi")
    assert moshi["flags"]["reported_in_paper"] and not moshi["flags"]["verified"]
    assert moshi["results"]["turnbased"]["app_acc"]["pct"] == 28.12
    assert moshi["results"]["discussion"]["latency_s"] == 0.5

    page = client.get("/benchmarks/mp-bench/").content.decode()
    assert "reported in paper" in page and "chance 33.3%" in page and "chance 50.0%" in page
    assert page.index("Gemini-3.1-Pro (SpkD-ASR)") < page.index("Freeze-Omni")
    for header in (
        "Understanding",
        "Discussion",
        "Turn-based",
        "Spk Name Acc",
        "App Acc",
        "Lat (s)",
    ):
        assert header in page


def test_offline_scores_are_labelled_and_never_mixed(client, scored_offline):
    official = client.get("/api/benchmarks/mp-bench/leaderboard/").json()
    assert "Offline Agent" not in [e["system"] for e in official["entries"]]
    assert official["judges"] == ["official", "offline"]

    offline = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=offline").json()
    assert [e["system"] for e in offline["entries"]] == ["Offline Agent"]
    entry = offline["entries"][0]
    assert entry["flags"] == {
        "verified": True,
        "staff_verified": False,
        "hidden": False,
        "reported_in_paper": False,
        "incomplete": True,
        "offline_judge": True,
        "private": False,
        "flagged": False,
        "rescoring": False,
        "retrying_failed": False,
        "anonymous": False,
    }
    assert entry["submission"] == scored_offline.pk
    page = client.get("/benchmarks/mp-bench/?judge=offline").content.decode()
    assert (
        "offline judge" in page and "incomplete bundle" in page and "reported in paper" not in page
    )
    assert client.get("/benchmarks/mp-bench/?judge=nobody").status_code == 404


def test_newest_submission_per_system(client, mpbench_demo, scored_offline):
    newer = factories.scored_submission(
        mpbench_demo,
        system=scored_offline.system,
        results=mp_results(10, 5, 12, 6, 13, 7),
        tasks=EXAMPLE_TASKS,
    )
    assert newer.created_at > scored_offline.created_at
    entries = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=offline").json()["entries"]
    assert [e["submission"] for e in entries] == [newer.pk]


def test_unfinished_submissions_are_not_ranked(client, toybench, toy_partial):
    queued = submission_create(
        benchmark=toybench,
        bundle_path=toy_partial,
        system_name="Queued",
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
    )
    assert Submission.objects.get(pk=queued.pk).status == "queued"
    # The offline judge has scored nothing yet, so it is not even offered.
    assert client.get("/api/benchmarks/toy-bench/leaderboard/?judge=offline").status_code == 404
    official = client.get("/api/benchmarks/toy-bench/leaderboard/").json()
    assert "Queued" not in [e["system"] for e in official["entries"]]


def test_submission_page_shows_progress_scores_and_audio(client, scored_offline):
    page = client.get(f"/submissions/{scored_offline.pk}/").content.decode()
    assert "Status: <strong>scored</strong>" in page
    assert "Tasks ingested: 3 / 18" in page
    assert "incomplete bundle: 15 tasks missing" in page
    assert "scenario_demo-discussion-2" in page
    assert client.get("/submissions/999999/").status_code == 404


def test_benchmark_list(client, mpbench_demo):
    page = client.get("/").content.decode()
    assert 'href="/benchmarks/mp-bench/"' in page


def test_admin_retry_action(client, toybench, toy_partial, django_capture_on_commit_callbacks):
    # The pipeline scores the upload (three tasks, two grades each): retrying re-runs judging.
    with scoring_here():
        scored_offline = submit_offline(toybench, toy_partial, "Offline Agent")
    assert Submission.objects.get(pk=scored_offline.pk).status == Submission.Status.SCORED
    admin = User.objects.create_superuser("staff", "staff@example.org", "pw")
    client.force_login(admin)
    # Two judgments failed (an outage, say): the action puts exactly those back and re-judges.
    used = Judgment.objects.filter(uses__task_result__submission=scored_offline).distinct()
    failed = list(used.order_by("pk")[:2])
    Judgment.objects.filter(pk__in=[j.pk for j in failed]).update(status="failed", verdict=None)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/evaluation/submission/",
            {"action": "retry_failed", "_selected_action": [scored_offline.pk]},
            follow=True,
        )
    assert "2 failed judgment(s) queued again" in response.content.decode()
    # The offline judge answers at once: re-judged, nothing failed is left.
    assert not used.filter(status="failed").exists()
    assert Score.objects.get(submission=scored_offline).judgments_failed == 0
