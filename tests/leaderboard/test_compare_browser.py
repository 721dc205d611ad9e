"""A researcher in headless Chromium: picks a slice on the board, ticks two rows, compares them
and opens a task they disagree on. The runs are those of test_compare on the example plug-in's
benchmark (A answers q1 to q3 as toy_upload does, B gives empty answers, both scored by the
offline judge); the slice is the topic of a task where A passed a unit B failed, found from the
stored outcomes by the toy's rules."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import REPO
from tests.leaderboard.cast import lab_and_rivals
from tests.leaderboard.test_compare import _fresh_cache, make_runs, passed_units  # noqa: F401
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts" / "compare"
TOPICS = {task["id"]: task["topic"] for task in toy.TASKS}  # odd tasks math, even ones fact


@pytest.fixture
def runs(eager, toybench, tmp_path):
    """test_compare's runs, committed here for the live server."""
    return make_runs(toybench, tmp_path, lab_and_rivals())


def test_slice_tick_two_rows_compare_and_open_a_disagreement(browser, live_server, runs):
    a, b = runs["a"], runs["b"]
    submitted = passed_units(a)
    won = [task for task, found in submitted.items() if any(found.values())]
    assert won, "A passed no unit: nothing to disagree on"
    topic = TOPICS[won[0]]
    in_topic = {task for task in submitted if TOPICS[task] == topic}
    benchmark_wide = sum(value == topic for value in TOPICS.values())
    assert (topic, sorted(in_topic), benchmark_wide) == ("math", ["q1", "q3"], 3)  # by hand
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(f"{live_server.url}/benchmarks/toy-bench/?judge=offline")
    # Choosing a slice applies it at once; the URL holds it.
    with page.expect_navigation():
        page.select_option("#board-slice", f"topic={topic}")
    query = parse_qs(urlsplit(page.url).query)
    assert query["slice"] == [f"topic={topic}"] and query["judge"] == ["offline"]
    note = page.inner_text("#slice-note")
    assert f"({benchmark_wide} task{'s' if benchmark_wide != 1 else ''})" in note, note
    systems = page.eval_on_selector_all(
        "#board tbody tr[data-system]", "rows => rows.map(r => r.dataset.system)"
    )
    assert {"Talker", "Mute"} <= set(systems) and "Secret" not in systems  # unpublished
    page.screenshot(path=str(ARTIFACTS / "board-slice.png"), full_page=True)

    # Tick the two rows, compare: the comparison keeps the judge and the slice.
    page.check('tr[data-system="Talker"] input.pick')
    page.check('tr[data-system="Mute"] input.pick')
    with page.expect_navigation():
        page.click("#compare-ticked")
    query = parse_qs(urlsplit(page.url).query)
    assert {query["a"][0], query["b"][0]} == {str(a.pk), str(b.pk)}, page.url
    assert query["slice"] == [f"topic={topic}"]
    assert page.inner_text("#compare-tasks").startswith(f"{len(in_topic)} task")
    shown = page.eval_on_selector_all(
        "#disagreement-table tbody th a", "links => links.map(a => a.textContent)"
    )
    expected = sorted(task for task in won if task in in_topic)
    assert sorted(shown) == expected
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)

    # Open a task they disagree on: both answers side by side, A's and B's own systems named.
    with page.expect_navigation():
        page.click(f'#disagreement-table a:text-is("{expected[0]}")')
    assert page.inner_text("h1") == expected[0]
    sides = page.inner_text("#side-a") + page.inner_text("#side-b")
    assert "Talker" in sides and "Mute" in sides
    page.screenshot(path=str(ARTIFACTS / "compare-task.png"), full_page=True)
    assert errors == []
