"""Reads for uploads: who may see an upload, how many a user may have open, the report's shape.
A team's and an account's submission limits are evaluation.selectors'."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import QuerySet, Sum

from evaluation.models import Team
from evaluation.selectors import LimitRefusal
from leaderboard.uploads.models import Upload

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
