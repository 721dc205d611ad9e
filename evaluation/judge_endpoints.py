"""Where judges may be called, and which API key each call carries.

A judge's calls go only to hosts the site's operator allows (JUDGE_HOSTS), and carry the API
key named for their host (JUDGE_API_KEY_BY_HOST), never a key meant for another host: a judge
staff point at any URL gets neither a call nor a key.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings


def endpoint_host(url: str) -> str:
    """The host a URL's calls go to, lower case ("" when it names none)."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:  # an unparseable address (a bad IPv6 literal, say) names no host
        return ""


def host_allowed(host: str, allowed: list[str]) -> bool:
    """Exactly one of ``allowed``, or under one written with a leading dot (".example.com"
    allows example.com and its subdomains)."""
    if not host:
        return False
    for pattern in allowed:
        if pattern.startswith("."):
            if host == pattern[1:] or host.endswith(pattern):
                return True
        elif host == pattern:
            return True
    return False


# Hosts whose traffic never leaves this machine: a key may go there over plain http.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def endpoint_refusal(url: str) -> str | None:
    """Why judges may not call this base URL, or None when they may."""
    try:
        scheme = urlsplit(url.strip()).scheme
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https"):
        return f"the judge base URL {url!r} is not an http:// or https:// address"
    host = endpoint_host(url)
    if not host:
        return f"the judge base URL {url!r} names no host"
    allowed = list(settings.JUDGE_HOSTS)
    if host_allowed(host, allowed):
        return None
    return (
        f"judges may not call {host} (base URL {url}): it is not one of the hosts this site "
        f"allows for judges ({', '.join(allowed) or 'none'}). The site's operator allows more "
        "with FLOORBOARD_JUDGE_HOSTS."
    )


def endpoint_api_key(url: str) -> str:
    """The API key calls to this base URL carry: the one named for its host, else none; never
    over plain http to another machine, where anyone on the way could read it."""
    try:
        scheme = urlsplit(url.strip()).scheme
    except ValueError:
        return ""
    if scheme != "https" and endpoint_host(url) not in LOOPBACK_HOSTS:
        return ""
    variable = settings.JUDGE_API_KEY_BY_HOST.get(endpoint_host(url), "")
    return settings.JUDGE_API_KEYS.get(variable, "") if variable else ""
