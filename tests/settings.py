"""The project's settings for the test run. Tests run with DEBUG off, where config/settings.py
requires DJANGO_SECRET_KEY: this gives one that only tests ever use, unless the environment has
its own. Processes the tests start inherit it."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "floorboard-tests-only-not-a-secret")
# The development tools (config/devtools) are under test too, here and in the manage.py
# processes the tests start, which inherit the variable.
os.environ.setdefault("FLOORBOARD_DEV_TOOLS", "1")

from config.settings import *  # noqa: E402, F403

# The example plug-in (tests/toyplugin, the core tests' benchmark) is an app like every plug-in;
# a test registers it as a benchmark where it uses it (tests/conftest.py toybench).
if "tests.toyplugin" not in INSTALLED_APPS:  # noqa: F405 (installed already where registered)
    INSTALLED_APPS = [*INSTALLED_APPS, "tests.toyplugin"]  # noqa: F405

# Hashing strength is not under test: PBKDF2 would dominate every test that makes a user.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tests run their judges as local HTTP servers on loopback.
JUDGE_HOSTS = [*JUDGE_HOSTS, "127.0.0.1", "localhost", "::1"]  # noqa: F405

# Whole responses and board states in this process's memory, beside the default cache (one
# LOCATION: emptying either empties both), emptied before each test (tests/conftest.py). Tests change rows directly (QuerySet.update) and read a board at once:
# the state is read from the rows on every request here. tests/leaderboard/test_response_cache.py
# runs with the production default, where only the services' announcements make it change at once.
CACHES = {
    **CACHES,  # noqa: F405
    "responses": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "",
    },
}
BOARD_STATE_SECONDS = 0
