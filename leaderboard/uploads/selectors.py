"""Reads for uploads: who may see an upload, a team's submission limits, the report's shape."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet, Sum
from django.utils import timezone

from evaluation.models import Submission, Team
from leaderboard.uploads.models import Upload

DAY = timedelta(hours=24)
# Above this many tasks sharing one message, the report lists them in one collapsible row.
GROUP_TASKS_OVER = 5


def uploads_visible_to(*, user) -> QuerySet[Upload]:
    """An upload is seen by the members of its team and by staff."""
    if user is None or not user.is_authenticated:
        return Upload.objects.none()
    if user.is_staff:
        return Upload.objects.all()
    return Upload.objects.filter(team__memberships__user=user)


def teams_of(*, user) -> QuerySet[Team]:
    if user is None or not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


@dataclass(frozen=True)
class LimitRefusal:
    limit: str  # "submissions_per_day", "concurrent_evaluations", "stored_bytes", ...
    allowed: int
    message: str
    retry_after: datetime | None  # when a slot frees up, if that is known in advance


def _limit(team_value: int | None, default: int) -> int:
    return default if team_value is None else team_value


def _duration(delta: timedelta) -> str:
    minutes = max(1, math.ceil(delta.total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _refusal(*, counted, who: str, per_day: int, concurrent: int, now) -> LimitRefusal | None:
    recent = counted.filter(created_at__gt=now - DAY).order_by("created_at")
    made = recent.count()
    if made >= per_day:
        if per_day == 0:
            return LimitRefusal("submissions_per_day", 0, f"{who} may not submit at present.", None)
        # The count drops below the limit when the (made - per_day + 1)-th oldest leaves the window.
        frees_at = recent.values_list("created_at", flat=True)[made - per_day] + DAY
        return LimitRefusal(
            "submissions_per_day",
            per_day,
            f"{who} has reached its limit of {per_day} submissions per day "
            f"(rolling 24 hours; failed ones do not count). The next one can be made at "
            f"{frees_at:%Y-%m-%d %H:%M} UTC, in {_duration(frees_at - now)}.",
            frees_at,
        )
    running = counted.exclude(status=Submission.Status.SCORED).order_by("created_at")
    in_progress = running.count()
    if in_progress >= concurrent:
        shown = ", ".join(f"#{pk}" for pk in running.values_list("pk", flat=True)[:10])
        return LimitRefusal(
            "concurrent_evaluations",
            concurrent,
            f"{who} has {in_progress} evaluation(s) in progress, its limit of "
            f"{concurrent} concurrent evaluations. Another can start when one of them "
            f"({shown}) is scored or fails.",
            None,
        )
    return None


def _storage_refusal(*, stored, who: str, most: int, adding: int) -> LimitRefusal | None:
    """Refused when the bytes kept by these submissions (failed ones included), with
    ``adding`` more, would pass ``most`` (0: no limit)."""
    if not most:
        return None
    kept = stored.aggregate(total=Sum("stored_bytes"))["total"] or 0
    if kept + adding <= most:
        return None
    return LimitRefusal(
        "stored_bytes",
        most,
        f"{who} keeps {kept:,} bytes of submissions (failed ones included); with this upload "
        f"({adding:,} bytes counted) it would pass its storage limit of {most:,} bytes. "
        "Delete a submission it no longer needs; a failed one's files are deleted "
        f"{settings.FAILED_FILES_KEEP_DAYS:g} days after it failed.",
        None,
    )


def _counted():
    return Submission.objects.filter(is_reported=False).exclude(status=Submission.Status.FAILED)


def _stored():
    return Submission.objects.filter(is_reported=False)


def team_limit_refusal(
    *, team: Team, adding_bytes: int = 0, now: datetime | None = None
) -> LimitRefusal | None:
    """Why this team may not create a submission of ``adding_bytes`` (its bundle and what it
    unpacks to) right now, or None. Failed submissions count against the storage limit only.
    Callers that go on to create hold the team row lock."""
    who = f"Team {team.name}"
    return _refusal(
        counted=_counted().filter(team=team),
        who=who,
        per_day=_limit(team.max_submissions_per_day, settings.MAX_SUBMISSIONS_PER_DAY),
        concurrent=_limit(team.max_concurrent_evaluations, settings.MAX_CONCURRENT_EVALUATIONS),
        now=now or timezone.now(),
    ) or _storage_refusal(
        stored=_stored().filter(team=team),
        who=who,
        most=settings.MAX_STORED_BYTES_PER_TEAM,
        adding=adding_bytes,
    )


def account_limit_refusal(
    *, user, adding_bytes: int = 0, now: datetime | None = None
) -> LimitRefusal | None:
    """The same limits for one account over all its teams, so that making more teams does not
    make more room. Callers that go on to create hold the user row lock."""
    who = f"Your account ({user.get_username()})"
    return _refusal(
        counted=_counted().filter(submitted_by=user),
        who=who,
        per_day=settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT,
        concurrent=settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT,
        now=now or timezone.now(),
    ) or _storage_refusal(
        stored=_stored().filter(submitted_by=user),
        who=who,
        most=settings.MAX_STORED_BYTES_PER_ACCOUNT,
        adding=adding_bytes,
    )


def open_uploads_refusal(*, user, adding: int) -> LimitRefusal | None:
    """Why this user may not open another upload of `adding` bytes: too many open at once, or
    too many bytes announced by them. Callers that go on to open hold the user row lock."""
    open_uploads = Upload.objects.filter(
        user=user,
        status__in=[Upload.Status.UPLOADING, Upload.Status.FINISHING, Upload.Status.VALIDATING],
    )
    count = open_uploads.count()
    limit = settings.UPLOAD_MAX_OPEN_PER_USER
    if count >= limit:
        return LimitRefusal(
            "open_uploads",
            limit,
            f"You have {count} unfinished upload(s), the limit of {limit}. Finish or cancel one "
            "of them first (see the submit page).",
            None,
        )
    announced = open_uploads.aggregate(total=Sum("size"))["total"] or 0
    most = settings.UPLOAD_MAX_OPEN_BYTES_PER_USER
    if announced + adding > most:
        return LimitRefusal(
            "open_upload_bytes",
            most,
            f"Your unfinished uploads announce {announced:,} bytes; with this one "
            f"({adding:,}) they would pass the limit of {most:,}. Finish or cancel one first.",
            None,
        )
    return None


@dataclass(frozen=True)
class ReportRow:
    message: str
    task: str | None
    file: str | None
    tasks: list[str]  # several tasks with the same message, shown as one row


def report_rows(problems: list[dict]) -> list[ReportRow]:
    """Problems ordered by task and file; a message repeated for many tasks (every missing task
    folder, say) becomes one row listing them."""
    by_message: dict[str, list[str]] = {}
    for problem in problems:
        if problem.get("task") and not problem.get("file"):
            by_message.setdefault(problem["message"], []).append(problem["task"])
    grouped = {m for m, tasks in by_message.items() if len(tasks) > GROUP_TASKS_OVER}
    rows = [ReportRow(m, None, None, sorted(by_message[m])) for m in sorted(grouped)]
    single = [
        p for p in problems if not (p.get("task") and not p.get("file") and p["message"] in grouped)
    ]
    single.sort(key=lambda p: (p.get("task") or "", p.get("file") or "", p["message"]))
    rows.extend(ReportRow(p["message"], p.get("task"), p.get("file"), []) for p in single)
    return rows
