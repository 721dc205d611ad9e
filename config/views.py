"""Views the whole site shares."""

import gzip
import threading
from pathlib import Path

import plotly
from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse
from django.templatetags.static import static
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

# plotly.js is 4.8 MB as shipped and about a third of that compressed: compressed once per
# process (a second at most), then sent as is to every client that accepts gzip.
_COMPRESSED: dict[str, bytes] = {}
_COMPRESS_LOCK = threading.Lock()


def _plotly_path() -> Path:
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _plotly_gzip() -> bytes:
    with _COMPRESS_LOCK:
        if plotly.__version__ not in _COMPRESSED:
            _COMPRESSED[plotly.__version__] = gzip.compress(_plotly_path().read_bytes(), 9, mtime=0)
        return _COMPRESSED[plotly.__version__]


def _accepts_gzip(request) -> bool:
    offered = request.headers.get("Accept-Encoding", "")
    return any(
        part.split(";")[0].strip() == "gzip" and "q=0" not in part.replace(" ", "")
        for part in offered.split(",")
    )


@require_safe
def plotly_js(request, version: str):
    """plotly.js as shipped inside the installed plotly package, under a versioned URL, so
    charts need no outside network; gzip-compressed for clients that take it."""
    if version != plotly.__version__:
        raise Http404("plotly.js is served only in the installed version")
    content_type = "text/javascript; charset=utf-8"
    if _accepts_gzip(request):
        body = _plotly_gzip()
        response = HttpResponse(
            b"" if request.method == "HEAD" else body, content_type=content_type
        )
        response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(len(body))
    else:
        response = FileResponse(_plotly_path().open("rb"), content_type=content_type)
    patch_vary_headers(response, ["Accept-Encoding"])
    # The URL carries the version, so the file never changes under it.
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


@require_safe
def favicon(request):
    """Browsers that ask for /favicon.ico before reading the page's icon link."""
    response = HttpResponse(status=301)
    response["Location"] = static("favicon.svg")
    response["Cache-Control"] = f"public, max-age={24 * 3600 if not settings.DEBUG else 60}"
    return response
