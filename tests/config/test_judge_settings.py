"""The judge host and key settings as a fresh process reads them from its environment: the
defaults, what the operator adds, and values that fail loudly."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import django, json; django.setup(); from django.conf import settings; "
    "print(json.dumps({'hosts': settings.JUDGE_HOSTS, 'by_host': settings.JUDGE_API_KEY_BY_HOST,"
    " 'keys': settings.JUDGE_API_KEYS}))"
)
READ = (
    "FLOORBOARD_JUDGE_HOSTS",
    "FLOORBOARD_JUDGE_API_KEYS",
    "OPENAI_BASE_URL",
    "GEMINI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GATEWAY_KEY",
)


def read_settings(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in READ}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings", DJANGO_SECRET_KEY="test-only")
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_defaults_allow_the_providers_and_send_each_its_own_key():
    result = read_settings(OPENAI_API_KEY="sk-openai", OPENROUTER_API_KEY="sk-openrouter")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["hosts"] == [
        "api.anthropic.com",
        "api.openai.com",
        "generativelanguage.googleapis.com",
        "openrouter.ai",
    ]
    assert found["by_host"] == {
        "api.openai.com": "OPENAI_API_KEY",
        "openrouter.ai": "OPENROUTER_API_KEY",
        "generativelanguage.googleapis.com": "GEMINI_API_KEY",
        "api.anthropic.com": "ANTHROPIC_API_KEY",
    }
    assert found["keys"]["OPENAI_API_KEY"] == "sk-openai"
    assert found["keys"]["OPENROUTER_API_KEY"] == "sk-openrouter"


def test_a_providers_base_url_is_allowed_and_gets_its_key():
    result = read_settings(OPENAI_BASE_URL="https://gateway.example.com/v1")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert "gateway.example.com" in found["hosts"]
    assert found["by_host"]["gateway.example.com"] == "OPENAI_API_KEY"


def test_the_operator_adds_hosts_and_names_keys_for_them():
    result = read_settings(
        FLOORBOARD_JUDGE_HOSTS="api.openai.com, .internal.example",
        FLOORBOARD_JUDGE_API_KEYS="judge.internal.example=GATEWAY_KEY,openrouter.ai=",
        GATEWAY_KEY="gw-1",
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["hosts"] == ["api.openai.com", ".internal.example"]
    assert found["by_host"]["judge.internal.example"] == "GATEWAY_KEY"
    assert found["by_host"]["openrouter.ai"] == ""  # no key for it any more
    assert found["keys"]["GATEWAY_KEY"] == "gw-1"


def test_a_pair_without_an_equals_sign_fails_loudly():
    result = read_settings(FLOORBOARD_JUDGE_API_KEYS="gateway.example.com")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "'gateway.example.com' is not a key=value pair" in result.stderr


def test_a_value_that_names_no_variable_fails_loudly():
    result = read_settings(FLOORBOARD_JUDGE_API_KEYS="gateway.example.com=sk-live-123 456")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "gateway.example.com='sk-live-123 456' does not name an environment" in result.stderr


def test_a_url_given_for_a_host_fails_loudly():
    result = read_settings(FLOORBOARD_JUDGE_HOSTS="https://api.openai.com/v1")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "'https://api.openai.com/v1' is not a host name" in result.stderr


def test_a_host_with_a_port_fails_loudly():
    result = read_settings(FLOORBOARD_JUDGE_HOSTS="api.openai.com,judge.example.com:8443,::1")
    assert result.returncode != 0
    assert "'judge.example.com:8443' is not a host name" in result.stderr


def test_a_url_given_for_a_keys_host_fails_loudly():
    result = read_settings(FLOORBOARD_JUDGE_API_KEYS="https://gateway.example.com=OPENAI_API_KEY")
    assert result.returncode != 0
    assert "FLOORBOARD_JUDGE_API_KEYS: 'https://gateway.example.com' is not a host name" in (
        result.stderr
    )
