"""Storage settings read from the environment: the content policy lets browsers reach the
store's public address (http:// included when that is what is configured), links are signed
for it with SigV4 in the configured region, and every call carries the timeouts and retries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.core.files.storage import default_storage
found = {"csp": settings.CONTENT_SECURITY_POLICY}
if settings.AWS_STORAGE_BUCKET_NAME:
    config = default_storage.connection.meta.client.meta.config
    found |= {
        "url": default_storage.url("submissions/1/t/response.wav"),
        "connect": config.connect_timeout, "read": config.read_timeout,
        "retries": config.retries,
    }
print(json.dumps(found))
"""
S3 = {
    "AWS_STORAGE_BUCKET_NAME": "floorboard",
    "AWS_S3_ENDPOINT_URL": "http://s3:9000",
    "AWS_ACCESS_KEY_ID": "key",
    "AWS_SECRET_ACCESS_KEY": "secret",
}


def settings_of(**env: str) -> dict:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "FLOORBOARD_S3", "FLOORBOARD_STORAGE", "FLOORBOARD_CONTENT"))
    }
    clean.update(
        {"DJANGO_SECRET_KEY": "test", "FLOORBOARD_PRODUCTION": "1"},
        **env,
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def directive(policy: str, name: str) -> list[str]:
    for part in policy.split(";"):
        words = part.split()
        if words and words[0] == name:
            return words[1:]
    raise AssertionError(f"no {name} in {policy!r}")


def test_the_policy_allows_the_public_http_endpoint_and_links_go_there():
    found = settings_of(
        **S3,
        FLOORBOARD_S3_PUBLIC_ENDPOINT_URL="http://localhost:9000",
        AWS_S3_REGION_NAME="eu-west-3",
    )
    for name in ("connect-src", "media-src"):
        sources = directive(found["csp"], name)
        assert "http://localhost:9000" in sources
        assert "http://s3:9000" not in sources and "https:" not in sources
    link = urlsplit(found["url"])
    assert (link.scheme, link.netloc) == ("http", "localhost:9000")
    query = parse_qs(link.query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    # key/date/region/service/aws4_request
    assert query["X-Amz-Credential"][0].split("/")[2:] == ["eu-west-3", "s3", "aws4_request"]


def test_without_a_public_endpoint_the_endpoint_is_the_public_one():
    found = settings_of(**S3)
    assert "http://s3:9000" in directive(found["csp"], "connect-src")
    assert urlsplit(found["url"]).netloc == "s3:9000"
    assert (
        "/us-east-1/s3/aws4_request"
        in parse_qs(urlsplit(found["url"]).query)["X-Amz-Credential"][0]
    )


def test_on_aws_the_policy_names_aws_hosts_and_on_the_filesystem_only_this_site():
    aws = settings_of(AWS_STORAGE_BUCKET_NAME="floorboard", AWS_ACCESS_KEY_ID="k",
                      AWS_SECRET_ACCESS_KEY="s")  # fmt: skip
    assert directive(aws["csp"], "connect-src") == ["'self'", "https://*.amazonaws.com"]
    local = settings_of()
    assert directive(local["csp"], "connect-src") == ["'self'"]
    assert directive(local["csp"], "media-src") == ["'self'", "blob:"]


def test_the_policy_is_set_whole_from_the_environment():
    found = settings_of(**S3, FLOORBOARD_CONTENT_SECURITY_POLICY="default-src 'self' http://x:1")
    assert found["csp"] == "default-src 'self' http://x:1"
    assert settings_of(**S3, FLOORBOARD_CONTENT_SECURITY_POLICY="none")["csp"] == ""
    # Empty, as Compose passes a variable the host left unset: the default, built.
    empty = settings_of(**S3, FLOORBOARD_CONTENT_SECURITY_POLICY="")
    assert "http://s3:9000" in directive(empty["csp"], "media-src")


def test_every_call_carries_the_timeouts_and_bounded_retries():
    shipped = settings_of(**S3)
    assert (shipped["connect"], shipped["read"]) == (2.0, 5.0)
    assert shipped["retries"] == {"mode": "standard", "total_max_attempts": 3}
    tuned = settings_of(
        **S3,
        FLOORBOARD_STORAGE_CONNECT_TIMEOUT_SECONDS="1.5",
        FLOORBOARD_STORAGE_READ_TIMEOUT_SECONDS="7",
        FLOORBOARD_STORAGE_MAX_ATTEMPTS="5",
    )
    assert (tuned["connect"], tuned["read"], tuned["retries"]["total_max_attempts"]) == (1.5, 7, 5)


@pytest.mark.parametrize(
    "env",
    [
        {"FLOORBOARD_S3_PUBLIC_ENDPOINT_URL": "localhost:9000"},
        {"FLOORBOARD_S3_PUBLIC_ENDPOINT_URL": "http://localhost:9000/bucket"},
        {"AWS_S3_ENDPOINT_URL": "ftp://s3:9000"},
    ],
)
def test_an_endpoint_that_is_not_an_http_origin_is_refused(env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FLOORBOARD_S3"))}
    clean.update(S3, DJANGO_SECRET_KEY="t", DJANGO_SETTINGS_MODULE="config.settings")
    clean.update(env)
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT, env=clean, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    name = next(iter(env))
    assert f"{name}=" in result.stderr and "is not an http:// or https:// address" in result.stderr
