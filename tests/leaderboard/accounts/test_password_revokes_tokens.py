"""A new password revokes the account's API tokens, whichever way it was set (a reset link, the
admin's own password form, staff setting a user's password), and the pages say so. Tokens of
other accounts, and tokens revoked before, stay as they were."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.accounts.models import ApiToken, EmailAddress
from leaderboard.accounts.services import api_token_create

pytestmark = pytest.mark.django_db
EARLIER = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def api_status(secret: str) -> tuple[int, str]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    response = client.get("/api/")
    return response.status_code, response.json().get("detail", "")


@pytest.fixture
def tokens():
    """bo's two active tokens and one revoked long ago, and cy's token."""
    bo = User.objects.create_user("bo", email="bo@example.org", password="old pass 12345")
    EmailAddress.objects.create(user=bo, email="bo@example.org", verified_at=timezone.now())
    cy = User.objects.create_user("cy", password="cy pass 12345")
    made = {
        "ci": api_token_create(user=bo, name="ci")[1],
        "laptop": api_token_create(user=bo, name="laptop")[1],
        "old": api_token_create(user=bo, name="old")[1],
        "cy": api_token_create(user=cy, name="cy")[1],
    }
    ApiToken.objects.filter(name="old").update(revoked_at=EARLIER)
    assert api_status(made["ci"])[0] == 200 and api_status(made["laptop"])[0] == 200
    return bo, made


def assert_revoked_now(made: dict, since: datetime) -> None:
    for name in ("ci", "laptop"):
        code, detail = api_status(made[name])
        assert code == 401 and f"API token '{name}' was revoked" in detail, name
        assert ApiToken.objects.get(name=name).revoked_at >= since
    assert ApiToken.objects.get(name="old").revoked_at == EARLIER
    assert api_status(made["cy"])[0] == 200


def test_a_password_reset_revokes_the_accounts_tokens_and_says_so(client, tokens):
    _, made = tokens
    started = timezone.now()
    client.post("/accounts/password/reset/", {"email": "bo@example.org"})
    link = re.search(r"https?://[^\s]+", mail.outbox[0].body).group(0).split("testserver")[1]
    page = client.get(link, follow=True)
    assert "Setting it revokes every API token of the account" in page.content.decode()
    done = client.post(
        page.redirect_chain[-1][0],
        {"new_password1": "new pass phrase 77", "new_password2": "new pass phrase 77"},
        follow=True,
    )
    assert "Every API token of the account was revoked" in done.content.decode()
    assert_revoked_now(made, started)


def test_changing_ones_own_password_in_the_admin_revokes_the_tokens(client, tokens):
    bo, made = tokens
    User.objects.filter(pk=bo.pk).update(is_staff=True)
    client.force_login(bo)
    started = timezone.now()
    response = client.post(
        "/admin/password_change/",
        {
            "old_password": "old pass 12345",
            "new_password1": "new pass phrase 77",
            "new_password2": "new pass phrase 77",
        },
    )
    assert response.status_code == 302
    assert_revoked_now(made, started)


def test_staff_setting_a_users_password_revokes_that_users_tokens(client, tokens):
    bo, made = tokens
    admin = User.objects.create_superuser("root", password="root pass 12345")
    client.force_login(admin)
    started = timezone.now()
    response = client.post(
        f"/admin/auth/user/{bo.pk}/password/",
        {
            "usable_password": "true",
            "password1": "new pass phrase 77",
            "password2": "new pass phrase 77",
        },
    )
    assert response.status_code == 302
    assert_revoked_now(made, started)


def test_a_failed_change_revokes_nothing(client, tokens):
    bo, made = tokens
    User.objects.filter(pk=bo.pk).update(is_staff=True)
    client.force_login(bo)
    response = client.post(
        "/admin/password_change/",
        {
            "old_password": "not the old one",
            "new_password1": "new pass phrase 77",
            "new_password2": "new pass phrase 77",
        },
    )
    assert response.status_code == 200
    assert api_status(made["ci"])[0] == 200 and api_status(made["laptop"])[0] == 200


def test_the_tokens_page_says_a_new_password_revokes_them(client, tokens):
    bo, _ = tokens
    client.force_login(bo)
    page = client.get("/accounts/tokens/").content.decode()
    assert "A new password (reset or changed) revokes every token." in page
