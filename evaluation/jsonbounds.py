"""JSON sent by users, read with bounds checked before parsing: how deeply it nests and how
many values it holds. Plain Python and numpy.

Python's parser recurses once per nesting level (a deep document raises RecursionError) and
builds every value in memory (a few megabytes of ``{},`` become gigabytes of dicts). Both are
measured on the raw bytes first, at C speed, so a hostile document is refused before it is
parsed, with a message that says which bound it broke.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate

import numpy as np

# Every byte but the quote and the four brackets, dropped before measuring nesting.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_OPENERS = (ord("["), ord("{"))
_BLOCK = 1 << 20
# Up to this many brackets a plain loop is quicker than setting up numpy's arrays.
_SMALL = 4096


class JsonRefused(ValueError):
    """A document refused before parsing; the message says which bound it broke."""


def _brackets(raw: bytes) -> bytes:
    """The document's brackets outside strings, in order. Once escapes are gone, quotes pair
    up: every other piece between them is inside a string."""
    text = _ESCAPE.sub(b"", raw).translate(None, _NOT_STRUCTURE)
    return b"".join(text.split(b'"')[::2])


def _depth(text: bytes) -> int:
    """The deepest running count of openers less closers over a text of brackets only."""
    if len(text) <= _SMALL:
        return max(0, max(accumulate(1 if b in _OPENERS else -1 for b in text), default=0))
    depth = deepest = 0
    for start in range(0, len(text), _BLOCK):
        block = np.frombuffer(
            text, dtype=np.uint8, count=min(_BLOCK, len(text) - start), offset=start
        )
        steps = np.where(np.isin(block, _OPENERS), 1, -1)
        running = np.cumsum(steps, dtype=np.int64) + depth
        deepest = max(deepest, int(running.max()))
        depth = int(running[-1])
    return deepest


def _within(text: bytes, max_depth: int) -> bool:
    """Whether a text of brackets only nests at most max_depth deep, shown by peeling pairs
    with nothing between them: a replace removes only pairs that had nothing between them
    before it (innermost ones), so it takes at most one level off, and a round of two at most
    two. A text gone within max_depth // 2 rounds nested at most max_depth deep. False means
    not shown (deeper, or brackets that do not pair up): then the depth is counted."""
    for _ in range(max_depth // 2):
        if not text:
            return True
        peeled = text.replace(b"[]", b"").replace(b"{}", b"")
        if len(peeled) == len(text):
            return False
        text = peeled
    return not text


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects, ignoring brackets inside strings. Meaningful
    for valid JSON; for invalid JSON an upper bound is fine, as the parser refuses it anyway."""
    return _depth(_brackets(raw))


def value_bound(raw: bytes) -> int:
    """An upper bound on the values a document holds: every value after the first in a
    container follows a comma, and each container holds at most one that does not."""
    return raw.count(b",") + raw.count(b"[") + raw.count(b"{") + 1


def loads_bounded(raw: bytes | str, *, max_depth: int, max_values: int | None = None, **options):
    """json.loads (with its keyword ``options``), after refusing (JsonRefused) a document
    nested deeper than max_depth or holding more than max_values values. Parse errors raise
    ValueError as json.loads does."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if max_values is not None and value_bound(raw) > max_values:
        raise JsonRefused(f"holds more than {max_values:,} JSON values")
    if not _within(_brackets(raw), max_depth) and (depth := nesting_depth(raw)) > max_depth:
        raise JsonRefused(f"nests {depth:,} levels deep; at most {max_depth} are allowed")
    return json.loads(raw, **options)


def non_finite_path(value, path: str = "") -> str | None:
    """Where the first NaN or Infinity sits ("results.scores[2]"), or None. Python's parser
    accepts them, but they are not JSON numbers and no database column takes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(the document)"
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_finite_path(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = non_finite_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


def unstorable_text(text: str) -> str | None:
    """What in this text no database column takes (PostgreSQL stores neither NUL nor an
    unpaired surrogate in text or jsonb), or None."""
    if "\x00" in text:
        return "a NUL character (\\u0000)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "an unpaired surrogate escape (\\ud800-\\udfff)"
    return None


def unstorable_path(value, path: str = "") -> tuple[str, str] | None:
    """(where, what) for the first string, key or value, that no database column takes."""
    if isinstance(value, str):
        what = unstorable_text(value)
        return (path or "(the document)", what) if what else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            what = unstorable_text(str(key))
            if what:
                return where, what
            found = unstorable_path(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_path(item, f"{path}[{index}]")
            if found:
                return found
    return None
