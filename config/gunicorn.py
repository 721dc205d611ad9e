"""gunicorn's settings, read by the image's command (docker/Dockerfile: ``-c
python:config.gunicorn``) and by bench_load: sync workers, as many as WEB_CONCURRENCY says, else
two per core the process may run on, plus one. A page stored for readers without a session costs
well under a millisecond of Python, so a worker mostly waits on its socket and the cache; a
computed page holds its worker, and the spare ones keep the site answering meanwhile."""

import os


def default_workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1) + 1


def workers_from(environ) -> int:
    raw = environ.get("WEB_CONCURRENCY", "").strip()
    if not raw:
        return default_workers()
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"WEB_CONCURRENCY={raw!r} is not a number of workers (1 or more)")
    return int(raw)


workers = workers_from(os.environ)
