"""Staff manage tokens and team members in the admin; token secrets never appear there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_create
from tests.leaderboard.accounts.people import make_people

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client():
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    return client


def test_tokens_in_the_admin(admin_client):
    users, _, _ = make_people()
    token, secret = api_token_create(user=users["bob"], name="bob ci")
    page = admin_client.get("/admin/accounts/apitoken/").content.decode()
    assert "bob ci" in page and secret not in page
    detail = admin_client.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    assert token.secret_sha256 in detail and secret not in detail
    assert admin_client.get("/admin/accounts/apitoken/add/").status_code == 403
    response = admin_client.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
        follow=True,
    )
    assert "1 token(s) revoked" in response.content.decode()
    assert ApiToken.objects.get(pk=token.pk).is_revoked


def test_team_members_in_the_admin(admin_client):
    _, lab_a, _ = make_people()
    page = admin_client.get(f"/admin/evaluation/team/{lab_a.pk}/change/").content.decode()
    assert "Lab A" in page and "memberships-TOTAL_FORMS" in page
    assert page.count('name="memberships-') > 0 and "alice" in page


def test_staff_without_permissions_see_no_admin_data(db):
    users, _, _ = make_people()
    client = Client()
    client.force_login(users["staff"])
    assert client.get("/admin/accounts/apitoken/").status_code == 403
