"""Where `make demo` is reached: served on PORT=8101 its e-mails link to port 8101; served on
every interface (HOST=0.0.0.0) it answers other machines that name this one, and its links and
printed invite links name this machine's address, never 0.0.0.0. Settings the environment gives
(FLOORBOARD_SITE_URL, DJANGO_ALLOWED_HOSTS) are kept."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.http.request import validate_host

from evaluation.demo_site import demo_environment, reachable_url
from tests.conftest import REPO, embedded_env
from tests.evaluation.test_worker_liveness import read_until, start_demo

# A port of this test's own for the server it starts.
DEMO_PORT = 8847


def this_machines_address() -> str:
    """The address other machines reach this one by, found as the kernel routes a datagram."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        return probe.getsockname()[0]


def settings_in_a_process(env: dict, var: Path, expression: str) -> str:
    """``expression`` evaluated where Django's settings load from ``env`` (a fresh process)."""
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=embedded_env(var, DJANGO_SETTINGS_MODULE="config.settings", DJANGO_DEBUG="1", **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def status_when_up(url: str, *, seconds: float) -> int:
    """The HTTP status of ``url`` once something listens there (an error status included)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as refused:
            return refused.code
        except urllib.error.URLError:
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            time.sleep(0.2)


def test_on_port_8101_the_demos_mail_links_to_port_8101(tmp_path):
    env = demo_environment("127.0.0.1:8101", {})
    assert env["FLOORBOARD_SITE_URL"] == "http://127.0.0.1:8101"
    # The worker's notices read the setting through mail.site_url.
    link = settings_in_a_process(
        env,
        tmp_path,
        "__import__('leaderboard.accounts.mail', fromlist=['x']).site_url('/submissions/7/')",
    )
    assert link == "http://127.0.0.1:8101/submissions/7/"


def test_on_every_interface_the_demo_accepts_and_links_this_machines_address():
    address = this_machines_address()
    env = demo_environment("0.0.0.0:8000", {})
    assert env["FLOORBOARD_SITE_URL"] == f"http://{address}:8000"
    allowed = env["DJANGO_ALLOWED_HOSTS"].split(",")
    for host in (address, socket.gethostname(), "127.0.0.1", "localhost"):
        assert validate_host(host, allowed), host
    assert not validate_host("attacker.example", allowed)
    assert reachable_url("http://0.0.0.0:8000") == f"http://{address}:8000"
    assert reachable_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"


def test_what_the_environment_sets_is_kept():
    given = {"FLOORBOARD_SITE_URL": "https://demo.example", "DJANGO_ALLOWED_HOSTS": "demo.example"}
    assert demo_environment("0.0.0.0:8000", given) == {}


@pytest.mark.services
def test_a_demo_on_every_interface_answers_by_this_machines_address(tmp_path):
    address = this_machines_address()
    demo = start_demo(tmp_path / "var", f"0.0.0.0:{DEMO_PORT}")
    lines: list[str] = []
    try:
        read_until(demo.stdout, rf"Floorboard demo on http://{address}:{DEMO_PORT}/ ", 30, lines)
        worker = int(read_until(demo.stdout, r"worker started \(pid (\d+)\)", 30, lines).group(1))
        environ = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
        assert f"FLOORBOARD_SITE_URL=http://{address}:{DEMO_PORT}".encode() in environ
        # Asked by this machine's address, as another machine would: not HTTP 400.
        assert status_when_up(f"http://{address}:{DEMO_PORT}/", seconds=30) == 200, "".join(lines)
        demo.send_signal(signal.SIGINT)
        assert demo.wait(30) == 0
    finally:
        if demo.poll() is None:
            demo.kill()
