"""Guessing and bulk creation are throttled per account and per client address: logins
(the right password is not checked either once the limit is reached), sign-ups, team
creation, and the HTML exports at the API's rates."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def login(client, username, password, address="10.0.0.1"):
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def test_after_the_failures_the_right_password_is_not_checked_either(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT = 5
    User.objects.create_user("victim", password="right-horse-battery")
    for attempt in range(5):
        assert login(client, "victim", f"guess-{attempt}", f"10.0.1.{attempt}").status_code == 200
    refused = login(client, "victim", "right-horse-battery", "10.0.2.1")
    assert refused.status_code == 200 and "Too many failed logins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # Another account from another address is unaffected.
    User.objects.create_user("other", password="other-horse-battery")
    assert login(client, "other", "other-horse-battery", "10.0.3.1").status_code == 302


def test_one_address_guessing_many_accounts_is_stopped(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 3
    User.objects.create_user("real", password="real-horse-battery")
    for name in ("a", "b", "c"):
        login(client, name, "x", "10.9.9.9")
    refused = login(client, "real", "real-horse-battery", "10.9.9.9")
    assert "Too many failed logins" in refused.content.decode()
    assert login(client, "real", "real-horse-battery", "10.9.9.8").status_code == 302


def test_the_admin_login_counts_failures_too(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT = 2
    User.objects.create_user("boss", password="boss-horse-battery", is_staff=True)
    for _ in range(2):
        client.post("/admin/login/", {"username": "boss", "password": "no"})
    refused = client.post("/admin/login/", {"username": "boss", "password": "boss-horse-battery"})
    assert "Too many failed logins" in refused.content.decode()


def test_sign_ups_per_address(client, settings):
    settings.SIGNUPS_PER_ADDRESS_PER_HOUR = 2
    for index in range(2):
        response = client.post(
            "/accounts/signup/",
            {
                "username": f"bulk{index}",
                "password1": "Zq8!vert-lamp",
                "password2": "Zq8!vert-lamp",
            },
            REMOTE_ADDR="10.1.1.1",
        )
        assert response.status_code == 302, response.content
        client.logout()
    third = client.post(
        "/accounts/signup/",
        {"username": "bulk2", "password1": "Zq8!vert-lamp", "password2": "Zq8!vert-lamp"},
        REMOTE_ADDR="10.1.1.1",
    )
    assert third.status_code == 429 and not User.objects.filter(username="bulk2").exists()


def test_team_creation_per_account(client, settings):
    settings.TEAMS_PER_ACCOUNT_PER_DAY = 2
    user = User.objects.create_user("maker", password="x")
    client.force_login(user)
    for index in range(2):
        assert client.post("/teams/", {"name": f"Team {index}"}).status_code == 302
    refused = client.post("/teams/", {"name": "Team 3"})
    assert refused.status_code == 429 and "Too many teams" in refused.content.decode()


def test_html_exports_are_throttled_like_the_api(client, settings, monkeypatch, mpbench):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "5/minute"},
    }
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", api_settings.DEFAULT_THROTTLE_RATES)
    for path in ("/benchmarks/mp-bench/leaderboard.csv", "/benchmarks/mp-bench/charts.json"):
        cache.clear()
        codes = [client.get(path).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429], path
        assert int(client.get(path)["Retry-After"]) >= 1
