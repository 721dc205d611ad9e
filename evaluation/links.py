"""Which addresses a page may make a link of.

A system's paper and code addresses come from its team's manifest (or a paper's row); whatever
else a scheme does (``javascript:`` and ``vbscript:`` run script on the reader's page, ``data:``
loads content the team wrote), only a web address, http or https, is a link anywhere. Every
other value is shown as plain text. Manifests naming another scheme are refused at upload
(``web_url_problem``), and a value stored before that rule is still only ever text.

Plain Python: the board's row builder, templates (the ``web_link`` filter) and validators ask
here.
"""

from __future__ import annotations

from urllib.parse import urlsplit

WEB_SCHEMES = ("http", "https")
# Manifest fields holding an address (``url`` is an older name for ``code_url``).
URL_FIELDS = ("paper_url", "code_url", "url")


def web_url(value) -> str:
    """``value`` when it is an http(s) address with a host, else "". Any whitespace or control
    character fails it: browsers drop tabs and newlines inside an address (``java\\tscript:``
    is ``javascript:`` to them), so the value read here must be exactly the one they follow."""
    if not isinstance(value, str) or not value:
        return ""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced [ in the host, say
        return ""
    if parts.scheme.lower() not in WEB_SCHEMES or not parts.netloc:
        return ""
    return value


def web_url_problem(field: str, value) -> str | None:
    """Why ``value`` cannot be the address in ``field`` (None when it can, or is empty)."""
    if value in (None, ""):
        return None
    if web_url(value):
        return None
    shown = str(value)[:60]
    return (
        f"field '{field}' must be a web address starting with http:// or https:// (got {shown!r})"
    )
