"""The account services on their own: roles, the last owner, token secrets and their use."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from evaluation.models import Membership, Team
from leaderboard.accounts import services
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.selectors import api_token_for_secret, memberships_of, team_role
from tests.leaderboard.accounts.people import make_people

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return make_people()


def test_roles(people):
    users, lab_a, lab_c = people
    assert team_role(team=lab_a, user=users["alice"]) == "owner"
    assert team_role(team=lab_a, user=users["bob"]) == "member"
    assert team_role(team=lab_a, user=users["charlie"]) is None
    assert team_role(team=lab_a, user=users["staff"]) is None
    assert [m.team.name for m in memberships_of(user=users["charlie"])] == ["Lab C"]
    assert list(memberships_of(user=None)) == []


def test_only_owners_change_members(people):
    users, lab_a, _ = people
    for role in ("bob", "charlie", "staff"):
        with pytest.raises(PermissionDenied):
            services.membership_add(team=lab_a, username="charlie", by=users[role])
    membership = services.membership_add(
        team=lab_a, username="charlie", by=users["alice"], role="owner"
    )
    assert membership.role == "owner"
    with pytest.raises(ValidationError, match="Unknown role 'king'"):
        services.membership_add(team=lab_a, username="staff", by=users["alice"], role="king")
    with pytest.raises(ValidationError, match="No user is named ''"):
        services.membership_add(team=lab_a, username="  ", by=users["alice"])


def test_a_team_always_keeps_an_owner(people):
    users, lab_a, _ = people
    alice = Membership.objects.get(team=lab_a, user=users["alice"])
    with pytest.raises(ValidationError, match="only owner"):
        services.membership_remove(membership=alice, by=users["alice"])
    bob = Membership.objects.get(team=lab_a, user=users["bob"])
    services.membership_remove(membership=bob, by=users["alice"])
    assert list(lab_a.memberships.values_list("user__username", flat=True)) == ["alice"]


def test_team_names_become_unique_slugs(people):
    users, _, _ = people
    team = services.team_create(name="  Voice Lab  ", owner=users["bob"])
    assert (team.name, team.slug) == ("Voice Lab", "voice-lab")
    with pytest.raises(ValidationError, match="'voice-lab' exists already"):
        services.team_create(name="VOICE lab", owner=users["charlie"])
    with pytest.raises(ValidationError, match="needs a name"):
        services.team_create(name=" ", owner=users["charlie"])
    long = services.team_create(name="x" * 80, owner=users["charlie"])
    assert long.slug == "x" * 50
    assert Team.objects.filter(slug="voice-lab").count() == 1


def test_token_secret_is_random_and_only_its_hash_is_kept(people):
    users, _, _ = people
    token, secret = services.api_token_create(user=users["alice"], name="one")
    other, other_secret = services.api_token_create(user=users["alice"], name="two")
    assert secret != other_secret
    assert re.fullmatch(r"fb_[A-Za-z0-9_-]{43}", secret)  # 32 random bytes, URL-safe base64
    assert token.secret_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert token.prefix == secret[:9] and secret not in repr(ApiToken.objects.values())
    assert api_token_for_secret(secret=secret) == token
    assert api_token_for_secret(secret=secret + "x") is None
    with pytest.raises(ValidationError):
        services.api_token_create(user=users["alice"], name="n" * 101)


def test_only_the_owner_revokes_a_token(people):
    users, _, _ = people
    token, _ = services.api_token_create(user=users["alice"], name="one")
    with pytest.raises(PermissionDenied):
        services.api_token_revoke(token=token, by=users["staff"])
    revoked = services.api_token_revoke(token=token, by=users["alice"])
    first = revoked.revoked_at
    assert first is not None
    assert services.api_token_revoke(token=token, by=users["alice"]).revoked_at == first


def test_last_used_is_written_at_most_once_a_minute(people):
    users, _, _ = people
    token, _ = services.api_token_create(user=users["alice"], name="one")
    services.api_token_touch(token=token)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    services.api_token_touch(token=token)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    stale = timezone.now() - timedelta(seconds=services.TOKEN_TOUCH_SECONDS + 1)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stale)
    token.refresh_from_db()
    services.api_token_touch(token=token)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > stale
