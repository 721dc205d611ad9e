"""Workers say they are alive: every WORKER_BEAT_SECONDS a running worker writes, per queue it
consumes, when it was last seen (WorkerBeat). A worker that stops cleanly removes its rows; one
that dies stops writing them, and after WORKER_SILENT_SECONDS readers treat it as gone."""

from __future__ import annotations

import logging
import os
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from evaluation.models import WorkerBeat

logger = logging.getLogger(__name__)

# Rows of workers silent this long are deleted by the next beat of any worker.
FORGET_AFTER = timedelta(days=1)


def worker_name(hostname: str) -> str:
    """Celery's name for a worker, with its pid: two workers named alike stay apart."""
    return f"{hostname}:{os.getpid()}"


def worker_beat_record(*, worker: str, queues: list[str], started_at) -> None:
    """This worker is alive now, on each of ``queues``."""
    now = timezone.now()
    WorkerBeat.objects.bulk_create(
        [
            WorkerBeat(worker=worker, queue=queue, started_at=started_at, seen_at=now)
            for queue in queues
        ],
        update_conflicts=True,
        unique_fields=["worker", "queue"],
        update_fields=["seen_at"],
    )
    WorkerBeat.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()


def worker_beat_remove(*, worker: str) -> None:
    WorkerBeat.objects.filter(worker=worker).delete()


class WorkerBeating:
    """The thread that writes a worker's beats until ``stop()``."""

    def __init__(self, *, worker: str, queues: list[str]):
        self.worker, self.queues = worker, sorted(set(queues))
        self.started_at = timezone.now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-beat", daemon=True)

    def start(self) -> WorkerBeating:
        self._beat()  # seen at once, not one interval after start-up
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            worker_beat_remove(worker=self.worker)
        except DatabaseError:
            logger.warning("could not remove worker %s's beats", self.worker, exc_info=True)
        finally:
            connection.close()

    def _beat(self) -> None:
        try:
            close_old_connections()
            worker_beat_record(worker=self.worker, queues=self.queues, started_at=self.started_at)
        except DatabaseError:
            # A database that is away for a moment: the next beat tries again.
            logger.warning("worker beat not recorded", exc_info=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(settings.WORKER_BEAT_SECONDS):
                self._beat()
        finally:
            connection.close()
