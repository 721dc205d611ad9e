"""The one visibility rule behind every page: who sees which submission, each exactly once."""

import pytest
from django.contrib.auth.models import AnonymousUser, User

from evaluation.models import Membership, Submission, System, Team
from evaluation.selectors import submissions_visible_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(toybench):
    team = Team.objects.create(name="Lab", slug="lab")
    alice, bob, carol = (User.objects.create_user(n) for n in ("alice", "bob", "carol"))
    staff = User.objects.create_user("staff", is_staff=True)
    Membership.objects.create(team=team, user=alice, role="owner")
    Membership.objects.create(team=team, user=bob)
    other = Team.objects.create(name="Other", slug="other")
    Membership.objects.create(team=other, user=carol)
    system = System.objects.create(name="Agent")

    def make(**fields):
        return Submission.objects.create(benchmark=toybench, system=system, team=team, **fields)

    return {
        "users": {
            "alice": alice,
            "bob": bob,
            "carol": carol,
            "staff": staff,
            "anon": AnonymousUser(),
        },
        "published": make(is_published=True),
        "private": make(),
        "hidden": make(is_published=True, is_hidden=True),
    }


@pytest.mark.parametrize(
    ("who", "sees"),
    [
        ("alice", {"published", "private", "hidden"}),
        ("bob", {"published", "private", "hidden"}),
        ("carol", {"published"}),
        ("anon", {"published"}),
        ("staff", {"published", "private", "hidden"}),
    ],
)
def test_who_sees_what(world, who, sees):
    ids = list(
        submissions_visible_to(user=world["users"][who])
        .filter(is_reported=False)
        .values_list("pk", flat=True)
    )
    assert sorted(ids) == sorted(world[name].pk for name in sees)  # and no duplicates
    assert len(ids) == len(set(ids))


def test_reported_rows_are_public(world):
    reported = Submission.objects.filter(is_reported=True).count()
    assert reported == 1  # the example plug-in's one row from its paper (ToyBench.reported_rows)
    assert submissions_visible_to(user=AnonymousUser()).filter(is_reported=True).count() == reported
