"""seed_demo makes a local demo only: it refuses to run with DEBUG off, and its staff account
never has a password anyone could know in advance."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

from evaluation.management.commands import seed_demo

pytestmark = pytest.mark.django_db


def test_it_refuses_to_run_with_debug_off(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="runs only with DEBUG on"):
        call_command("seed_demo", stdout=io.StringIO())
    from django.contrib.auth.models import User

    assert not User.objects.filter(username="demo").exists()


def _login(out: str) -> tuple[str, str]:
    [(user, password)] = re.findall(r"demo login: (\S+) / (\S+) ", out)
    return user, password


def test_the_demo_login_is_new_on_every_run_and_only_the_last_one_works(settings, monkeypatch):
    settings.DEBUG = True
    monkeypatch.setattr(seed_demo, "registry", dict)  # the account alone, no boards
    runs = []
    for _ in range(2):
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        runs.append(_login(out.getvalue()))
    (user, first), (_, second) = runs
    assert first != second and len(second) >= 16
    assert first != "floorboard-demo" != second
    assert authenticate(username=user, password=first) is None
    assert authenticate(username=user, password=second).is_staff


def test_seeding_the_demo_warns_of_nothing_in_its_own_data(settings, tmp_path, caplog):
    """Every plug-in's invented release and uploads are valid: seed_demo prints no warning and
    logs none (a warning there would teach a newcomer to ignore warnings)."""
    settings.DEBUG = True
    settings.VAR_DIR = tmp_path / "var"
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level("WARNING"):
        call_command("seed_demo", stdout=out, stderr=err)
    printed = out.getvalue() + err.getvalue()
    assert "queued" in printed  # every board was seeded
    assert [r.getMessage() for r in caplog.records if r.levelno >= 30] == []
    assert err.getvalue() == ""
    assert "warn" not in printed.replace(str(tmp_path), "").lower()
