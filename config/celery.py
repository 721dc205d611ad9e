import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("floorboard")
# The namespace matters: without it CELERY_* settings (time limits, acks_late, visibility
# timeout) are silently ignored. tests/config/test_celery.py asserts the loaded values.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
