"""Whole responses of the public pages for readers without a session, from the shared response
cache, and validators (ETag, Last-Modified) so that a returning reader gets a 304.

A view opts in with ``@reader_cached(scope)`` (see there). For a GET without a session cookie,
a messages cookie or an Authorization header, the response is what an anonymous visitor sees,
so it is kept under a key made of everything else that changes it: the address (scheme, host,
path, query string in a canonical order), whether it is compressed, the Accept header (the API
answers a browser with HTML), and the board state (evaluation/board_state.py), which changes
with any score, publication, withdrawal, moderation or anonymity switch. Signed-in readers never
get a stored response (their header is their own, and they may see private rows): their page is
computed, around a table cached per viewer class (leaderboard/selectors.py board_cache_key).

The middleware sits outside the compression middleware, so a stored response is stored
compressed and served without running any view, template or query. A state read just before a
change commits may be kept for up to FLOORBOARD_BOARD_STATE_SECONDS, as may one the change was
not announced to (board_changed): that is the longest a reader waits for a change. A page with
signed URLs in it (a task's audio) is kept at most half their lifetime (signed_page_seconds).
"""

from __future__ import annotations

import hashlib
import math
import re
from functools import lru_cache
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import caches
from django.http import HttpResponse
from django.urls import Resolver404, resolve
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.http import http_date
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from evaluation.board_state import RESPONSE_CACHE, board_state, site_state
from evaluation.models import Submission

ACCEPTS_GZIP = re.compile(r"\bgzip\b")
SCOPES = ("board", "site", "submission")


def reader_cached(scope: str, *, rate_limited: bool = False, signed_urls: bool = False):
    """Mark a view whose anonymous GET responses may be served from the response cache: its
    pages change with one benchmark's board state (``board``, found from the view's ``slug``;
    ``submission``, from its ``pk``) or with every board's (``site``). A response the view
    marks ``reader_storable = False`` (a submission still being scored, whose progress the
    board state does not follow) is served but not stored. ``rate_limited``: a stored copy is
    served within the API's per-client rates too, as the view itself is. ``signed_urls``: the
    page embeds links that expire (audio), so a copy is kept only signed_page_seconds()."""
    if scope not in SCOPES:
        raise ValueError(f"reader_cached: unknown scope {scope!r}; one of {', '.join(SCOPES)}")

    def mark(view):
        view.reader_cache = scope
        view.reader_rate_limited = rate_limited
        view.reader_signed_urls = signed_urls
        return view

    return mark


def signed_page_seconds() -> int:
    """How long a page embedding signed URLs may be kept: half their lifetime, so that a stored
    copy's links still work for at least SIGNED_URL_SECONDS/2 when it is served."""
    return min(settings.RESPONSE_CACHE_SECONDS, settings.SIGNED_URL_SECONDS // 2)


def reader_without_session(request) -> bool:
    """Whether the request can only be an anonymous visitor's: no session (so no signed-in
    user and no flash messages kept in it), no messages cookie, no API token."""
    return not (
        settings.SESSION_COOKIE_NAME in request.COOKIES
        or "messages" in request.COOKIES
        or "HTTP_AUTHORIZATION" in request.META
    )


def _scope(request):
    if request.method != "GET":
        return None
    return _scope_of_path(request.path_info)


@lru_cache(maxsize=4096)
def _scope_of_path(path: str):
    """(scope, the view's arguments) for a path whose view is reader-cached, else None.
    Remembered: resolving is a third of what serving a stored page costs."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    scope = getattr(match.func, "reader_cache", None)
    if scope is None:
        return None
    func = match.func
    return scope, match.kwargs, func.reader_rate_limited, func.reader_signed_urls


def api_rate_refusal(request) -> HttpResponse | None:
    """A 429 with Retry-After when the client is past the API's rates (anonymous readers by
    address, signed-in ones by account), else None."""
    for throttle in (AnonRateThrottle(), UserRateThrottle()):
        if not throttle.allow_request(request, None):
            wait = max(1, math.ceil(throttle.wait() or 1))
            response = HttpResponse(
                f"Too many requests; try again in {wait} s.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(wait)
            return response
    return None


def response_key(request, token: str) -> str:
    query = urlencode(sorted(request.GET.lists()), doseq=True)
    gzip = bool(ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))
    # Accept chooses the API's rendering (JSON, or the browsable API's HTML).
    accept = request.META.get("HTTP_ACCEPT", "")
    parts = [request.scheme, request.get_host(), request.path, query, str(gzip), accept, token]
    return "response-v1:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _submission_board(pk) -> str:
    """The slug of the submission's benchmark (never changes), remembered in the cache."""
    cache = caches[RESPONSE_CACHE]
    key = f"submission-board-v1:{pk}"
    slug = cache.get(key)
    if slug is None:
        slug = (
            Submission.objects.filter(pk=pk).values_list("benchmark__slug", flat=True).first() or ""
        )
        if slug:
            cache.set(key, slug, None)
    return slug


def _state(kind: str, kwargs: dict):
    if kind == "site":
        return site_state()
    slug = kwargs.get("slug", "") if kind == "board" else _submission_board(kwargs.get("pk"))
    return board_state(slug=slug) if slug else None


def _etag(content: bytes) -> str:
    return f'"{hashlib.md5(content, usedforsecurity=False).hexdigest()}"'


def _storable(response) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and "private" not in response.get("Cache-Control", "")
        and "no-store" not in response.get("Cache-Control", "")
        and getattr(response, "reader_storable", True)
    )


class ReaderCacheMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        scope = _scope(request)
        if scope is None:
            return self.get_response(request)
        kind, kwargs, rate_limited, signed_urls = scope
        if not reader_without_session(request):
            return self._personal(request, self.get_response(request))
        state = _state(kind, kwargs)
        if state is None:  # no such benchmark or submission: the view answers
            return self.get_response(request)
        cache = caches[RESPONSE_CACHE]
        key = response_key(request, state.token)
        stored = cache.get(key) if settings.RESPONSE_CACHE else None
        if stored is not None:
            if rate_limited:
                request.user = AnonymousUser()  # what the session would say: none is sent
                refusal = api_rate_refusal(request)
                if refusal is not None:
                    return refusal
            status, content, headers = stored
            response = HttpResponse(content, status=status)
            for name, value in headers:
                response[name] = value
        else:
            response = self.get_response(request)
            if not _storable(response):
                return response
            response["ETag"] = _etag(response.content)
            response["Last-Modified"] = http_date(state.modified)
            patch_cache_control(response, public=True, max_age=0, must_revalidate=True)
            patch_vary_headers(response, ("Cookie", "Authorization"))
            seconds = signed_page_seconds() if signed_urls else settings.RESPONSE_CACHE_SECONDS
            if proxy_seconds := min(settings.PROXY_CACHE_SECONDS, seconds):
                # For docker/nginx.conf's micro-cache; nginx keeps the header to itself.
                response["X-Accel-Expires"] = str(proxy_seconds)
            if settings.RESPONSE_CACHE and seconds > 0:
                stored = (response.status_code, response.content, list(response.items()))
                cache.set(key, stored, seconds)
        return get_conditional_response(
            request,
            etag=response["ETag"],
            last_modified=int(state.modified),
            response=response,
        )

    def _personal(self, request, response):
        """A signed-in reader's page: never stored, validated by its own content."""
        if response.status_code != 200 or response.streaming:
            return response
        patch_cache_control(response, private=True, no_cache=True)
        patch_vary_headers(response, ("Cookie", "Authorization"))
        if not response.has_header("ETag"):
            response["ETag"] = _etag(response.content)
        return get_conditional_response(request, etag=response["ETag"], response=response)
