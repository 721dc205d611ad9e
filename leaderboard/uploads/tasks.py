from datetime import timedelta

from celery import shared_task
from django.conf import settings

from leaderboard.uploads.services import (
    multipart_uploads_sweep,
    upload_finish,
    upload_temp_files_sweep,
    uploads_expire,
)


@shared_task
def expire_abandoned_uploads(older_than_hours: float = 48.0) -> int:
    """Run daily by beat: frees the bytes of uploads nobody finished."""
    return uploads_expire(older_than=timedelta(hours=older_than_hours))


@shared_task
def sweep_upload_temp_files() -> int:
    """Run hourly by beat: deletes temporary upload files a killed request left behind."""
    return upload_temp_files_sweep(
        older_than=timedelta(seconds=settings.UPLOAD_TEMP_MAX_AGE_SECONDS)
    )


@shared_task(acks_late=True, ignore_result=True)
def sweep_incomplete_multipart_uploads() -> int:
    """Run by beat: aborts incomplete multipart uploads older than MULTIPART_ABORT_HOURS."""
    return len(multipart_uploads_sweep(older_than=timedelta(hours=settings.MULTIPART_ABORT_HOURS)))


# Idempotent by its claim (finishing -> validating), so a message delivered again is harmless.
@shared_task(acks_late=True, reject_on_worker_lost=True)
def finish_upload(upload_id: str) -> str | None:
    """Validate a browser upload and submit it (leaderboard.uploads.services.upload_finish)."""
    upload = upload_finish(upload_id=upload_id)
    return upload.status if upload is not None else None
