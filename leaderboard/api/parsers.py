"""The API's JSON parser, with bounded nesting: Python's parser raises RecursionError (a 500)
on a deeply nested body; this one answers 400 with a message."""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from evaluation.jsonbounds import JsonRefused, loads_bounded

# API bodies are small flat objects; anything nested deeper is not a request of ours.
MAX_BODY_DEPTH = 16


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) if stream else b""
        if len(raw) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise ParseError("The JSON body is too large.")
        try:
            return loads_bounded(raw, max_depth=MAX_BODY_DEPTH)
        except JsonRefused as exc:
            raise ParseError(f"The JSON body {exc}.") from None
        except ValueError:
            raise ParseError("The body is not valid JSON.") from None
