"""Accounts in real headless Chromium against a live server: sign up, create a team, add a
member, make an API token and use it, revoke it, log out. Screenshots go to test-artifacts/."""

from __future__ import annotations

import httpx
import pytest
from django.contrib.auth.models import User

from evaluation.models import Membership
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"accounts-{name}.png"), full_page=True)


def test_sign_up_team_token_and_logout(browser, live_server):
    User.objects.create_user("jo", password="jo-pw-12345")
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live_server.url + "/")
    page.click("nav.account >> text=Sign up")
    page.fill("#id_username", "ivy")
    page.fill("#id_password1", "ivy-secret-123")
    page.fill("#id_password2", "ivy-secret-123")
    page.click("button:has-text('Create account')")
    page.wait_for_url("**/accounts/profile/")
    assert "Welcome, ivy" in page.content()
    shot(page, "profile")

    page.click("nav.account >> text=create a team")
    page.fill("#id_name", "Ivy Lab")
    page.click("button:has-text('Create team')")
    page.wait_for_url("**/teams/ivy-lab/")
    page.fill("#id_username", "jo")
    page.click("button:has-text('Add member')")
    page.wait_for_selector("text=jo joined Ivy Lab as member.")
    assert Membership.objects.get(team__slug="ivy-lab", user__username="jo").role == "member"
    assert page.locator("nav.account a[href='/teams/ivy-lab/']").inner_text() == "Ivy Lab"
    shot(page, "team")

    page.click("nav.account >> text=API tokens")
    page.fill("#id_name", "laptop")
    page.click("button:has-text('Create token')")
    secret = page.locator("#token-secret").inner_text().strip()
    shot(page, "token-created")
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=live_server.url, timeout=10) as http:
        assert http.get("/api/submissions/", headers=headers).status_code == 200
        page.goto(live_server.url + "/accounts/tokens/")
        assert secret not in page.content()  # shown once only
        assert "never" not in page.locator("table.tokens tbody tr").inner_text()  # last used
        page.click("table.tokens button:has-text('Revoke')")
        page.wait_for_selector("text=Token laptop revoked")
        refused = http.get("/api/submissions/", headers=headers)
        assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    shot(page, "token-revoked")

    page.click("nav.account button:has-text('Log out')")
    page.wait_for_url(live_server.url + "/")
    assert page.locator("nav.account >> text=Log in").is_visible()
    page.goto(live_server.url + "/accounts/profile/")
    assert "/accounts/login/" in page.url
