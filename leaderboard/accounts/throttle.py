"""Counting attempts per account and per client address in the shared cache: sign-ups, team
creations, failed logins and e-mails sent. A count starts with the first attempt and lasts its
window, so a refused client waits until the window that it filled ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
import unicodedata

from django.conf import settings
from django.core.cache import cache


def client_address(request) -> str:
    """The connection's address, or, behind FLOORBOARD_TRUSTED_PROXY_COUNT proxies that each
    append the address they were reached from to X-Forwarded-For, the entry the outermost of
    them appended. Entries further left are the client's own claims and never read. The API's
    throttles count by the same rule (REST_FRAMEWORK's NUM_PROXIES is the same setting)."""
    remote = request.META.get("REMOTE_ADDR", "")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    count = settings.TRUSTED_PROXY_COUNT
    if count <= 0 or not forwarded.strip():
        return remote
    entries = [entry.strip() for entry in forwarded.split(",")]
    # Fewer entries than proxies: the request skipped the outer ones, and the first entry is
    # the address the innermost proxy saw.
    return entries[-min(count, len(entries))] or remote


def login_account(username) -> str:
    """The account a login form's username names, for counting: NFKC-normalised as the login
    form normalises it before looking the user up, then case-folded, so every spelling that
    can log in as an account (fullwidth letters, another case) counts against the same one."""
    return unicodedata.normalize("NFKC", str(username or "").strip()).casefold()


def pair(*parts: str) -> str:
    """One counter's name for several values (an account and an address), unambiguously."""
    return json.dumps(parts)


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


def attempt_forget(*, scope: str, who: str) -> None:
    """Take back one counted attempt (one that was refused and did nothing)."""
    with contextlib.suppress(ValueError):  # expired meanwhile: nothing to take back
        cache.decr(_key(scope, who))


def turn_take(*, scope: str, who: str, every_seconds: int) -> bool:
    """True at most once every every_seconds for the same scope and who: the first caller takes
    the turn, the others are refused until it has passed."""
    return cache.add(_key(f"{scope}:turn", who), 1, timeout=every_seconds)
