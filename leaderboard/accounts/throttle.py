"""Counting attempts per account and per client address in the shared cache: sign-ups, team
creations and failed logins. A count starts with the first attempt and lasts its window, so a
refused client waits until the window that it filled ends."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache


def client_address(request) -> str:
    """The proxy's X-Real-IP when FLOORBOARD_TRUST_X_REAL_IP (nginx sets it from the
    connection), else the connection's own address."""
    if settings.TRUST_X_REAL_IP and request.META.get("HTTP_X_REAL_IP"):
        return request.META["HTTP_X_REAL_IP"].strip()
    return request.META.get("REMOTE_ADDR", "")


def _key(scope: str, who: str) -> str:
    digest = hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"floorboard:attempts:{scope}:{digest}"


def attempts(*, scope: str, who: str) -> int:
    return cache.get(_key(scope, who), 0)


def attempt_record(*, scope: str, who: str, window_seconds: int) -> int:
    """Count one attempt; the count expires window_seconds after the first one."""
    key = _key(scope, who)
    cache.add(key, 0, timeout=window_seconds)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window_seconds)
        return 1
