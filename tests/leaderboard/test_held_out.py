"""Held-out tasks on MP-Bench: staff hold out a seeded random 10% (plus one example task that
has audio); then every page, API endpoint, export and audio URL that could show a held-out
task's ground truth, prompts or per-task results is tried by the owner, a teammate, an
outsider, an anonymous visitor and staff. Only staff see them. Scores keep the held-out tasks
apart: the public results equal MP-Bench's aggregation on the public tasks alone."""

import random
import re
import wave
from io import BytesIO

import pytest
from django.core.cache import cache
from django.urls import reverse

from evaluation.benchmarks import get_plugin
from evaluation.models import Score, Submission
from evaluation.services import submission_create
from evaluation.services.held_out import held_out_mark
from evaluation.services.pipeline import task_outcomes
from leaderboard import audio
from tests.conftest import copy_examples, fresh, fresh_all, scoring_here, zip_tree
from tests.leaderboard.cast import lab_and_rivals

pytestmark = pytest.mark.django_db

VIEWERS = ["owner", "teammate", "outsider", "anonymous", "staff"]
HELD = "scenario_argument-diag_1001-tier_2-task_0"  # an example folder: held out below
OPEN = "scenario_argument-diag_1001-tier_1-task_1868"  # an example folder kept public
SEED = 20261201


def tone_wav(seconds: float = 0.5, rate: int = 16_000) -> bytes:
    buffer = BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x10" * int(seconds * rate))
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture(scope="module")
def shared_world(shared_mpbench, mpbench_dir, tmp_path_factory):
    """Made once for the module (see shared_db)."""
    lab, users = lab_and_rivals()
    folder = tmp_path_factory.mktemp("held-out")
    tree = copy_examples(mpbench_dir, folder / "bundle")
    for task in (HELD, OPEN):
        (tree / task / "response.wav").write_bytes(tone_wav())
    with scoring_here():
        submission = submission_create(
            benchmark=shared_mpbench,
            bundle_path=zip_tree(tree, folder / "bundle.zip"),
            system_name="Agent",
            judge=shared_mpbench.judges.get(slug="offline"),
            allow_partial=True,
            team=lab,
            submitted_by=users["owner"],
            publish=True,
        )
        submission.refresh_from_db()
        assert submission.status == Submission.Status.SCORED, submission.error
        random_tenth = held_out_mark(benchmark=shared_mpbench, fraction=0.10, seed=SEED)
        held = held_out_mark(benchmark=shared_mpbench, task_ids=[HELD])
    return shared_mpbench, submission, users, random_tenth, held


@pytest.fixture
def world(db, shared_world):
    """The module's world, read afresh for this test (the database rolls back after it)."""
    benchmark, submission, users, random_tenth, held = shared_world
    return fresh(benchmark), fresh(submission), fresh_all(users), random_tenth, held


def login(client, users, viewer):
    if viewer != "anonymous":
        client.force_login(users[viewer])


def test_the_random_tenth_is_reproducible_and_scores_keep_it_apart(world, mpbench_tasks):
    benchmark, submission, _, random_tenth, held = world
    # random.Random(seed).sample over the task ids in order, 10% of 927 rounded: 93.
    expected = sorted(random.Random(SEED).sample(sorted(mpbench_tasks), k=93))
    assert random_tenth == expected
    assert set(held) == set(expected) | {HELD}
    plugin = get_plugin("mp-bench")
    offline = benchmark.judges.get(slug="offline")
    score = Score.objects.get(submission=submission, judge=offline)
    outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
    public = [o for o in outcomes if o.task_id not in held]
    hidden = [o for o in outcomes if o.task_id in held]
    assert score.results == plugin.aggregate(public, facts={})
    # The upload holds 1 of the 94 held-out tasks: no held-out results, which from so few would
    # say how each was judged.
    assert len(hidden) == len(held) and score.held_out_results is None
    # Nothing of a held-out task reaches the stored contributions (slices, comparisons).
    assert not set(score.contributions["tasks"]) & set(held)


@pytest.mark.parametrize("viewer", VIEWERS)
def test_held_out_access_matrix(client, world, viewer):
    benchmark, submission, users, _, held = world
    login(client, users, viewer)
    staff = viewer == "staff"

    # The task's drill-down page, and the same task side by side with itself's other run.
    page = client.get(reverse("submission-task", args=[submission.pk, HELD]))
    assert page.status_code == (200 if staff else 404)
    if not staff:
        assert b"Karen" not in page.content  # nothing of the task's conversation
    public_page = client.get(reverse("submission-task", args=[submission.pk, OPEN]))
    assert public_page.status_code == 200

    # API: the task list, the task's judgments.
    listed = client.get(
        reverse("api-submission-tasks", args=[submission.pk]) + "?page_size=1000"
    ).json()
    ids = {row["task_id"] for row in listed["results"]}
    assert listed["count"] == (927 if staff else 927 - len(held))
    assert (HELD in ids) is staff and OPEN in ids
    judgments = client.get(reverse("api-task-judgments", args=[submission.pk, HELD]))
    assert judgments.status_code == (200 if staff else 404)

    # The submission page's task table.
    html = client.get(reverse("submission", args=[submission.pk]) + "?family=discussion")
    assert html.status_code == 200
    assert (HELD in html.content.decode()) is staff

    # Audio: a link made for this viewer (as a page would) for the held-out task's clip.
    key = f"submissions/{submission.pk}/{HELD}/response.wav"
    user = users.get(viewer)
    response = client.get(audio.audio_url(key=key, user=user, submission_id=submission.pk))
    assert response.status_code == (200 if staff else 403)
    peaks = client.get(audio.peaks_url(key=key, user=user, submission_id=submission.pk))
    assert peaks.status_code == (200 if staff else 403)
    open_key = f"submissions/{submission.pk}/{OPEN}/response.wav"
    assert (
        client.get(
            audio.audio_url(key=open_key, user=user, submission_id=submission.pk)
        ).status_code
        == 200
    )

    # The submission's per-task outcome downloads list held-out tasks for staff only.
    for fmt in ("csv", "json"):
        response = client.get(reverse("submission-outcomes", args=[submission.pk, fmt]))
        assert response.status_code == 200
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert (HELD in body.decode()) is staff, fmt
        assert OPEN in body.decode()

    # Board exports and charts carry aggregates only: no held-out task id anywhere.
    for url in (
        reverse("leaderboard-api", args=["mp-bench"]) + "?judge=offline",
        reverse("leaderboard-csv", args=["mp-bench"]) + "?judge=offline",
        reverse("leaderboard-charts", args=["mp-bench"]) + "?judge=offline",
        reverse("leaderboard", args=["mp-bench"]) + "?judge=offline",
        reverse("api-submission-detail", args=[submission.pk]),
        reverse("api-benchmark-slices", args=["mp-bench"]),
    ):
        body = client.get(url).content.decode()
        assert not any(task in body for task in held), url

    # A comparison never lists a held-out task among its disagreements.
    body = client.get(
        reverse("api-benchmark-compare", args=["mp-bench"])
        + f"?a={submission.pk}&b={submission.pk}"
    )
    assert body.status_code == 400  # the same submission twice: nothing to compare
    side = client.get(
        reverse("compare-task", args=["mp-bench", HELD]) + f"?a={submission.pk}&b={submission.pk}"
    )
    assert side.status_code in ((200, 400) if staff else (400, 404))
    assert not re.search(r"Karen", side.content.decode()) or staff


def test_raters_never_get_a_held_out_task(world):
    from annotation.services import study_units

    benchmark, submission, _, _, held = world
    kind = get_plugin("mp-bench").study_kinds[0].key
    units = study_units(
        benchmark=benchmark,
        kind=kind,
        judge=benchmark.judges.get(slug="offline"),
        submission=submission,
    )
    assert units and not {row.task.task_id for row, _ in units} & set(held)
