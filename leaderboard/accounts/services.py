"""Writes for accounts: sign-up, teams and their members, API tokens. What a team does with its
own submissions (publish, anonymity, delete, retry) is in evaluation.services.submissions.

Bad input raises ValidationError with a message naming the problem; acting without the right
role raises PermissionDenied. Callers decide whether the object was visible in the first place.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.models import Membership, Team
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.selectors import (
    secret_sha256,
    team_role,
)

TOKEN_PREFIX = "fb_"
# last_used_at is a hint for its owner, not an audit log: one write a minute per token is enough.
TOKEN_TOUCH_SECONDS = 60


def user_create(*, username: str, password: str, email: str = ""):
    """A new account; the caller has validated the password against the validators."""
    return get_user_model().objects.create_user(username=username, email=email, password=password)


# --- Teams ------------------------------------------------------------------------------------


def team_create(*, name: str, owner) -> Team:
    """A team with its creator as owner. The slug comes from the name and must be free."""
    name = name.strip()
    if not name:
        raise ValidationError("A team needs a name.")
    slug = slugify(name)[:50].strip("-")
    if not slug:
        raise ValidationError("The team name needs at least one letter or digit.")
    taken = ValidationError(
        f"A team with the address '{slug}' exists already; choose another name."
    )
    if Team.objects.filter(slug=slug).exists():
        raise taken
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name[:200], slug=slug)
            Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    except IntegrityError:  # created by someone else between the check and the insert
        raise taken from None
    return team


def _require_owner(team: Team, user) -> None:
    if team_role(team=team, user=user) != Membership.Role.OWNER:
        raise PermissionDenied(f"Only an owner of {team.name} can change its members.")


def membership_add(
    *, team: Team, username: str, by, role: str = Membership.Role.MEMBER
) -> Membership:
    _require_owner(team, by)
    if role not in Membership.Role.values:
        raise ValidationError(f"Unknown role '{role}'; choose one of {', '.join(Membership.Role)}.")
    username = username.strip()
    user = get_user_model().objects.filter(username=username).first() if username else None
    if user is None:
        raise ValidationError(f"No user is named '{username}'.")
    try:
        with transaction.atomic():
            return Membership.objects.create(team=team, user=user, role=role)
    except IntegrityError:
        raise ValidationError(f"{username} is already a member of {team.name}.") from None


def membership_remove(*, membership: Membership, by) -> None:
    """Owners remove members (themselves included), but a team always keeps one owner."""
    team = membership.team
    _require_owner(team, by)
    with transaction.atomic():
        owners = list(
            Membership.objects.select_for_update()
            .filter(team=team, role=Membership.Role.OWNER)
            .values_list("pk", flat=True)
        )
        if owners == [membership.pk]:
            raise ValidationError(
                f"{membership.user.get_username()} is the only owner of {team.name}; "
                "make someone else an owner first."
            )
        Membership.objects.filter(pk=membership.pk).delete()


# --- API tokens ---------------------------------------------------------------------------


def api_token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """The token and its secret. The secret is not stored and cannot be shown again."""
    name = name.strip()
    if not name:
        raise ValidationError("A token needs a name, so you can tell it apart later.")
    if len(name) > 100:
        raise ValidationError("A token name has at most 100 characters.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        secret_sha256=secret_sha256(secret),
    )
    return token, secret


def api_token_revoke(*, token: ApiToken, by) -> ApiToken:
    if token.user_id != by.pk:
        raise PermissionDenied("Only the owner of a token can revoke it.")
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def api_tokens_revoke_all(*, user) -> int:
    """Revoke every active token of the account (its password changed: whoever held the old
    one may hold a token too). Returns how many."""
    return ApiToken.objects.filter(user_id=user.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def api_token_touch(*, token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at and now - token.last_used_at < timedelta(seconds=TOKEN_TOUCH_SECONDS):
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now
