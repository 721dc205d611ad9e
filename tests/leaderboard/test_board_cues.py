"""The board's cues, by request: the sorted column says which way it runs (▲/▼, apart from the
↑/↓ that say which way a metric is better); the column chooser's hidden columns are part of the
board's state in the URL, so the permalink and every link keep them; one ticked row opens the
compare page with it as A. What needs a browser (the search applying as one types, the chooser
rewriting the permalink) is in test_board_cues_browser.py."""

from __future__ import annotations

import html
import re

import pytest
from django.core.cache import cache

from evaluation.benchmarks import get_plugin
from tests.conftest import REPO
from tests.leaderboard.test_board_page import mp_results, scored_row
from tests.leaderboard.test_board_ux import judge  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture
def board(mpbench_demo, judge):  # noqa: F811
    rows = [
        scored_row(mpbench_demo, judge, "Alpha", mp_results(300, 50, 120, 64, 130, 72)),
        scored_row(mpbench_demo, judge, "Beta", mp_results(200, 40, 100, 50, 120, 60)),
    ]
    return mpbench_demo, rows


def header(page: str, key: str) -> str:
    return re.search(rf'<th[^>]*>(?:(?!</th>).)*data-sort="{key}"(?:(?!</th>).)*</th>', page, re.S)[
        0
    ]


def test_the_sorted_column_says_which_way_it_runs(client, board):
    metric = get_plugin("mp-bench").metrics[0].key
    page = client.get("/benchmarks/mp-bench/?judge=gpt").content.decode()
    assert '<span class="sort-dir" title="sorted ascending"> ▲</span>' in header(page, "rank")
    assert "sort-dir" not in header(page, metric)
    page = client.get(f"/benchmarks/mp-bench/?judge=gpt&sort=-{metric}").content.decode()
    assert '<span class="sort-dir" title="sorted descending"> ▼</span>' in header(page, metric)
    assert "sort-dir" not in header(page, "rank")
    page = client.get(f"/benchmarks/mp-bench/?judge=gpt&sort={metric}").content.decode()
    assert "▲" in header(page, metric)
    css = (REPO / "static" / "leaderboard" / "leaderboard.css").read_text()
    assert '" •"' not in css  # the old marker that said nothing of the direction


def test_hidden_columns_are_in_the_permalink_and_every_link(client, board):
    metric = get_plugin("mp-bench").metrics[0].key
    page = client.get(f"/benchmarks/mp-bench/?judge=gpt&hide=org,{metric}").content.decode()
    permalink = html.unescape(re.search(r'<a href="([^"]*)" id="permalink"', page)[1])
    assert f"hide=org%2C{metric}" in permalink
    sort_links = re.findall(r'<a href="([^"]*)" data-sort=', page)
    assert sort_links and all("hide=org%2C" in html.unescape(h) for h in sort_links)
    assert re.search(r'data-toggle-col="org">', page)  # unchecked
    assert re.search(r'data-toggle-col="date" checked>', page)
    assert f'name="hide" value="org,{metric}"' in page
    refused = client.get("/benchmarks/mp-bench/?judge=gpt&hide=org,shoe_size")
    assert refused.status_code == 400
    assert "hide: unknown column 'shoe_size'" in refused.content.decode()


def test_one_ticked_row_opens_the_compare_page_with_it_as_a(client, board):
    _, (alpha, beta) = board
    response = client.get(f"/benchmarks/mp-bench/compare/?judge=gpt&pick={alpha.pk}")
    assert response.status_code == 302
    assert f"a={alpha.pk}" in response["Location"] and "b=" not in response["Location"]
    page = client.get(response["Location"])
    assert page.status_code == 200
    text = page.content.decode()
    picker_a = re.search(r'<select name="a"[^>]*>(.*?)</select>', text, re.S)[1]
    picker_b = re.search(r'<select name="b"[^>]*>(.*?)</select>', text, re.S)[1]
    assert f'<option value="{alpha.pk}" selected>' in picker_a
    assert "selected" not in picker_b
    assert 'id="compare-error"' not in text and 'id="compare-choose-other"' in text
