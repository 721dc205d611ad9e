"""Views the whole site shares."""

from pathlib import Path

import plotly
from django.http import FileResponse, Http404


def plotly_js(request, version: str):
    """plotly.js as shipped inside the installed plotly package, under a versioned URL, so
    charts need no outside network."""
    if version != plotly.__version__:
        raise Http404("plotly.js is served only in the installed version")
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    response = FileResponse(path.open("rb"), content_type="text/javascript; charset=utf-8")
    # The URL carries the version, so the file never changes under it.
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response
