"""Celery tasks: thin wrappers that take ids and call one service each.

Each message is bounded work (FLOORBOARD_WORK_SECONDS at most; longer stages queue their own
continuation), acknowledged only after its service returned. Every service is safe to repeat:
stages are claimed with conditional updates, rows are upserted on natural keys, work is claimed
under leases, and settled judgments are never called again. The sweeper on beat re-queues what a
dead worker left (evaluation.services.pipeline).
"""

import logging

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from evaluation import services

logger = logging.getLogger(__name__)


class SubmissionTask(Task):
    acks_late = True
    reject_on_worker_lost = True
    # A dropped database connection or a locked SQLite file is worth another try.
    autoretry_for = (OperationalError, InterfaceError)
    retry_backoff = 2
    retry_backoff_max = 60
    max_retries = 5

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # The full error goes to the log; the submission's page says what failed in words.
        logger.error("submission %s: %s failed: %r", args[0], self.name, exc)
        stage = self.name.rsplit(".", 1)[-1].replace("_", " ")
        services.submission_fail(
            submission_id=args[0],
            error=f"{stage} failed ({type(exc).__name__}); staff can see the details in the "
            "worker log. Retry once the cause is fixed.",
        )


@shared_task(base=SubmissionTask)
def ingest_submission(submission_id: int) -> None:
    services.submission_ingest(submission_id=submission_id)


@shared_task(base=SubmissionTask)
def run_step(submission_id: int, index: int) -> None:
    from evaluation.services.pipeline import step_run

    step_run(submission_id=submission_id, index=index)


@shared_task(base=SubmissionTask)
def judge_submission(submission_id: int, judge_id: int) -> None:
    services.submission_judge(submission_id=submission_id, judge_id=judge_id)


@shared_task(base=SubmissionTask)
def judge_work(submission_id: int, judge_id: int) -> None:
    from evaluation.services.pipeline import judge_run

    judge_run(submission_id=submission_id, judge_id=judge_id)


@shared_task(base=SubmissionTask)
def finish_judging(submission_id: int, judge_id: int) -> None:
    services.judging_finish(submission_id=submission_id, judge_id=judge_id)


@shared_task(acks_late=True, ignore_result=True)
def sweep_stalled() -> None:
    services.submissions_sweep()
