from datetime import timedelta

from celery import shared_task

from leaderboard.uploads.services import uploads_expire


@shared_task
def expire_abandoned_uploads(older_than_hours: float = 48.0) -> int:
    """Run daily by beat: frees the bytes of uploads nobody finished."""
    return uploads_expire(older_than=timedelta(hours=older_than_hours))
