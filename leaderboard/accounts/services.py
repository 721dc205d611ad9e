"""Writes for accounts: sign-up, teams and their members, API tokens, and what a team may do to
its own submissions (its owners: publish, unpublish, anonymity, delete; every member: retry their
failed judgments).

Bad input raises ValidationError with a message naming the problem; acting without the right
role raises PermissionDenied. Callers decide whether the object was visible in the first place.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone
from django.utils.text import slugify

from evaluation.board_state import board_changed
from evaluation.models import Judge, Judgment, Membership, Submission, System, TaskJudgment, Team
from evaluation.services import failed_judgments_retry
from evaluation.services.submissions import stored_keys_mark_deleted, submission_stored_keys
from leaderboard.accounts.models import ApiToken
from leaderboard.accounts.selectors import (
    secret_sha256,
    submission_change_refusal,
    team_role,
    user_in_submission_team,
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


# --- A team's own submissions ---------------------------------------------------------------


def submission_publish(*, submission: Submission, by) -> Submission:
    """Make a team's submission public (its owners and staff). Publishing twice keeps the
    first date."""
    _require_submission_owner(submission, by, "publish")
    Submission.objects.filter(pk=submission.pk, is_published=False).update(
        is_published=True, published_at=timezone.now()
    )
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_retry_failed(*, submission: Submission, by, judge: Judge | None = None) -> int:
    """Queue the failed judgments of a scored submission again (team members and staff)."""
    if not (by.is_staff or user_in_submission_team(user=by, submission=submission)):
        raise PermissionDenied("Only members of the submission's team and staff can retry it.")
    if submission.is_reported:
        raise ValidationError("Rows reported in a paper have no judgments to retry.")
    if submission.status != Submission.Status.SCORED:
        raise ValidationError(
            f"The submission is {submission.status}; failed judgments can be retried once it "
            "is scored."
        )
    judge = judge or submission.judge
    if judge is None or not submission.scores.filter(judge=judge).exists():
        raise ValidationError(
            f"Judge {judge.slug if judge else '-'} has not scored this submission."
        )
    return failed_judgments_retry(submission=submission, judge=judge)


def _require_submission_owner(submission: Submission, by, what: str) -> None:
    """What others see of a submission is decided by its team's owners and staff."""
    refusal = submission_change_refusal(user=by, submission=submission, what=what)
    if refusal:
        raise PermissionDenied(refusal)
    if submission.is_reported:
        raise ValidationError(f"Rows reported in a paper are not a team's to {what}.")


def submission_unpublish(*, submission: Submission, by) -> Submission:
    """Back to team-only: the board, exports and charts no longer show it to others."""
    _require_submission_owner(submission, by, "unpublish")
    Submission.objects.filter(pk=submission.pk).update(is_published=False, published_at=None)
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_set_anonymous(*, submission: Submission, by, anonymous: bool) -> Submission:
    """Show the submission as "Anonymous (under review)" to everyone outside its team, or
    reveal it (its system, team and links) again."""
    _require_submission_owner(submission, by, "show anonymously or reveal")
    Submission.objects.filter(pk=submission.pk).update(is_anonymous=anonymous)
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_delete(*, submission: Submission, by) -> int:
    """Withdraw a team's unpublished, finished submission for good: its rows, its stored files,
    the judgments no other submission uses, and its system when nothing else uses it. Its files
    are marked for deletion with the rows, in one transaction, and deleted once it commits by a
    task retried until storage answers: storage that is down never leaves rows half-deleted or
    files no row marks. Returns how many stored files were marked."""
    _require_submission_owner(submission, by, "delete")
    if submission.is_published:
        raise ValidationError("Unpublish the submission before deleting it.")
    if submission.status not in (Submission.Status.SCORED, Submission.Status.FAILED):
        raise ValidationError(
            f"The submission is still {submission.get_status_display().lower()}; delete it "
            "once it has finished."
        )
    keys = submission_stored_keys(submission=submission)
    board_changed(benchmark_id=submission.benchmark_id)
    used = set(
        TaskJudgment.objects.filter(task_result__submission=submission)
        .exclude(judgment=None)
        .values_list("judgment_id", flat=True)
    )
    system_id = submission.system_id
    try:
        with transaction.atomic():
            submission.delete()
            orphans = Judgment.objects.filter(pk__in=used).exclude(
                pk__in=TaskJudgment.objects.filter(judgment_id__in=used).values("judgment_id")
            )
            orphans.delete()
            system = System.objects.filter(pk=system_id).first()
            if system is not None and not system.submissions.exists():
                system.delete()
            marked = stored_keys_mark_deleted(keys=keys)
    except ProtectedError:
        raise ValidationError(
            "A rating study samples this submission, so it cannot be deleted; ask staff."
        ) from None
    return marked
