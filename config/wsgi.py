import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Request temp files are written in this process's container: it sweeps them itself.
from leaderboard.uploads.services import upload_temp_files_sweeper_start  # noqa: E402

upload_temp_files_sweeper_start()
