import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

# filesystem:// URLs, wherever they come from, get the project's safe filesystem transport
# (config/broker.py says why).
TRANSPORT_ALIASES["filesystem"] = "config.broker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("floorboard")
# The namespace matters: without it CELERY_* settings (time limits, acks_late, visibility
# timeout) are silently ignored. tests/config/test_celery.py asserts the loaded values.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_queues() -> list[str]:
    """Every queue a task is sent to, the default first: what a worker that runs all of
    Floorboard's work consumes (``celery worker -Q``, comma-separated)."""
    routed = [route["queue"] for route in (app.conf.task_routes or {}).values()]
    return list(dict.fromkeys([app.conf.task_default_queue, *routed]))
