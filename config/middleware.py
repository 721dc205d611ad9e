"""Site-wide middleware: a Content-Security-Policy on every response, from the
CONTENT_SECURITY_POLICY setting (Django 5.2 has no built-in one; empty: no header), gzip for
text responses, a clear 400 for an address holding a NUL character, and a 503 that says
storage is unavailable when a view needed the file store and it did not answer."""

import logging

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse
from django.middleware.gzip import GZipMiddleware
from django.template.response import TemplateResponse

from evaluation.stored import storage_unavailable

logger = logging.getLogger(__name__)
# How long a client is asked to wait before trying a page again when storage did not answer.
STORAGE_RETRY_AFTER_SECONDS = 30

COMPRESSED_TYPES = (
    "text/html",
    "text/plain",
    "text/csv",
    "text/css",
    "text/javascript",
    "application/json",
    "application/javascript",
    "application/vnd.oai.openapi",
    "image/svg+xml",
)


class TextCompressionMiddleware(GZipMiddleware):
    """Django's gzip, for text only: audio and byte ranges (206, Content-Range) pass untouched,
    so players can still seek. Pages carry per-request masked CSRF tokens, which is what keeps
    compressing them safe from BREACH-style guessing."""

    def process_response(self, request, response):
        kind = response.get("Content-Type", "").split(";")[0].strip().lower()
        if (
            kind not in COMPRESSED_TYPES
            or response.status_code == 206
            or response.has_header("Content-Range")
        ):
            return response
        return super().process_response(request, response)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class NulCharacterMiddleware:
    """An address whose path or query holds a NUL character (%00) is refused with a 400 that
    says so, before any view sees it: no page takes one, and PostgreSQL refuses it in a query
    (a 500 otherwise, wherever a view filters by what it was given). Forms and the API's fields
    refuse NUL in bodies themselves."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any(
            "\x00" in key or any("\x00" in value for value in values)
            for key, values in request.GET.lists()
        ):
            return HttpResponseBadRequest(
                "The address holds a NUL character (%00), which no page takes.",
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)


class StorageUnavailableMiddleware:
    """A view whose storage calls gave up (timeouts and retries spent, config/storage.py)
    answers 503 with a page (JSON under /api/) saying storage is unavailable, not a bare 500;
    the error's text (an address, a key) goes to the log only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not storage_unavailable(exception):
            return None
        logger.warning("%s: storage unavailable", request.path, exc_info=exception)
        message = "Storage unavailable: the file store did not answer. Try again in a minute."
        if request.path.startswith("/api/") or "json" in request.headers.get("Accept", ""):
            response = JsonResponse({"detail": message}, status=503)
        else:
            response = TemplateResponse(request, "storage_unavailable.html", status=503)
            response.render()
        response["Retry-After"] = str(STORAGE_RETRY_AFTER_SECONDS)
        response["Cache-Control"] = "no-store"
        return response
