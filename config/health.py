"""GET /healthz: can this process reach what it needs? The database, the Celery broker and the
default storage, each tried for real (a query, a broker connection, a small file written, read
back and deleted). 200 when all answer, 503 naming the ones that did not. The answer names
checks only: an error's text (which may hold a host or a key) goes to the log, not the client.

Beside the checks, ``workers`` says whether a Celery worker has been seen on the task queue
within WORKER_SILENT_SECONDS. It never makes the answer 503: this is the web container's own
health check, and a missing worker must not take the web tier down with it.

Answered by HealthCheckMiddleware before host validation and the HTTPS redirect, so the
container's own healthcheck (plain HTTP to 127.0.0.1) reaches it whatever DJANGO_ALLOWED_HOSTS
and FLOORBOARD_SSL_REDIRECT say.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import DatabaseError, connection
from django.http import HttpResponseNotAllowed, JsonResponse
from django.utils.cache import add_never_cache_headers

from evaluation.selectors import workers_silent

logger = logging.getLogger(__name__)

PATH = "/healthz"
BROKER_TIMEOUT_SECONDS = 3.0
PROBE = b"floorboard health probe"


def database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        if cursor.fetchone() != (1,):
            raise RuntimeError("SELECT 1 did not answer 1")


def broker_check() -> None:
    from config.celery import app

    with app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
        # The task queue's length, read as a worker would: a ping and LLEN on Redis, a listing
        # of the queue folder on the filesystem broker.
        broker.default_channel.queue_declare(queue=app.conf.task_default_queue)


def storage_check() -> None:
    storage = storages["default"]
    name = storage.save(f"healthz/{uuid.uuid4().hex}.txt", ContentFile(PROBE))
    try:
        with storage.open(name, "rb") as handle:
            if handle.read() != PROBE:
                raise RuntimeError("the probe read back differs from what was written")
    finally:
        storage.delete(name)


def workers_state() -> str:
    """ "running", "silent" (seen, but not within WORKER_SILENT_SECONDS), "none" (never seen,
    or not for a day) or "unknown" (the database did not say)."""
    try:
        silent = workers_silent()
    except DatabaseError:
        logger.exception("health check of the workers failed")
        return "unknown"
    if silent is None:
        return "running"
    return "none" if silent["seen_at"] is None else "silent"


CHECKS: dict[str, Callable[[], None]] = {
    "database": database_check,
    "broker": broker_check,
    "storage": storage_check,
}


def health(request) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    checks = {}
    for name, check in CHECKS.items():
        try:
            check()
            checks[name] = "ok"
        except Exception:
            logger.exception("health check %s failed", name)
            checks[name] = "failing"
    failing = [name for name, state in checks.items() if state != "ok"]
    response = JsonResponse(
        {
            "status": "failing" if failing else "ok",
            "checks": checks,
            "failing": failing,
            # A database that did not answer is not asked again.
            "workers": workers_state() if checks["database"] == "ok" else "unknown",
        },
        status=503 if failing else 200,
    )
    add_never_cache_headers(response)
    return response


class HealthCheckMiddleware:
    """First in MIDDLEWARE: /healthz is answered here, before anything reads the Host header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.rstrip("/") == PATH:
            return health(request)
        return self.get_response(request)
