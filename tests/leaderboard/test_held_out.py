"""Held-out tasks on the example plug-in's benchmark (toy-bench, six tasks): staff hold out a
seeded random 10% (plus one answered task that has audio); then every page, API endpoint,
export and audio URL that could show a held-out task's ground truth, prompts or per-task
results is tried by the owner, a teammate, an outsider, an anonymous visitor and staff. Only
staff see them. Scores keep the held-out tasks apart: the public results equal the toy's
aggregation on the public tasks alone."""

import random
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from evaluation.benchmarks import get_plugin
from evaluation.models import Score, Submission
from evaluation.services import submission_create
from evaluation.services.held_out import held_out_mark
from evaluation.services.pipeline import task_outcomes
from leaderboard import audio
from tests.conftest import fresh, fresh_all, scoring_here, toy_upload
from tests.leaderboard.cast import lab_and_rivals
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db

VIEWERS = ["owner", "teammate", "outsider", "anonymous", "staff"]
TASK_IDS = [task["id"] for task in toy.TASKS]  # q1 to q6
# toy_upload answers q1 (right: "It is 2"), q2 (right) and q3 (wrong), each spoken beside it.
HELD = "q1"  # held out below
HELD_TEXT = (b"What is 1 plus 1?", b"It is 2")  # its question and its answer
OPEN = "q2"  # kept public
# random.Random(SEED).sample(TASK_IDS, k=1) is ["q6"], a task the upload misses.
SEED = 20261204


def mentions(body: str, task_id: str) -> bool:
    """The task's id as a word (q1, not part of a token such as a CSRF token's)."""
    return re.search(rf"\b{task_id}\b", body) is not None


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture(scope="module")
def shared_world(shared_toybench, tmp_path_factory):
    """Made once for the module (see shared_db)."""
    lab, users = lab_and_rivals()
    bundle = toy_upload(tmp_path_factory.mktemp("held-out") / "bundle.zip")
    with scoring_here():
        submission = submission_create(
            benchmark=shared_toybench,
            bundle_path=bundle,
            system_name="Agent",
            judge=shared_toybench.judges.get(slug="offline"),
            allow_partial=True,
            team=lab,
            submitted_by=users["owner"],
            publish=True,
        )
        submission.refresh_from_db()
        assert submission.status == Submission.Status.SCORED, submission.error
        random_tenth = held_out_mark(benchmark=shared_toybench, fraction=0.10, seed=SEED)
        held = held_out_mark(benchmark=shared_toybench, task_ids=[HELD])
    return shared_toybench, submission, users, random_tenth, held


@pytest.fixture
def world(db, shared_world):
    """The module's world, read afresh for this test (the database rolls back after it)."""
    benchmark, submission, users, random_tenth, held = shared_world
    return fresh(benchmark), fresh(submission), fresh_all(users), random_tenth, held


def login(client, users, viewer):
    if viewer != "anonymous":
        client.force_login(users[viewer])


def test_the_random_tenth_is_reproducible_and_scores_keep_it_apart(world):
    benchmark, submission, _, random_tenth, held = world
    # random.Random(seed).sample over the task ids in order, 10% of 6 rounded: 1.
    expected = sorted(random.Random(SEED).sample(sorted(TASK_IDS), k=1))
    assert random_tenth == expected == ["q6"]
    assert set(held) == set(expected) | {HELD} == {"q1", "q6"}
    plugin = get_plugin("toy-bench")
    offline = benchmark.judges.get(slug="offline")
    score = Score.objects.get(submission=submission, judge=offline)
    outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
    public = [o for o in outcomes if o.task_id not in held]
    hidden = [o for o in outcomes if o.task_id in held]
    assert score.results == plugin.aggregate(public, facts={})
    # By hand, on the public tasks: English q2 (grades 1) and q3 (grades 0), 50% and 2 of 2
    # answered; German q4 and q5, both missing (q6 is held out), 0% and 0 of 2.
    assert score.results["en"]["quality"]["pct"] == 50.0
    assert score.results["en"]["answered"] == {"count": 2, "total": 2, "pct": 100.0}
    assert score.results["de"]["quality"]["pct"] == 0.0
    assert score.results["de"]["answered"] == {"count": 0, "total": 2, "pct": 0.0}
    # The upload holds 1 of the 2 held-out tasks: no held-out results, which from so few would
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
    # Nothing of the task (its question, its answer) but for staff, who see both.
    assert [text in page.content for text in HELD_TEXT] == [staff, staff]
    public_page = client.get(reverse("submission-task", args=[submission.pk, OPEN]))
    assert public_page.status_code == 200

    # API: the task list, the task's judgments.
    listed = client.get(
        reverse("api-submission-tasks", args=[submission.pk]) + "?page_size=1000"
    ).json()
    ids = {row["task_id"] for row in listed["results"]}
    assert listed["count"] == (6 if staff else 6 - len(held))
    assert (HELD in ids) is staff and OPEN in ids
    judgments = client.get(reverse("api-task-judgments", args=[submission.pk, HELD]))
    assert judgments.status_code == (200 if staff else 404)

    # The submission page's task table.
    html = client.get(reverse("submission", args=[submission.pk]) + "?topic=math")
    assert html.status_code == 200
    assert mentions(html.content.decode(), HELD) is staff

    # Audio: a link made for this viewer (as a page would) for the held-out task's clip.
    key = f"submissions/{submission.pk}/{HELD}/{toy.SPOKEN}"
    user = users.get(viewer)
    response = client.get(audio.audio_url(key=key, user=user, submission_id=submission.pk))
    assert response.status_code == (200 if staff else 403)
    peaks = client.get(audio.peaks_url(key=key, user=user, submission_id=submission.pk))
    assert peaks.status_code == (200 if staff else 403)
    open_key = f"submissions/{submission.pk}/{OPEN}/{toy.SPOKEN}"
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
        assert mentions(body.decode(), HELD) is staff, fmt
        assert mentions(body.decode(), OPEN)

    # Board exports and charts carry aggregates only: no held-out task id anywhere.
    for url in (
        reverse("leaderboard-api", args=["toy-bench"]) + "?judge=offline",
        reverse("leaderboard-csv", args=["toy-bench"]) + "?judge=offline",
        reverse("leaderboard-charts", args=["toy-bench"]) + "?judge=offline",
        reverse("leaderboard", args=["toy-bench"]) + "?judge=offline",
        reverse("api-submission-detail", args=[submission.pk]),
        reverse("api-benchmark-slices", args=["toy-bench"]),
    ):
        body = client.get(url).content.decode()
        assert not any(mentions(body, task) for task in held), url

    # A comparison never lists a held-out task among its disagreements.
    body = client.get(
        reverse("api-benchmark-compare", args=["toy-bench"])
        + f"?a={submission.pk}&b={submission.pk}"
    )
    assert body.status_code == 400  # the same submission twice: nothing to compare
    side = client.get(
        reverse("compare-task", args=["toy-bench", HELD]) + f"?a={submission.pk}&b={submission.pk}"
    )
    assert side.status_code in ((200, 400) if staff else (400, 404))
    assert staff or not any(text in side.content for text in HELD_TEXT)


def test_raters_never_get_a_held_out_task(world):
    from annotation.services import study_units

    benchmark, submission, _, _, held = world
    kind = get_plugin("toy-bench").study_kinds[0].key
    units = study_units(
        benchmark=benchmark,
        kind=kind,
        judge=benchmark.judges.get(slug="offline"),
        submission=submission,
    )
    assert units and not {row.task.task_id for row, _ in units} & set(held)
