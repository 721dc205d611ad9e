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


def user_in_submission_team(*, user, submission: Submission) -> bool:
    if submission.team_id is None or user is None or not user.is_authenticated:
        return False
    return Membership.objects.filter(team_id=submission.team_id, user=user).exists()


def submission_change_refusal(*, user, submission: Submission, what: str = "") -> str:
    """Why the user may not publish, unpublish, show anonymously, reveal or delete the
    submission ("" when they may): its team's owners and staff decide what of the team's work
    others see. Only a member of the team is told the team's name and owners, so the reason
    never names the team of an anonymous submission to anyone outside it."""
    authenticated = user is not None and user.is_authenticated
    if authenticated and user.is_staff:
        return ""
    doing = what or "publish, unpublish, show anonymously, reveal or delete"
    role = None
    if authenticated and submission.team_id is not None:
        role = (
            Membership.objects.filter(team_id=submission.team_id, user=user)
            .values_list("role", flat=True)
            .first()
        )
    if role == Membership.Role.OWNER:
        return ""
    if role is None:
        return f"Only owners of the submission's team and staff can {doing} it."
    owners = list(
        Membership.objects.filter(team_id=submission.team_id, role=Membership.Role.OWNER)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )
    team = Team.objects.filter(pk=submission.team_id).values_list("name", flat=True).first()
    return (
        f"Only owners of {team} and staff can {doing} its submissions; you are a member. "
        f"Ask an owner: {', '.join(owners)}."
    )


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
