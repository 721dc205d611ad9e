"""Celery tasks: thin wrappers that take ids and call one service each.

Each message is bounded work (FLOORBOARD_WORK_SECONDS at most; longer stages queue their own
continuation), acknowledged only after its service returned. Every service is safe to repeat:
stages are claimed with conditional updates, rows are upserted on natural keys, work is claimed
under leases, and settled judgments are never called again. The sweeper on beat re-queues what a
dead worker left (evaluation.services.pipeline).
"""

import gc
from datetime import timedelta

from celery import Task, shared_task
from celery.signals import worker_process_init, worker_ready, worker_shutdown
from django.conf import settings

from evaluation import services
from evaluation.judges import warm
from evaluation.services.pipeline import judge_run, slices_store, slices_sweep, step_run
from evaluation.services.submissions import unreferenced_objects_sweep
from evaluation.services.work import RETRIED, failing, failure_message
from evaluation.services.workers import WorkerBeating, worker_name

_beating: WorkerBeating | None = None


@worker_process_init.connect
def _worker_ready(**kwargs) -> None:
    # Loaded once here rather than by the first judging task, on its clock.
    warm()
    # What the process holds once started (Django, the apps, the plug-ins) is kept out of
    # garbage collection: each full collection scanned it again while a stage held thousands of
    # parsed documents (58 ms of detection's 320 ms on one 927-task submission, 7 ms after).
    gc.freeze()


@worker_ready.connect
def _worker_alive(sender, **kwargs) -> None:
    # In the worker's main process, once it consumes: its beats say so until it stops.
    global _beating
    queues = [queue.name for queue in sender.task_consumer.queues]
    _beating = WorkerBeating(worker=worker_name(sender.hostname), queues=queues).start()


@worker_shutdown.connect
def _worker_gone(**kwargs) -> None:
    if _beating is not None:
        _beating.stop()


class RetriedTask(Task):
    acks_late = True
    reject_on_worker_lost = True
    # A dropped database connection or a locked SQLite file is worth another try.
    autoretry_for = RETRIED
    retry_backoff = 2
    retry_backoff_max = 60
    max_retries = 5


class SubmissionTask(RetriedTask):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Retries ran out (a database that stayed away): the page says so in words.
        stage = self.name.rsplit(".", 1)[-1].replace("_", " ")
        services.submission_fail(submission_id=args[0], error=failure_message(stage, exc))


@shared_task(base=SubmissionTask)
def ingest_submission(submission_id: int) -> None:
    with failing(submission_id, "ingest"):
        services.submission_ingest(submission_id=submission_id)


@shared_task(base=SubmissionTask)
def run_step(submission_id: int, index: int) -> None:
    with failing(submission_id, "processing"):
        step_run(submission_id=submission_id, index=index)


@shared_task(base=SubmissionTask)
def judge_submission(submission_id: int, judge_id: int) -> None:
    with failing(submission_id, "judging"):
        services.submission_judge(submission_id=submission_id, judge_id=judge_id)


@shared_task(base=SubmissionTask)
def judge_work(submission_id: int, judge_id: int) -> None:
    with failing(submission_id, "judging"):
        judge_run(submission_id=submission_id, judge_id=judge_id)


@shared_task(base=SubmissionTask)
def finish_judging(submission_id: int, judge_id: int) -> None:
    with failing(submission_id, "aggregation"):
        services.judging_finish(submission_id=submission_id, judge_id=judge_id)


@shared_task(base=RetriedTask, ignore_result=True)
def store_slices(score_id: int) -> None:
    slices_store(score_id=score_id)


@shared_task(acks_late=True, ignore_result=True)
def sweep_stalled() -> None:
    services.submissions_sweep()
    slices_sweep()


@shared_task(acks_late=True, ignore_result=True)
def purge_failed_files() -> None:
    services.failed_files_purge()


@shared_task(acks_late=True, ignore_result=True)
def delete_pending_objects() -> None:
    """Queued when rows are deleted, and run by beat: deletes the objects they left marked."""
    services.pending_deletions_run()


@shared_task(acks_late=True, ignore_result=True)
def sweep_unreferenced_objects() -> None:
    """Run daily by beat: deletes stored objects no row names, once old enough."""
    unreferenced_objects_sweep(older_than=timedelta(hours=settings.UNREFERENCED_MIN_AGE_HOURS))
