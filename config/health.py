"""GET /healthz: can this process reach what it needs? The database, the Celery broker and the
default storage, each tried for real (a query, a broker connection, a small file written, read
back and deleted). 200 when all answer, 503 naming the ones that did not. The answer names
checks only: an error's text (which may hold a host or a key) goes to the log, not the client.

No request waits on storage for long: the probe runs in a thread beside the request, on a
client whose timeouts are HEALTH_STORAGE_TIMEOUT_SECONDS, and the request reports "failing" for
a probe that has not answered by then (a hung store never holds a web worker).

The endpoint answers anyone, so the storage probe (an object written and deleted: a request to
the bucket, billed) runs at most once per HEALTH_STORAGE_PROBE_SECONDS: the first request of an
interval claims the probe in the cache (shared by every process when it is Redis) and records
its outcome, which the other requests of the interval read.

Beside the checks, ``workers`` says whether a Celery worker has been seen on the task queue
within WORKER_SILENT_SECONDS. It never makes the answer 503: this is the web container's own
health check, and a missing worker must not take the web tier down with it.

Answered by HealthCheckMiddleware before host validation and the HTTPS redirect, so the
container's own healthcheck (plain HTTP to 127.0.0.1) reaches it whatever DJANGO_ALLOWED_HOSTS
and FLOORBOARD_SSL_REDIRECT say.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import DatabaseError, connection
from django.http import HttpResponseNotAllowed, JsonResponse
from django.utils.cache import add_never_cache_headers

from config.celery import app as celery_app
from config.storage import client_config
from evaluation.selectors import workers_silent
from evaluation.stored import storage_is_s3

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
    with celery_app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
        # The task queue's length, read as a worker would: a ping and LLEN on Redis, a listing
        # of the queue folder on the filesystem broker.
        broker.default_channel.queue_declare(queue=celery_app.conf.task_default_queue)


# The outcome of the last storage probe ("ok" or "failing"), and the claim on the next one.
STORAGE_STATE_KEY = "floorboard:health:storage:state"
STORAGE_CLAIM_KEY = "floorboard:health:storage:claim"


_probe_clients: dict[tuple, object] = {}
_probe_clients_lock = threading.Lock()


def _probe_client(storage):
    """The probe's S3 client, made once per process and storage (making one costs more CPU
    than the probe itself, and would hold up the request waiting beside it)."""
    timeout = settings.HEALTH_STORAGE_TIMEOUT_SECONDS
    identity = (storage.endpoint_url, storage.region_name, storage.access_key, timeout)
    with _probe_clients_lock:
        client = _probe_clients.get(identity)
        if client is None:
            client = _probe_clients[identity] = storage._create_session().client(
                "s3",
                region_name=storage.region_name,
                endpoint_url=storage.endpoint_url,
                config=client_config(connect_timeout=timeout, read_timeout=timeout, max_attempts=1),
                verify=storage.verify,
            )
    return client


def storage_probe() -> None:
    """Write a small object, read it back, delete it. On S3 through a client of its own whose
    connect and read timeouts are HEALTH_STORAGE_TIMEOUT_SECONDS and that never retries, so a
    hung store ends the probe within a few of those."""
    storage = storages["default"]
    name = f"healthz/{uuid.uuid4().hex}.txt"
    if storage_is_s3():
        client = _probe_client(storage)
        key = storage._normalize_name(name)
        client.put_object(Bucket=storage.bucket_name, Key=key, Body=PROBE)
        try:
            read = client.get_object(Bucket=storage.bucket_name, Key=key)["Body"].read()
            if read != PROBE:
                raise RuntimeError("the probe read back differs from what was written")
        finally:
            client.delete_object(Bucket=storage.bucket_name, Key=key)
        return
    name = storage.save(name, ContentFile(PROBE))
    try:
        with storage.open(name, "rb") as handle:
            if handle.read() != PROBE:
                raise RuntimeError("the probe read back differs from what was written")
    finally:
        storage.delete(name)


class _Probe:
    """One storage probe running in a thread of its own: the request that started it waits
    HEALTH_STORAGE_TIMEOUT_SECONDS at most, and the probe records its outcome when it ends."""

    def __init__(self, *, record: bool):
        self.outcome: str | None = None
        self.done = threading.Event()
        self._record = record
        threading.Thread(target=self._run, name="healthz-storage-probe", daemon=True).start()

    def _run(self) -> None:
        try:
            storage_probe()
            self.outcome = "ok"
        except Exception:
            logger.exception("health check: the storage probe failed")
            self.outcome = "failing"
        self.done.set()
        if self._record:
            try:
                cache.set(STORAGE_STATE_KEY, self.outcome, timeout=None)
            except Exception:
                logger.exception("health check: could not record the storage probe's outcome")

    def wait(self) -> str:
        self.done.wait(settings.HEALTH_STORAGE_TIMEOUT_SECONDS)
        return self.outcome or "no answer in time"


def storage_check() -> None:
    """The storage probe's outcome, probed by the first request of each interval. No request
    waits on storage longer than HEALTH_STORAGE_TIMEOUT_SECONDS: the probe runs beside it, and
    one still running then counts as failing (and records its outcome when it ends)."""
    interval = settings.HEALTH_STORAGE_PROBE_SECONDS
    try:
        claimed = cache.add(STORAGE_CLAIM_KEY, True, timeout=interval)
    except Exception:
        # No cache to share the outcome through: probe, as a check with no cache must.
        logger.exception("health check: the cache did not answer; probing the storage")
        state = _Probe(record=False).wait()
    else:
        if claimed:
            probe = _Probe(record=True)
            state = probe.wait()
            if not probe.done.is_set():
                # Until the probe ends, the other requests of the interval hear this.
                cache.set(STORAGE_STATE_KEY, "no answer in time", timeout=None)
                if probe.done.is_set():
                    cache.set(STORAGE_STATE_KEY, probe.outcome, timeout=None)
        else:
            # Another request's probe: its outcome (the first one's is waited for as long).
            deadline = time.monotonic() + settings.HEALTH_STORAGE_TIMEOUT_SECONDS
            while (state := cache.get(STORAGE_STATE_KEY)) is None and time.monotonic() < deadline:
                time.sleep(0.02)
    if state != "ok":
        raise RuntimeError(f"the storage probe of this interval: {state or 'no outcome yet'}")


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
