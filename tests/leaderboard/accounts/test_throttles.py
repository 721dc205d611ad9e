"""Guessing and bulk creation are throttled per account and per client address: logins
(the right password is not checked either once the limit is reached), sign-ups, team
creation, and the HTML exports at the API's rates."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from leaderboard.accounts.throttle import client_address

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def login(client, username, password, address="10.0.0.1", **headers):
    return client.post(
        "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        **headers,
    )


def logged_in_as(client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


def test_after_the_failures_the_right_password_is_not_checked_from_that_address(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS = 5
    User.objects.create_user("victim", password="right-horse-battery")
    for attempt in range(5):
        assert login(client, "victim", f"guess-{attempt}", "10.0.1.1").status_code == 200
    refused = login(client, "victim", "right-horse-battery", "10.0.1.1")
    assert refused.status_code == 200
    assert "Too many failed logins for this account from your address" in refused.content.decode()
    assert logged_in_as(client) is None
    # The account's owner, elsewhere, is not locked out by someone else's guessing.
    assert login(client, "victim", "right-horse-battery", "10.0.2.1").status_code == 302
    assert logged_in_as(client) == "victim"


def test_one_attacker_cannot_lock_the_owner_out_everywhere(client, settings):
    """The defaults: 10 failures lock the account for the guessing address only."""
    assert settings.LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS == 10
    User.objects.create_user("carol", password="carol-horse-battery")
    for attempt in range(12):
        login(client, "carol", f"guess-{attempt}", "203.0.113.66")
    refused = login(client, "carol", "carol-horse-battery", "203.0.113.66")
    assert "Too many failed logins" in refused.content.decode()
    assert login(client, "carol", "carol-horse-battery", "198.51.100.7").status_code == 302


def test_a_look_alike_spelling_is_counted_against_the_account_it_logs_in_as(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS = 3
    User.objects.create_user("carol", password="carol-horse-battery")
    # Fullwidth letters log in as carol: the login form NFKC-normalises the name.
    assert login(client, "\uff43\uff41\uff52\uff4f\uff4c", "carol-horse-battery").status_code == 302
    assert logged_in_as(client) == "carol"
    client.logout()
    # So guesses under that spelling (or another case of it) are carol's failures...
    for spelling in ("\uff43\uff41\uff52\uff4f\uff4c", "\uff23\uff41\uff52\uff4f\uff4c", "CAROL"):
        assert login(client, spelling, "wrong").status_code == 200
    refused = login(client, "carol", "carol-horse-battery")
    assert "Too many failed logins for this account" in refused.content.decode()
    assert logged_in_as(client) is None
    # ...and once carol is locked from here, no spelling of her name gets through either.
    refused = login(client, "\uff43\uff41\uff52\uff4f\uff4c", "carol-horse-battery")
    assert "Too many failed logins for this account" in refused.content.decode()
    assert logged_in_as(client) is None


def test_guessing_from_many_addresses_is_slowed_for_the_account_not_locked(
    client, settings, monkeypatch
):
    settings.LOGIN_ACCOUNT_BACKOFF_FAILURES = 4
    settings.LOGIN_ACCOUNT_BACKOFF_SECONDS = 60
    User.objects.create_user("dave", password="dave-horse-battery")
    for index in range(4):
        login(client, "dave", "wrong", f"10.5.0.{index}")
    # From now on one password check a minute, from anywhere: this one is checked (and wrong)...
    checked = login(client, "dave", "also-wrong", "10.5.1.1")
    assert "Please enter a correct username and password" in checked.content.decode()
    # ...so the next, even with the right password, waits for the next turn.
    refused = login(client, "dave", "dave-horse-battery", "10.5.1.2")
    assert "checked at most once every 60 seconds" in refused.content.decode()
    assert logged_in_as(client) is None
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    assert login(client, "dave", "dave-horse-battery", "10.5.1.2").status_code == 302
    assert logged_in_as(client) == "dave"


def test_one_address_guessing_many_accounts_is_stopped(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 3
    User.objects.create_user("real", password="real-horse-battery")
    for name in ("a", "b", "c"):
        login(client, name, "x", "10.9.9.9")
    refused = login(client, "real", "real-horse-battery", "10.9.9.9")
    assert "Too many failed logins from your address" in refused.content.decode()
    assert login(client, "real", "real-horse-battery", "10.9.9.8").status_code == 302


# Behind the documented TLS terminator (10.0.0.2) and the Compose proxy (REMOTE_ADDR): every
# request comes from the same two hops; only the entry the terminator appended tells clients
# apart. X-Real-IP is what the proxy used to send: the terminator's address.
TERMINATOR = {"HTTP_X_REAL_IP": "10.0.0.2"}
PROXY = "172.18.0.3"


def test_behind_the_terminator_each_client_is_counted_on_its_own(client, settings):
    settings.TRUSTED_PROXY_COUNT = 2
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 3
    User.objects.create_user("real", password="real-horse-battery")
    guesser = {**TERMINATOR, "HTTP_X_FORWARDED_FOR": "203.0.113.5, 10.0.0.2"}
    for name in ("a", "b", "c"):
        login(client, name, "x", PROXY, **guesser)
    other = {**TERMINATOR, "HTTP_X_FORWARDED_FOR": "198.51.100.9, 10.0.0.2"}
    assert login(client, "real", "real-horse-battery", PROXY, **other).status_code == 302
    client.logout()
    # The guesser claiming the other client's address in front of its own gains nothing.
    forged = {**TERMINATOR, "HTTP_X_FORWARDED_FOR": "198.51.100.9, 203.0.113.5, 10.0.0.2"}
    refused = login(client, "real", "real-horse-battery", PROXY, **forged)
    assert "Too many failed logins from your address" in refused.content.decode()


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "203.0.113.5", "172.18.0.3"),  # no proxy trusted: the connection
        (1, "", "172.18.0.3"),  # no header: the connection
        (1, "6.6.6.6, 203.0.113.5", "203.0.113.5"),  # what the one proxy appended
        (2, "203.0.113.5, 10.0.0.2", "203.0.113.5"),  # the terminator's entry
        (2, "6.6.6.6, 7.7.7.7, 203.0.113.5, 10.0.0.2", "203.0.113.5"),  # claims ignored
        (2, "203.0.113.5", "203.0.113.5"),  # the terminator skipped: the proxy's entry
        (3, " 203.0.113.5 ,10.0.0.2,10.0.0.9", "203.0.113.5"),  # spaces
    ],
)
def test_the_client_address_is_read_only_from_trusted_proxies(
    rf, settings, proxies, forwarded, expected
):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = rf.get("/", REMOTE_ADDR="172.18.0.3", HTTP_X_FORWARDED_FOR=forwarded, **TERMINATOR)
    assert client_address(request) == expected


def test_the_admin_login_counts_failures_too(client, settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS = 2
    User.objects.create_user("boss", password="boss-horse-battery", is_staff=True)
    for _ in range(2):
        client.post("/admin/login/", {"username": "boss", "password": "no"})
    refused = client.post("/admin/login/", {"username": "boss", "password": "boss-horse-battery"})
    assert "Too many failed logins" in refused.content.decode()
    # Staff elsewhere still log in.
    elsewhere = client.post(
        "/admin/login/",
        {"username": "boss", "password": "boss-horse-battery"},
        REMOTE_ADDR="10.8.8.8",
    )
    assert elsewhere.status_code == 302


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


def test_html_exports_are_throttled_like_the_api(client, settings, monkeypatch, toybench):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "5/minute"},
    }
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", api_settings.DEFAULT_THROTTLE_RATES)
    for path in ("/benchmarks/toy-bench/leaderboard.csv", "/benchmarks/toy-bench/charts.json"):
        cache.clear()
        codes = [client.get(path).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429], path
        assert int(client.get(path)["Retry-After"]) >= 1
