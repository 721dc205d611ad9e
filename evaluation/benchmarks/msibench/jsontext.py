"""Strict JSON reading shared by the release reader and the upload validator. Pure.

The harness parses prediction lines with pydantic's JSON parser and release lines with
``json.loads``. ``json.loads`` is more permissive than pydantic's parser in two ways that matter
(an escaped lone surrogate such as ``"\\ud800"``, and nesting deeper than pydantic's limit), so a
line the harness rejects would otherwise pass here; both are rejected. On top of that the site
rejects NaN, Infinity and numbers that do not fit a float, which both parsers would accept and
which could reach a judge prompt (SPEC §3, site tightening).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

from evaluation.bundles import LineTooLong, text_lines

# pydantic's JSON parser refuses any value nested deeper than this (the top-level value is at
# depth 1); measured against pydantic-core's parser: a value at depth 202 is refused.
MAX_DEPTH = 201
# Python refuses to convert integers longer than this many digits (sys.int_info default).
MAX_INT_DIGITS = 4300


class JsonTextError(ValueError):
    """A JSON text the site does not accept; ``str()`` says why, in one line."""


def _reject_constant(name: str):
    raise JsonTextError(f"{name} is not allowed (only finite JSON numbers)")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonTextError(f"number {text[:40]} overflows a float")
    return value


def _parse_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise JsonTextError(f"integer of {len(digits)} digits overflows a float")
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise JsonTextError(f"integer {text[:40]}... overflows a float") from None
    return value


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def check_value(value) -> None:
    """Depth and lone-surrogate checks on a parsed value (iterative: no recursion limit)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise JsonTextError(f"nesting deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            if _has_surrogate(item):
                raise JsonTextError("string holds a lone UTF-16 surrogate escape")
        elif isinstance(item, dict):
            for key, child in item.items():
                if _has_surrogate(key):
                    raise JsonTextError("object key holds a lone UTF-16 surrogate escape")
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def loads_strict(text: str):
    """``json.loads`` with the site's rules; raises JsonTextError (a ValueError) on anything
    else, including plain syntax errors, with a one-line reason."""
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except JsonTextError:
        raise
    except RecursionError:
        raise JsonTextError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        raise JsonTextError(f"invalid JSON: {exc}") from None
    check_value(value)
    return value


def iter_jsonl_lines(text: str):
    """(line number, line) for each non-blank line, exactly as the harness reads JSONL:
    ``str.splitlines()`` (so U+2028, U+0085, \\x1c-\\x1e... end a line) and lines blank after
    ``str.strip()`` skipped. Numbers count every line, skipped ones included."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def iter_jsonl_stream(handle) -> Iterator[tuple[int, str]]:
    """iter_jsonl_lines of decode_utf8 of a binary stream, read a line at a time: the same
    lines, numbers and errors, without holding the file. JsonTextError as decode_utf8 raises
    it (invalid bytes named by line and byte offset in the whole file), or for a line longer
    than the site takes."""
    number = offset = 0
    try:
        for raw in text_lines(handle):
            if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raise JsonTextError("line 1: file starts with a UTF-8 byte-order mark (BOM)")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                # As decode_utf8 counts: the lines before the bad byte, and the one it is in.
                before = raw[: exc.start].decode("utf-8").splitlines(keepends=True)
                ends_with_break = bool(before) and before[-1].splitlines()[0] != before[-1]
                line = number + len(before) + (1 if not before or ends_with_break else 0)
                raise JsonTextError(
                    f"line {line}: invalid UTF-8 at byte {offset + exc.start}"
                ) from None
            offset += len(raw)
            # Every piece but the last ends with "\\n": split, they number as the whole would.
            for line_text in text.splitlines():
                number += 1
                if line_text.strip():
                    yield number, line_text
    except LineTooLong as exc:
        raise JsonTextError(str(exc)) from None


def decode_utf8(data: bytes) -> str:
    """UTF-8 text of a file; a byte-order mark or invalid bytes raise JsonTextError naming the
    line. (The harness reads with encoding="utf-8": the BOM survives as U+FEFF and breaks the
    first line; invalid bytes abort the read.)"""
    if data.startswith(b"\xef\xbb\xbf"):
        raise JsonTextError("line 1: file starts with a UTF-8 byte-order mark (BOM)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lines = data[: exc.start].decode("utf-8").splitlines(keepends=True)
        ends_with_break = bool(lines) and lines[-1].splitlines()[0] != lines[-1]
        line = len(lines) + (1 if not lines or ends_with_break else 0)
        raise JsonTextError(f"line {line}: invalid UTF-8 at byte {exc.start}") from None
