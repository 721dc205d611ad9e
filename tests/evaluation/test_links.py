"""evaluation/links.py: only http(s) addresses with a host are links; every other scheme, and any
value a browser would read differently from this check, is not."""

import pytest

from evaluation.links import web_url, web_url_problem

LINKS = [
    "https://example.org/paper.pdf",
    "http://example.org",
    "HTTPS://Example.org/Code",  # schemes are case-insensitive
    "https://example.org/a?b=c#d",
]
NOT_LINKS = [
    "javascript:alert(document.cookie)",
    "JavaScript:alert(1)",
    "vbscript:msgbox(1)",
    "data:text/html,<script>alert(1)</script>",
    "ftp://example.org/file",
    " javascript:alert(1)",  # browsers drop the leading space
    "java\tscript:alert(1)",  # ...and tabs and newlines inside
    "java\nscript:alert(1)",
    "https://exa mple.org",
    "https:example.org",  # no host
    "//example.org/paper",  # scheme-relative: not a stated web address
    "/systems/1/",
    "example.org",
    "https://[::1",  # unparseable
    "",
    None,
    42,
]


@pytest.mark.parametrize("value", LINKS)
def test_web_addresses_are_links(value):
    assert web_url(value) == value
    assert web_url_problem("paper_url", value) is None


@pytest.mark.parametrize("value", NOT_LINKS)
def test_other_values_are_not(value):
    assert web_url(value) == ""


def test_the_problem_names_the_field_and_the_value():
    assert web_url_problem("code_url", "javascript:alert(1)") == (
        "field 'code_url' must be a web address starting with http:// or https:// "
        "(got 'javascript:alert(1)')"
    )
    assert web_url_problem("code_url", "") is None  # not given
    assert web_url_problem("code_url", None) is None
