"""Celery tasks: thin wrappers that take ids and call one service each.

acks_late + reject_on_worker_lost: a message is acknowledged only after its service returned, so
a worker killed mid-task gets the message redelivered. Every service is safe to repeat: stages are
claimed with conditional updates, rows are upserted on natural keys and finished judgments are
never called again.
"""

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from evaluation import services


class SubmissionTask(Task):
    acks_late = True
    reject_on_worker_lost = True
    # A dropped database connection or a locked SQLite file is worth another try.
    autoretry_for = (OperationalError, InterfaceError)
    retry_backoff = 2
    retry_backoff_max = 60
    max_retries = 5

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        services.submission_fail(submission_id=args[0], error=f"{type(exc).__name__}: {exc}")


@shared_task(base=SubmissionTask)
def ingest_submission(submission_id: int) -> None:
    services.submission_ingest(submission_id=submission_id)


@shared_task(base=SubmissionTask)
def detect_submission(submission_id: int) -> None:
    services.submission_detect(submission_id=submission_id)


@shared_task(base=SubmissionTask)
def judge_submission(submission_id: int, judge_id: int) -> None:
    services.submission_judge(submission_id=submission_id, judge_id=judge_id)
