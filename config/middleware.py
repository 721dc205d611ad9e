"""Site-wide middleware: a Content-Security-Policy on every response, from the
CONTENT_SECURITY_POLICY setting (Django 5.2 has no built-in one; empty: no header), and gzip
for text responses."""

from django.conf import settings
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
