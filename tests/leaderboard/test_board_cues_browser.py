"""The board's cues in headless Chromium: the name search applies as one stops typing, like the
filters (no Enter needed), and keeps the focus in the box; hiding a column puts it in the URL
and the permalink, which opens the board with the column hidden."""

from __future__ import annotations

import re

import pytest

from tests.leaderboard.test_ux_browser import rows  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_search_applies_as_one_types_and_hidden_columns_are_in_the_permalink(
    browser,
    live_server,
    rows,  # noqa: F811
):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/benchmarks/mp-bench/?judge=gpt&group=none")
    assert page.locator("#board tr[data-system]").count() > 1
    page.locator("#board-search").type("alph")
    page.wait_for_url(re.compile(r"[?&]q=alph"), timeout=10000)
    shown = page.locator("#board tr[data-system]").evaluate_all(
        "rows => rows.map(r => r.dataset.system)"
    )
    assert shown == ["Alpha"]
    assert page.evaluate("document.activeElement.id") == "board-search"

    page.goto(f"{live_server.url}/benchmarks/mp-bench/?judge=gpt")
    page.locator("#columns-menu summary").click()
    page.uncheck('input[data-toggle-col="org"]')
    assert not page.locator("#board th.col-org").is_visible()
    assert "hide=org" in page.url
    permalink = page.get_attribute("#permalink", "href")
    assert "hide=org" in permalink
    sort_link = page.get_attribute('#board thead a[data-sort="system"]', "href")
    assert "hide=org" in sort_link

    fresh = browser.new_page(viewport={"width": 1400, "height": 900})
    fresh.goto(live_server.url + permalink)
    assert not fresh.locator("#board th.col-org").is_visible()
    assert fresh.locator("#board th.col-date").is_visible()
    assert not fresh.is_checked('input[data-toggle-col="org"]')
