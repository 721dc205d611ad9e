"""How a pipeline stage runs on a worker: queued after its transaction commits (or at once, in
this process, in an inline() block), claimed with a conditional update, kept alive by a heartbeat
that renews its leases, and, when it raises, the submission marked failed or waiting on storage.
The stages themselves are in pipeline.py and judging.py."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from evaluation.board_state import board_changed
from evaluation.models import Submission
from evaluation.stored import storage_refusal, storage_unavailable

logger = logging.getLogger(__name__)

S = Submission.Status
ACTIVE = (S.QUEUED, S.INGESTING, S.DETECTING, S.JUDGING, S.AGGREGATING)


_local = threading.local()


@contextmanager
def inline():
    """Run every stage this block queues in this process, at once, instead of on a worker: the
    demo's seeding and tests that want a scored submission without a worker."""
    previous = getattr(_local, "inline", False)
    _local.inline = True
    try:
        yield
    finally:
        _local.inline = previous


def runs_inline() -> bool:
    """Whether this code runs in an inline() block."""
    return getattr(_local, "inline", False)


def after_commit(callback: Callable[[], None]) -> None:
    """Run after the surrounding transaction commits (at once outside one, and at once in an
    inline() block, where everything runs in this process and this transaction)."""
    if runs_inline():
        callback()
    else:
        transaction.on_commit(callback)


def enqueue_on_commit(task_name: str, *args) -> None:
    """Queue a Celery task of evaluation.tasks after the surrounding transaction commits (see
    after_commit). The task is found by name in the Celery app's registry, so that the services
    need not import the tasks module, which calls them; every process registers the tasks at
    start (EvaluationConfig.ready)."""
    name = f"evaluation.tasks.{task_name}"
    try:
        task = current_app.tasks[name]
    except KeyError:
        raise LookupError(f"no Celery task {name} is registered") from None
    if runs_inline():
        task.apply(args=args, throw=True)
        return

    def send():
        try:
            task.delay(*args)
        except KombuOperationalError:
            # The broker is away: what is stored stays, and the sweeper queues it once it is
            # back (a submission no worker has touched).
            logger.warning("could not queue %s%r: broker unreachable", task_name, args)

    transaction.on_commit(send)


def stale_before() -> timezone.datetime:
    """Work whose heartbeat is older than this has no live worker."""
    return timezone.now() - timedelta(seconds=settings.PIPELINE_STALL_SECONDS)


def stage_claim(submission_id: int, *, from_statuses, to_status: str) -> bool:
    """Move a submission into a stage. A message delivered twice finds it already there: it
    goes on only when no live worker is on it (its heartbeat went quiet)."""
    claimed = bool(
        Submission.objects.filter(pk=submission_id)
        .filter(
            Q(status__in=from_statuses)
            | Q(status=to_status)
            & (Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale_before()))
        )
        .update(status=to_status, heartbeat_at=timezone.now())
    )
    if claimed:
        board_changed(submission_id=submission_id)  # the board marks a row being re-scored
    return claimed


def touch(submission_id: int) -> None:
    Submission.objects.filter(pk=submission_id).update(heartbeat_at=timezone.now())


@contextmanager
def heartbeat(submission_id: int, renew: Callable[[], None] | None = None):
    """While the block runs, a thread marks the submission alive and renews this worker's
    leases every quarter of a lease, so that only a dead worker's work is taken over."""
    stop = threading.Event()
    interval = max(0.5, settings.JUDGE_LEASE_SECONDS / 4)

    def beat():
        try:
            while not stop.wait(interval):
                try:
                    touch(submission_id)
                    if renew is not None:
                        renew()
                except Exception:  # the next beat tries again; a lapsed lease is recoverable
                    logger.exception("heartbeat failed")
        finally:
            connection.close()

    touch(submission_id)
    thread = threading.Thread(target=beat, name=f"heartbeat-{submission_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


# A dropped database connection or a locked SQLite file is worth another try (by Celery).
RETRIED = (OperationalError, InterfaceError)


def failure_message(stage: str, exc: BaseException) -> str:
    """What the submission's page says: the stage and the kind of error, never its text (which
    can carry paths, SQL or data); the details go to the worker's log. A permanent storage
    error (a missing object, access denied) is named as such."""
    refusal = storage_refusal(exc)
    if refusal:
        return (
            f"{stage} failed: {refusal} ({type(exc).__name__}); staff can see which in the "
            "worker log. Retry once the cause is fixed: what was stored is kept."
        )
    return (
        f"{stage} failed ({type(exc).__name__}); staff can see the details in the worker log. "
        "Retry once the cause is fixed: what was stored is kept."
    )


@contextmanager
def failing(submission_id: int, stage: str):
    """A stage that raises leaves its submission FAILED with a message for people, whether it
    runs on a worker or in this process (inline, eager). Except when storage did not answer
    (after each call's own retries with back-off): then the submission is marked as waiting
    on storage, not failed, and the sweeper re-queues it once its heartbeat is quiet, until
    storage answers and the stage goes through (which clears a mark set before it began; a
    stage it ran inline may have set one since)."""
    began = timezone.now()
    try:
        yield
    except RETRIED:
        raise  # retried by Celery; the submission stays where it was
    except Exception as exc:
        if storage_unavailable(exc):
            logger.warning(
                "submission %s: %s is waiting on storage (%s)",
                submission_id,
                stage,
                type(exc).__name__,
                exc_info=True,
            )
            Submission.objects.filter(
                pk=submission_id, status__in=ACTIVE, storage_waiting_since__isnull=True
            ).update(storage_waiting_since=timezone.now())
            return
        logger.exception("submission %s: %s failed", submission_id, stage)
        submission_fail(submission_id=submission_id, error=failure_message(stage, exc))
        raise
    else:
        Submission.objects.filter(pk=submission_id, storage_waiting_since__lt=began).update(
            storage_waiting_since=None
        )


def submission_fail(*, submission_id: int, error: str) -> None:
    """Record why a submission failed. The error is shown to its owner: callers pass a message
    meant for people, never raw exception text."""
    # The first failure is the one to tell (a stage run inline fails its callers too).
    Submission.objects.filter(pk=submission_id).exclude(status__in=(S.SCORED, S.FAILED)).update(
        status=S.FAILED, error=error[:5000], finished_at=timezone.now()
    )
    board_changed(submission_id=submission_id)
