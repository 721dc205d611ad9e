"""The cast of the authorization tests: alice owns Lab A, bob is her teammate, charlie owns
another team, staff belongs to none; anonymous is a client with no login. Lab A has one
published and one unpublished submission on the example plug-in's benchmark (toy-bench),
answering its first three tasks (two of them right), scored under the offline judge: written
by tests/factories.py (shared_world), or scored by the pipeline from toy_upload's zip
(scored_world) for tests of what the pipeline derived from it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from evaluation.models import Submission, Team
from evaluation.services import submission_create
from tests import factories
from tests.conftest import fresh, fresh_all, scoring_here, toy_upload

ROLES = ("alice", "bob", "charlie", "anonymous", "staff")
# The tasks toy_upload answers (q1 and q2 right, q3 wrong; q4 to q6 missing), each graded twice.
ANSWERED = ("q1", "q2", "q3")
SLOTS = ("accuracy", "style")


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Throttle counters live in the cache; every test starts from zero."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@dataclass
class World:
    users: dict[str, User | None]
    lab_a: Team
    lab_c: Team
    published: Submission
    private: Submission

    def client(self, role: str) -> APIClient:
        client = APIClient()
        if self.users[role] is not None:
            client.force_login(self.users[role])
        return client

    def submission(self, which: str) -> Submission:
        return {"published": self.published, "private": self.private}[which]


def make_people() -> tuple[dict[str, User | None], Team, Team]:
    users: dict[str, User | None] = {
        "alice": factories.user("alice", password="alice-pw-1"),
        "bob": factories.user("bob", password="bob-pw-1"),
        "charlie": factories.user("charlie", password="charlie-pw-1"),
        "staff": factories.user("staff", password="staff-pw-1", staff=True),
        "anonymous": None,
    }
    lab_a = factories.team("Lab A", owner=users["alice"], members=[users["bob"]])
    lab_c = factories.team("Lab C", owner=users["charlie"])
    return users, lab_a, lab_c


@pytest.fixture(scope="module")
def shared_world(shared_db, shared_toybench) -> World:
    """Made once for the module (see shared_db): every test sees it as made. The two
    submissions are rows written as the pipeline writes them (tests/factories.py): each
    answered toy_upload's three tasks, both grades of each judged, and misses the others.
    By the toy's rules: English (q1 to q3) has quality (1 + 1 + 0) / 3 = 66.67% and 3 of 3
    answered; German (q4 to q6) quality 0 and 0 of 3 answered."""
    users, lab_a, lab_c = make_people()
    offline = factories.offline_judge(shared_toybench)
    results = {
        **factories.plugin_results(
            "toy-bench", {"quality": 66.67, "answered": (3, 3)}, splits=["en"]
        ),
        **factories.plugin_results(
            "toy-bench", {"quality": 0.0, "answered": (0, 3)}, splits=["de"]
        ),
    }
    made = {
        publish: factories.scored_submission(
            shared_toybench,
            system=name,
            results=results,
            judge=offline,
            team=lab_a,
            submitted_by=users["alice"],
            published=publish,
            tasks=ANSWERED,
            judgments=[
                {"task_id": task_id, "kind": "grade", "slot": slot, "verdict": task_id != "q3"}
                for task_id in ANSWERED
                for slot in SLOTS
            ],
        )
        for name, publish in (("Published Agent", True), ("Private Agent", False))
    }
    return World(users, lab_a, lab_c, made[True], made[False])


def pipeline_world(benchmark, bundle) -> World:
    """The cast, with Lab A's published and unpublished submission of ``bundle`` scored by the
    pipeline under the benchmark's offline judge (every stage run here)."""
    users, lab_a, lab_c = make_people()
    offline = benchmark.judges.get(slug="offline")
    made = {}
    for name, publish in (("Published Agent", True), ("Private Agent", False)):
        with scoring_here():
            made[publish] = submission_create(
                benchmark=benchmark,
                bundle_path=bundle,
                system_name=name,
                judge=offline,
                allow_partial=True,
                team=lab_a,
                submitted_by=users["alice"],
                publish=publish,
            )
    published, private = (Submission.objects.get(pk=made[flag].pk) for flag in (True, False))
    assert published.status == private.status == Submission.Status.SCORED
    return World(users, lab_a, lab_c, published, private)


@pytest.fixture(scope="module")
def scored_world(shared_db, shared_toybench, tmp_path_factory) -> World:
    """shared_world with both submissions scored by the pipeline from toy_upload's zip, made
    once for the module (see shared_db): for tests of what the pipeline derived from the
    upload (measurements, judge prompts)."""
    return pipeline_world(
        shared_toybench, toy_upload(tmp_path_factory.mktemp("world") / "bundle.zip")
    )


@pytest.fixture
def world(db, shared_world) -> World:
    """The module's world, read afresh for this test (a test may change its objects)."""
    return World(
        fresh_all(shared_world.users),
        fresh(shared_world.lab_a),
        fresh(shared_world.lab_c),
        fresh(shared_world.published),
        fresh(shared_world.private),
    )
