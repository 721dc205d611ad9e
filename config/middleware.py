"""Site-wide middleware: a Content-Security-Policy on every response, from the
CONTENT_SECURITY_POLICY setting (Django 5.2 has no built-in one; empty: no header), gzip for
text responses, and a clear 400 for an address holding a NUL character."""

from django.conf import settings
from django.http import HttpResponseBadRequest
from django.middleware.gzip import GZipMiddleware

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
