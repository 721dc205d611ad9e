"""Bearer tokens from the accounts app: they authenticate, are stored only as a hash, and stop
working when revoked. Throttling answers 429 once the rate is spent."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.settings import api_settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_token_acts_as_its_user(world):
    token, secret = api_token_create(user=world.users["bob"], name="laptop")
    assert token.last_used_at is None
    path = f"/api/submissions/{world.private.pk}/"
    assert APIClient().get(path).status_code == 404
    response = bearer(secret).get(path)
    assert response.status_code == 200
    assert response.json()["system"]["name"] == "Private Agent"
    token.refresh_from_db()
    assert token.last_used_at is not None
    # Only the SHA-256 of the secret is stored, computed here with hashlib directly.
    stored = ApiToken.objects.values_list("secret_sha256", flat=True).get(pk=token.pk)
    assert stored == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(list(ApiToken.objects.values()))


def test_a_token_can_publish_without_a_session(world):
    _, secret = api_token_create(user=world.users["alice"], name="ci")
    response = bearer(secret).post(f"/api/submissions/{world.private.pk}/publish/")
    assert response.status_code == 200
    assert response.json()["is_published"] is True
    assert APIClient().get(f"/api/submissions/{world.private.pk}/").status_code == 200


def test_revoked_unknown_and_malformed_tokens_get_401(world):
    token, secret = api_token_create(user=world.users["alice"], name="old")
    api_token_revoke(token=token, by=world.users["alice"])
    path = "/api/benchmarks/"  # public: a bad token is refused even where none is needed
    revoked = bearer(secret).get(path)
    assert revoked.status_code == 401
    assert "revoked" in revoked.json()["detail"] and "'old'" in revoked.json()["detail"]
    assert revoked["WWW-Authenticate"] == 'Bearer realm="api"'

    unknown = bearer("fb_" + "x" * 43).get(path)
    assert unknown.status_code == 401
    assert unknown.json()["detail"] == "Unknown API token."

    malformed = APIClient()
    malformed.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    response = malformed.get(path)
    assert response.status_code == 401
    assert "Malformed Authorization header" in response.json()["detail"]


def test_a_disabled_account_cannot_use_its_token(world):
    _, secret = api_token_create(user=world.users["charlie"], name="t")
    world.users["charlie"].is_active = False
    world.users["charlie"].save()
    response = bearer(secret).get("/api/benchmarks/")
    assert response.status_code == 401
    assert "disabled" in response.json()["detail"]


def test_session_writes_need_the_csrf_token(world):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.users["alice"])
    response = client.post(f"/api/submissions/{world.private.pk}/publish/")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    # A token needs no CSRF token: it cannot be sent by another site's form.
    _, secret = api_token_create(user=world.users["alice"], name="t")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.post(f"/api/submissions/{world.private.pk}/publish/").status_code == 200


@pytest.fixture
def low_rates(settings, monkeypatch):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "5/minute"},
    }
    # DRF binds the rates to the throttle class when it is first imported.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", api_settings.DEFAULT_THROTTLE_RATES)


def test_throttling_answers_429(db, low_rates, django_user_model):
    anonymous = APIClient()
    codes = [anonymous.get("/api/benchmarks/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = anonymous.get("/api/benchmarks/")
    assert int(limited["Retry-After"]) > 0
    assert "throttled" in limited.json()["detail"].lower()

    # Users are counted per account, apart from anonymous traffic from the same address.
    user = django_user_model.objects.create_user("dora")
    _, secret = api_token_create(user=user, name="t")
    client = bearer(secret)
    codes = [client.get("/api/benchmarks/").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]
