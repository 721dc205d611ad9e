"""The board's human-calibrated switch in headless Chromium: choosing a metric shows its view,
ticking "rank by calibrated values" re-ranks at once, and turning the view off drops the ranking
with it (the form never asks for a ranking without its view), every state in the URL."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from evaluation.benchmarks import get_plugin
from evaluation.models import CalibratedScore, Submission
from tests.leaderboard.test_board_browser import rows, shown_systems  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def _params(page) -> dict:
    return parse_qs(urlsplit(page.url).query)


def test_the_calibrated_switch_in_the_browser(browser, live_server, rows, mpbench_demo):  # noqa: F811
    key = get_plugin(mpbench_demo.plugin).rank_keys[0]
    judge = rows
    for name, value in (("Gamma", 10.0), ("Delta", 90.0)):
        CalibratedScore.objects.create(
            submission=Submission.objects.get(
                benchmark=mpbench_demo, system__name=name, is_reported=False
            ),
            judge=judge,
            metric=key,
            study_id=1,
            study_name="s",
            population=100,
            labelled=30,
            value=value,
            low=value - 5,
            high=value + 5,
        )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/benchmarks/mp-bench/?judge=gpt&group=none")
    judged = shown_systems(page)
    assert judged.index("Gamma") < judged.index("Delta")
    assert page.locator("#rank-calibrated").count() == 0

    with page.expect_navigation():
        page.select_option("#board-calibrated", key)
    assert _params(page)["calibrated"] == [key] and "rank_by" not in _params(page)
    assert shown_systems(page) == judged
    assert page.locator("#calibrated-group").count() == 1

    with page.expect_navigation():
        page.check("#rank-calibrated")
    assert _params(page)["rank_by"] == ["calibrated"]
    ranked = shown_systems(page)
    assert ranked[:2] == ["Delta", "Gamma"], ranked

    with page.expect_navigation():
        page.select_option("#board-calibrated", "")
    assert "calibrated" not in _params(page) and "rank_by" not in _params(page)
    assert shown_systems(page) == judged
    assert errors == []
