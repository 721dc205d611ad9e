"""Sign-up, login, logout and the account part of the site header."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import Membership, Team

pytestmark = pytest.mark.django_db


def test_sign_up_logs_in_and_lands_on_the_profile():
    client = Client()
    assert client.get("/accounts/signup/").status_code == 200
    response = client.post(
        "/accounts/signup/",
        {
            "username": "erin",
            "email": "",
            "password1": "long-enough-9",
            "password2": "long-enough-9",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/profile/"
    user = User.objects.get(username="erin")
    assert user.check_password("long-enough-9") and not user.is_staff
    page = client.get("/accounts/profile/").content.decode()
    assert "<h1>erin</h1>" in page and "Welcome, erin" in page
    # Signed in already: the sign-up and login pages send you on.
    assert client.get("/accounts/signup/")["Location"] == "/accounts/profile/"
    assert client.get("/accounts/login/").status_code == 302


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"username": "erin", "password1": "abc-123-xyz", "password2": "abc-123-xyz"},
            "already exists",
        ),
        (
            {"username": "ERIN", "password1": "abc-123-xyz", "password2": "abc-123-xyz"},
            "already exists",
        ),
        (
            {"username": "fay", "password1": "abc-123-xyz", "password2": "abc-123-xyw"},
            "didn’t match",
        ),
        (
            {"username": "", "password1": "abc-123-xyz", "password2": "abc-123-xyz"},
            "This field is required",
        ),
    ],
)
def test_sign_up_refuses_bad_input(data, message):
    User.objects.create_user("erin", password="x")
    response = Client().post("/accounts/signup/", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert User.objects.count() == 1


def test_login_and_logout():
    User.objects.create_user("gus", password="gus-secret-1")
    client = Client()
    bad = client.post("/accounts/login/", {"username": "gus", "password": "wrong"})
    assert (
        bad.status_code == 200
        and "Please enter a correct username and password" in bad.content.decode()
    )
    good = client.post(
        "/accounts/login/",
        {"username": "gus", "password": "gus-secret-1", "next": "/teams/"},
    )
    assert good.status_code == 302 and good["Location"] == "/teams/"
    assert client.get("/accounts/profile/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405  # logging out takes a POST
    out = client.post("/accounts/logout/")
    assert out.status_code == 302 and out["Location"] == "/"
    assert client.get("/accounts/profile/").status_code == 302


def test_login_refuses_an_outside_next():
    User.objects.create_user("gus", password="gus-secret-1")
    response = Client().post(
        "/accounts/login/",
        {"username": "gus", "password": "gus-secret-1", "next": "https://evil.example/"},
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_header_shows_the_account(db):
    anonymous = Client().get("/teams/", follow=True).content.decode()
    # The login page itself links to plain login: coming back to it once logged in would loop.
    assert 'href="/accounts/login/"' in anonymous and "?next=/accounts/login/" not in anonymous
    assert 'href="/accounts/signup/"' in anonymous and "Log out" not in anonymous
    board = Client().get("/?sort=latency&dir=asc").content.decode()
    assert 'href="/accounts/login/?next=/%3Fsort%3Dlatency%26dir%3Dasc"' in board

    user = User.objects.create_user("hana", password="pw")
    team = Team.objects.create(name="Hana Lab", slug="hana-lab")
    Membership.objects.create(team=team, user=user, role="owner")
    client = Client()
    client.force_login(user)
    page = client.get("/teams/").content.decode()
    header = page[page.index('<nav class="account">') : page.index("</nav>")]
    assert 'href="/accounts/profile/"' in header and ">hana<" in header
    assert 'href="/teams/hana-lab/"' in header and "Hana Lab" in header
    assert 'href="/accounts/tokens/"' in header
    assert 'action="/accounts/logout/"' in header and 'method="post"' in header
    assert "csrfmiddlewaretoken" in header
