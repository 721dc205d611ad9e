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
from tests.conftest import copy_examples, zip_tree

ROLES = ("alice", "bob", "charlie", "anonymous", "staff")


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Hashing strength is not under test here; PBKDF2 would dominate the run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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


@pytest.fixture
def world(eager, mpbench, mpbench_dir, tmp_path, django_capture_on_commit_callbacks) -> World:
    users, lab_a, lab_c = make_people()
    bundle = zip_tree(copy_examples(mpbench_dir, tmp_path / "examples"), tmp_path / "bundle.zip")
    offline = mpbench.judges.get(slug="offline")
    made = {}
    for name, publish in (("Published Agent", True), ("Private Agent", False)):
        with django_capture_on_commit_callbacks(execute=True):
            made[publish] = submission_create(
                benchmark=mpbench,
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
