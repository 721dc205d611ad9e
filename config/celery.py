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
