"""Settings that fail loudly: without DEBUG, no process starts on the committed development key."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
)


def settings_in_a_subprocess(**env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG", "FLOORBOARD_PRODUCTION")
    }
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "env",
    [
        {},  # nothing said: DEBUG is off
        {"DJANGO_DEBUG": "0"},
        {"DJANGO_DEBUG": "0", "FLOORBOARD_PRODUCTION": "0"},
        {"DJANGO_DEBUG": "0", "FLOORBOARD_PRODUCTION": "1"},
        {"DJANGO_SECRET_KEY": ""},
    ],
)
def test_the_secret_key_is_required_whenever_debug_is_off(env):
    result = settings_in_a_subprocess(**env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off" in result.stderr


def test_a_key_from_the_environment_is_used():
    result = settings_in_a_subprocess(DJANGO_SECRET_KEY="from-the-environment")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from-the-environment"


def test_debug_alone_runs_on_the_development_key():
    """What `make demo` relies on: DJANGO_DEBUG=1 and nothing else."""
    result = settings_in_a_subprocess(DJANGO_DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "floorboard-local-development-only"


def test_make_runs_debug_or_gives_a_key_to_every_manage_command():
    """Every manage.py and celery command in the Makefile runs with DJANGO_DEBUG=1 or a key."""
    makefile = (ROOT / "Makefile").read_text()
    # Variables other than the key are expanded, as make does: `$(MANAGE) bench_scoring` is a
    # manage.py command too.
    assigned = dict(re.findall(r"^([A-Z_0-9]+) :?= (.*)$", makefile, flags=re.MULTILINE))
    assigned.pop("LOCAL_KEY")

    def expanded(line: str) -> str:
        before = None
        while line != before:
            before, line = (
                line,
                re.sub(r"\$\(([A-Z_0-9]+)\)", lambda name: assigned.get(name[1], name[0]), line),
            )
        return line

    commands = [
        line
        for line in map(expanded, makefile.splitlines())
        if line.startswith("\t") and ("manage.py" in line or "/celery " in line)
    ]
    assert any("bench_overhead" in line for line in commands)
    for line in commands:
        # Each manage.py or celery command on the line (a line may chain several).
        for command in re.split(r"&&|;;", line):
            if "manage.py" in command or "/celery " in command:
                assert "DJANGO_DEBUG=1" in command or "$(LOCAL_KEY)" in command, command
    assert 'LOCAL_KEY := DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-' in makefile


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"FLOORBOARD_TRUSTED_PROXY_COUNT": "-1"},
            "FLOORBOARD_TRUSTED_PROXY_COUNT='-1' is below 0, its smallest value",
        ),
        (
            {"FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_SECONDS": "0"},
            "FLOORBOARD_LOGIN_ACCOUNT_BACKOFF_SECONDS='0' is below 1, its smallest value",
        ),
        # A name no longer read must not be ignored in silence: it was meant to apply.
        (
            {"FLOORBOARD_TRUST_X_REAL_IP": "1"},
            "FLOORBOARD_TRUST_X_REAL_IP is no longer read: the client address comes from "
            "X-Forwarded-For, behind FLOORBOARD_TRUSTED_PROXY_COUNT proxies",
        ),
        (
            {"FLOORBOARD_LOGIN_MAX_FAILURES_PER_ACCOUNT": "10"},
            "FLOORBOARD_LOGIN_MAX_FAILURES_PER_ACCOUNT is no longer read",
        ),
    ],
)
def test_client_address_and_login_settings_refuse_what_cannot_work(env, said):
    result = settings_in_a_subprocess(DJANGO_SECRET_KEY="from-the-environment", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert said in result.stderr
