"""Reads for accounts: who belongs to which team, in what role, and which tokens they hold."""

from __future__ import annotations

import hashlib

from django.db.models import QuerySet

from evaluation.models import Membership, Submission, Team
from evaluation.selectors import submissions_visible_to
from leaderboard.accounts.models import ApiToken


def secret_sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def memberships_of(*, user) -> QuerySet[Membership]:
    """The user's memberships with their teams, by team name."""
    if user is None or not user.is_authenticated:
        return Membership.objects.none()
    return Membership.objects.filter(user=user).select_related("team").order_by("team__name")


def team_role(*, team: Team, user) -> str | None:
    """'owner', 'member', or None for anyone outside the team."""
    if user is None or not user.is_authenticated:
        return None
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def team_members(*, team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("-role", "user__username")


def team_submissions(*, user, limit: int = 20) -> list[Submission]:
    """The newest submissions of the user's teams (what they may see of them)."""
    team_ids = Membership.objects.filter(user=user).values("team_id")
    return list(
        submissions_visible_to(user=user)
        .filter(team_id__in=team_ids)
        .select_related("benchmark", "system", "team")
        .order_by("-created_at", "-pk")[:limit]
    )


def api_tokens_of(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def api_token_for_secret(*, secret: str) -> ApiToken | None:
    return (
        ApiToken.objects.select_related("user").filter(secret_sha256=secret_sha256(secret)).first()
    )
