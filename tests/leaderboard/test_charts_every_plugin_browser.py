"""The board's charts, for every registered plug-in (the example one included, so a new benchmark
inherits the check), in headless Chromium at 1400x900 and at a phone's 390x844: each chart is
drawn across the width of the box it sits in (at least 90% of it, not plotly's default 700 px,
nor a fixed cap inside a wider column), follows the window when it is resized, never makes the
page scroll sideways, and no legend needs a scrollbar (plotly draws one, a ``.scrollbar`` rect of
non-zero size in the legend, when its entries do not fit the height it is given). Screenshots
are kept in test-artifacts/charts/."""

from __future__ import annotations

import pytest

from evaluation.benchmarks import registry
from tests.conftest import REPO, demo_runs_scored, every_plugin_board
from tests.leaderboard.test_ux_browser import watch

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]
VIEWPORTS = {"wide": (1400, 900), "phone": (390, 844)}
ARTIFACTS = REPO / "test-artifacts" / "charts"
# A chart drawn narrower than this share of its box leaves the rest of the column empty.
FILLED = 0.9

MEASURE = """() => Array.from(document.querySelectorAll('#chart-list .chart')).map(chart => {
  const box = chart.parentElement;
  const style = getComputedStyle(box);
  const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const drawn = chart.querySelector('.main-svg').getBoundingClientRect().width;
  const scrollbars = Array.from(chart.querySelectorAll('.legend .scrollbar')).filter(bar => {
    const size = bar.getBBox();
    return size.width > 0 && size.height > 0;
  }).length;
  const title = chart.querySelector('.gtitle');
  return {title: title ? title.textContent : chart.id, box: inner, drawn, scrollbars};
})"""


@pytest.fixture
def board(request, settings, tmp_path):
    benchmark, plugin = every_plugin_board(request.param, settings, tmp_path, name="charts")
    demo_runs_scored(benchmark, plugin, tmp_path, count=2)
    return benchmark, plugin


def charts_drawn(page) -> list[dict]:
    page.wait_for_selector('#charts[data-ready="1"]', timeout=30_000)
    return page.evaluate(MEASURE)


def misfits(charts: list[dict], where: str) -> list[str]:
    """What is wrong with the charts measured: drawn too narrow for their box, or a legend that
    scrolls."""
    found = []
    for chart in charts:
        if chart["drawn"] < FILLED * chart["box"]:
            found.append(
                f"{where} {chart['title']!r}: drawn {chart['drawn']:.0f} px"
                f" in a {chart['box']:.0f} px box"
            )
        if chart["scrollbars"]:
            found.append(f"{where} {chart['title']!r}: its legend scrolls")
    return found


def overflow(page) -> int:
    """How far the page reaches past the window's width, in CSS pixels (0: it does not)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_charts_fill_their_box_and_no_legend_scrolls(board, browser, live_server):
    benchmark, plugin = board
    url = f"{live_server.url}/benchmarks/{benchmark.slug}/"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    wrong = []
    for viewport, (width, height) in VIEWPORTS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        seen = watch(page)
        page.goto(url)
        charts = charts_drawn(page)
        assert len(charts) == len(plugin.charts), (viewport, charts)
        wrong += misfits(charts, viewport)
        if (extra := overflow(page)) > 0:
            wrong.append(f"{viewport}: the page is {extra} px too wide with its charts drawn")
        page.locator("#charts").screenshot(
            path=str(ARTIFACTS / f"{benchmark.plugin}-charts-{viewport}.png")
        )
        assert seen == {"errors": [], "failed": []}, (viewport, seen)
        context.close()
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_charts_follow_the_window_when_it_is_resized(board, browser, live_server):
    benchmark, plugin = board
    wide, phone = VIEWPORTS["wide"], VIEWPORTS["phone"]
    context = browser.new_context(viewport={"width": wide[0], "height": wide[1]})
    page = context.new_page()
    page.goto(f"{live_server.url}/benchmarks/{benchmark.slug}/")
    before = charts_drawn(page)
    page.set_viewport_size({"width": phone[0], "height": phone[1]})
    # plotly redraws a responsive chart a moment after the window's resize event.
    page.wait_for_function(
        """widest => Array.from(document.querySelectorAll('#chart-list .main-svg'))
             .every(svg => svg.getBoundingClientRect().width < widest)""",
        arg=phone[0],
        timeout=10_000,
    )
    after = page.evaluate(MEASURE)
    wrong = misfits(after, "resized to a phone")
    if (extra := overflow(page)) > 0:
        wrong.append(f"resized to a phone: the page is {extra} px too wide")
    page.set_viewport_size({"width": wide[0], "height": wide[1]})
    page.wait_for_function(
        """narrowest => Array.from(document.querySelectorAll('#chart-list .main-svg'))
             .every(svg => svg.getBoundingClientRect().width > narrowest)""",
        arg=phone[0],
        timeout=10_000,
    )
    wrong += misfits(page.evaluate(MEASURE), "back to wide")
    context.close()
    assert [c["drawn"] for c in before] != [c["drawn"] for c in after]
    assert not wrong, "\n".join(wrong)
