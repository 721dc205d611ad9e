"""Which address a request comes from, read the same way everywhere: the account throttles
(client_address) and the API's rate throttles agree, and neither takes an address the client
wrote itself. Behind docker/nginx.conf the proxy appends the address it was reached from to
X-Forwarded-For; without a trusted proxy the connection's own address is the only one."""

import pytest
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.throttling import AnonRateThrottle

from leaderboard.accounts.throttle import client_address

pytestmark = pytest.mark.django_db


def test_without_the_proxy_a_clients_forwarded_for_is_ignored():
    request = RequestFactory().get(
        "/api/benchmarks/", REMOTE_ADDR="198.51.100.20", HTTP_X_FORWARDED_FOR="6.6.6.6"
    )
    assert AnonRateThrottle().get_ident(request) == "198.51.100.20"
    assert client_address(request) == "198.51.100.20"


def test_behind_the_proxy_both_read_the_address_nginx_appended(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # What nginx sends: the client's own claim, then the peer's address it appended.
    request = RequestFactory().get(
        "/api/benchmarks/",
        REMOTE_ADDR="172.18.0.5",
        HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7",
    )
    assert AnonRateThrottle().get_ident(request) == "203.0.113.7"
    assert client_address(request) == "203.0.113.7"


def test_a_new_forwarded_for_on_each_request_does_not_escape_the_api_rate(client, monkeypatch):
    cache.clear()
    monkeypatch.setattr(AnonRateThrottle, "rate", "2/minute", raising=False)
    codes = [
        client.get(
            "/api/benchmarks/", REMOTE_ADDR="198.51.100.20", HTTP_X_FORWARDED_FOR=f"10.0.0.{i}"
        ).status_code
        for i in range(3)
    ]
    assert codes == [200, 200, 429]
    cache.clear()
