"""Account pages for alice (owner of Lab A), bob (her teammate), charlie (owner of Lab C),
anonymous and staff."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation.models import Membership
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_create
from tests.leaderboard.accounts.people import make_people

pytestmark = pytest.mark.django_db

ORDER = ("anonymous", "charlie", "staff", "bob", "alice")


@pytest.fixture
def people():
    users, lab_a, lab_c = make_people()
    return users, lab_a, lab_c


def client_for(users, role: str) -> Client:
    client = Client()
    if users[role] is not None:
        client.force_login(users[role])
    return client


def answers(users, method: str, path: str, data=None) -> dict[str, int]:
    got = {}
    for role in ORDER:
        client = client_for(users, role)
        response = client.post(path, data or {}) if method == "post" else client.get(path)
        got[role] = response.status_code
    return got


LOGGED_IN = {"charlie": 200, "staff": 200, "bob": 200, "alice": 200}


@pytest.mark.parametrize("path", ["/accounts/profile/", "/accounts/tokens/", "/teams/"])
def test_personal_pages_need_a_login(people, path):
    users, _, _ = people
    assert answers(users, "get", path) == {"anonymous": 302, **LOGGED_IN}
    response = Client().get(path)
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_team_page(people):
    users, lab_a, _ = people
    assert answers(users, "get", "/teams/lab-a/") == {
        "anonymous": 302,
        "charlie": 404,  # outside the team: the team does not show
        "staff": 200,
        "bob": 200,
        "alice": 200,
    }
    owner_view = client_for(users, "alice").get("/teams/lab-a/").content.decode()
    member_view = client_for(users, "bob").get("/teams/lab-a/").content.decode()
    assert "Add a member" in owner_view and "Remove" in owner_view
    assert "Add a member" not in member_view and "Remove" not in member_view
    assert "alice" in member_view and "bob" in member_view
    assert client_for(users, "alice").get("/teams/nope/").status_code == 404


def test_adding_a_member_is_for_owners(people, django_user_model):
    users, lab_a, _ = people
    django_user_model.objects.create_user("dora")
    got = answers(users, "post", "/teams/lab-a/members/", {"username": "dora", "role": "member"})
    assert got == {"anonymous": 302, "charlie": 404, "staff": 403, "bob": 403, "alice": 302}
    assert Membership.objects.get(team=lab_a, user__username="dora").role == "member"

    alice = client_for(users, "alice")
    for data, message in (
        ({"username": "nobody", "role": "member"}, "No user is named &#x27;nobody&#x27;."),
        ({"username": "dora", "role": "member"}, "dora is already a member of Lab A."),
        ({"username": "dora", "role": "emperor"}, "Select a valid choice."),
    ):
        response = alice.post("/teams/lab-a/members/", data)
        assert response.status_code == 400
        assert message in response.content.decode()


def test_removing_a_member_is_for_owners(people):
    users, lab_a, _ = people
    bob = Membership.objects.get(team=lab_a, user=users["bob"])
    path = f"/teams/lab-a/members/{bob.pk}/remove/"
    got = answers(users, "post", path)
    assert got == {"anonymous": 302, "charlie": 404, "staff": 403, "bob": 403, "alice": 302}
    assert not Membership.objects.filter(pk=bob.pk).exists()
    # bob is out: the team is now as hidden from him as from charlie.
    assert client_for(users, "bob").get("/teams/lab-a/").status_code == 404


def test_the_last_owner_stays(people):
    users, lab_a, _ = people
    alice_membership = Membership.objects.get(team=lab_a, user=users["alice"])
    alice = client_for(users, "alice")
    response = alice.post(f"/teams/lab-a/members/{alice_membership.pk}/remove/", follow=True)
    assert "alice is the only owner of Lab A" in response.content.decode()
    assert Membership.objects.filter(pk=alice_membership.pk).exists()
    # With a second owner she may leave, and lands on her team list.
    bob = Membership.objects.get(team=lab_a, user=users["bob"])
    Membership.objects.filter(pk=bob.pk).update(role="owner")
    response = alice.post(f"/teams/lab-a/members/{alice_membership.pk}/remove/")
    assert response.status_code == 302 and response["Location"] == "/teams/"


def test_a_membership_of_another_team_is_404(people):
    users, _, lab_c = people
    charlie = Membership.objects.get(team=lab_c, user=users["charlie"])
    response = client_for(users, "alice").post(f"/teams/lab-a/members/{charlie.pk}/remove/")
    assert response.status_code == 404
    assert Membership.objects.filter(pk=charlie.pk).exists()


def test_creating_a_team_makes_its_creator_owner(people):
    users, _, _ = people
    bob = client_for(users, "bob")
    response = bob.post("/teams/", {"name": "Bob's Bots"})
    assert response.status_code == 302 and response["Location"] == "/teams/bobs-bots/"
    assert Membership.objects.get(team__slug="bobs-bots").user == users["bob"]
    assert Membership.objects.get(team__slug="bobs-bots").role == "owner"
    page = bob.get("/teams/").content.decode()
    assert "Bob&#x27;s Bots" in page and "Lab A" in page

    clash = client_for(users, "charlie").post("/teams/", {"name": "Bob’s bots!"})
    assert clash.status_code == 400
    assert "A team with the address &#x27;bobs-bots&#x27; exists already" in clash.content.decode()
    assert (
        "needs at least one letter or digit"
        in bob.post("/teams/", {"name": "???"}).content.decode()
    )
    assert Client().post("/teams/", {"name": "Sneaky"}).status_code == 302
    assert not Membership.objects.filter(team__slug="sneaky").exists()


def test_tokens_are_private_to_their_owner(people):
    users, _, _ = people
    token, secret = api_token_create(user=users["alice"], name="alice laptop")
    for role in ("bob", "charlie", "staff"):
        page = client_for(users, role).get("/accounts/tokens/").content.decode()
        assert "alice laptop" not in page and token.prefix not in page, role
    page = client_for(users, "alice").get("/accounts/tokens/").content.decode()
    assert "alice laptop" in page and token.prefix in page and secret not in page

    path = f"/accounts/tokens/{token.pk}/revoke/"
    got = answers(users, "post", path)
    assert got == {"anonymous": 302, "charlie": 404, "staff": 404, "bob": 404, "alice": 302}
    token.refresh_from_db()
    assert token.is_revoked
    assert Client().get(path).status_code == 302  # login first; then GET is not allowed
    assert client_for(users, "alice").get(path).status_code == 405


def test_a_new_token_is_shown_once(people):
    users, _, _ = people
    bob = client_for(users, "bob")
    response = bob.post("/accounts/tokens/", {"name": "CI uploads"})
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    page = response.content.decode()
    token = ApiToken.objects.get(user=users["bob"])
    start = page.index('id="token-secret">') + len('id="token-secret">')
    secret = page[start : page.index("<", start)]
    assert secret.startswith(token.prefix) and len(secret) > 40
    assert secret not in bob.get("/accounts/tokens/").content.decode()
    assert bob.post("/accounts/tokens/", {"name": "  "}).status_code == 400


def test_profile_lists_the_teams_submissions(world):
    urls = {
        "published": f"/submissions/{world.published.pk}/",
        "private": f"/submissions/{world.private.pk}/",
    }
    for role, expected in {
        "alice": {"published", "private"},
        "bob": {"published", "private"},
        "charlie": set(),
        "staff": set(),  # staff see everything elsewhere, but these are not their teams
    }.items():
        page = client_for(world.users, role).get("/accounts/profile/").content.decode()
        assert {which for which, url in urls.items() if url in page} == expected, role
        assert f"<h1>{role}</h1>" in page
    page = client_for(world.users, "bob").get("/accounts/profile/").content.decode()
    assert "private to the team" in page and "published" in page and "Lab A" in page
