"""The cast of the authorization tests: alice owns Lab A, bob is her teammate, charlie owns
another team, staff belongs to none; anonymous is a client with no login. Lab A has one
published and one unpublished submission, both really scored (offline judge, eager Celery)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from evaluation.models import Membership, Submission, Team
from evaluation.services import submission_create
from tests.conftest import copy_examples, fresh, fresh_all, scoring_here, zip_tree

ROLES = ("alice", "bob", "charlie", "anonymous", "staff")


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
        "alice": User.objects.create_user("alice", password="alice-pw-1"),
        "bob": User.objects.create_user("bob", password="bob-pw-1"),
        "charlie": User.objects.create_user("charlie", password="charlie-pw-1"),
        "staff": User.objects.create_user("staff", password="staff-pw-1", is_staff=True),
        "anonymous": None,
    }
    lab_a = Team.objects.create(name="Lab A", slug="lab-a")
    lab_c = Team.objects.create(name="Lab C", slug="lab-c")
    Membership.objects.create(team=lab_a, user=users["alice"], role=Membership.Role.OWNER)
    Membership.objects.create(team=lab_a, user=users["bob"], role=Membership.Role.MEMBER)
    Membership.objects.create(team=lab_c, user=users["charlie"], role=Membership.Role.OWNER)
    return users, lab_a, lab_c


@pytest.fixture(scope="module")
def shared_world(shared_db, shared_mpbench, mpbench_dir, tmp_path_factory) -> World:
    """Made once for the module (see shared_db): every test sees it as made."""
    users, lab_a, lab_c = make_people()
    folder = tmp_path_factory.mktemp("world")
    bundle = zip_tree(copy_examples(mpbench_dir, folder / "examples"), folder / "bundle.zip")
    offline = shared_mpbench.judges.get(slug="offline")
    made = {}
    for name, publish in (("Published Agent", True), ("Private Agent", False)):
        with scoring_here():
            made[publish] = submission_create(
                benchmark=shared_mpbench,
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
