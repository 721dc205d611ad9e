"""A rater in real headless Chromium: opens an invite link, plays the audio, labels a batch of
30 with the keyboard alone, closes the tab half-way and resumes at the same item with the same
answer chosen; a second rater is only ever given items that still have room. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import WSGIServer
from django.db import connections
from django.test.testcases import LiveServerThread, QuietWSGIRequestHandler

from annotation.models import Assignment, Rating, RatingEvent
from tests.annotation.factories import invite, make_board, make_study
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts"


class SerialLiveServerThread(LiveServerThread):
    # One request at a time: the default test database (SQLite in memory) is one connection
    # shared with the server, and the rater page writes while the player fetches its audio.
    def _create_server(self, connections_override=None):
        return WSGIServer(
            (self.host, self.port), QuietWSGIRequestHandler, allow_reuse_address=False
        )


@pytest.fixture
def rater_server(transactional_db):
    shared = {
        alias: connections[alias]
        for alias in connections
        if connections[alias].vendor == "sqlite" and connections[alias].is_in_memory_db()
    }
    for connection in shared.values():
        connection.inc_thread_sharing()
    thread = SerialLiveServerThread(
        "127.0.0.1", StaticFilesHandler, connections_override=shared, port=0
    )
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://127.0.0.1:{thread.port}"
    thread.terminate()
    for connection in shared.values():
        connection.dec_thread_sharing()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"annotation-{name}.png"), full_page=True)


def position(page) -> int:
    return int(page.locator("#rate-position").inner_text())


def open_item(page, url: str | None, expected: int) -> None:
    if url:
        page.goto(url)
    page.wait_for_function(
        "n => document.getElementById('rate-position') && "
        "document.getElementById('rate-position').textContent === String(n)",
        arg=expected,
    )
    page.wait_for_function("() => window.floorboardRate && window.floorboardRate.players.response")


def play_response_through(page) -> None:
    page.keyboard.press("r")
    page.keyboard.press(" ")
    page.wait_for_function(
        "() => window.floorboardRate.players.response.playedThrough", timeout=15_000
    )


def label_and_submit(page, key: str, number: int) -> None:
    play_response_through(page)
    page.keyboard.press(key)
    page.keyboard.press("Enter")
    if number < 30:
        page.wait_for_function(
            "n => { const p = document.getElementById('rate-position');"
            " return p && p.textContent === String(n); }",
            arg=number + 1,
        )


# 1 and 2 choose the labels, 0 and 3 "can't judge".
KEYS = ["1", "2", "1", "1", "2", "0", "2", "1", "3", "2"] * 3
VALUES = {"1": "consistent", "2": "inconsistent", "0": None, "3": None}


def test_a_rater_labels_a_batch_of_30_by_keyboard_and_resumes_after_closing_the_tab(
    rater_server, browser
):
    board = make_board(submissions=2, tasks=20, conversation_seconds=1.0, response_seconds=0.5)
    study = make_study(
        board, per_stratum=20, overlap=1, batch_size=30, require_play_through=True
    )  # 40 items, one rater each
    first, second = invite(study, 2)
    url = f"{rater_server}/rate/{first.token}/"
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(url)
    shot(page, "rater-welcome")
    with page.expect_navigation():
        page.keyboard.press("Enter")  # the start button has the focus
    open_item(page, None, 1)
    # Play the conversation with space, seek with the arrows, let it play to the end.
    page.keyboard.press(" ")
    page.wait_for_function(
        "() => window.floorboardRate.players['context-0'].currentTime > 0.2", timeout=10_000
    )
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "() => window.floorboardRate.players['context-0'].playedThrough", timeout=15_000
    )
    # Submit is refused until the response has been heard to the end.
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    assert "Play the response to the end" in page.locator("#rate-message").inner_text()
    assert position(page) == 1
    shot(page, "rater-item")

    for number in range(1, 15):
        label_and_submit(page, KEYS[number - 1], number)
    # Item 15: choose an answer, then close the tab without submitting.
    assert position(page) == 15
    play_response_through(page)
    page.keyboard.press("1")
    page.evaluate("() => window.floorboardRate.flush(false)")
    page.wait_for_timeout(500)
    page.close()

    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_item(page, url, 15)
    pressed = page.locator(".label-choice[aria-pressed=true]")
    assert pressed.get_attribute("data-value") == "consistent"
    shot(page, "rater-resumed")
    # The response was heard before the tab closed: the answer can change and go at once.
    page.keyboard.press(KEYS[14])
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('rate-position').textContent === '16'")
    for number in range(16, 31):
        label_and_submit(page, KEYS[number - 1], number)
    page.wait_for_selector("text=Batch 1 is done")
    shot(page, "rater-batch-done")
    context.close()  # nothing left in the browser talking to the server

    ratings = {
        r.assignment.position: r
        for r in Rating.objects.filter(rater=first).select_related("assignment", "guideline")
    }
    assert sorted(ratings) == list(range(1, 31))
    assert [ratings[p].label for p in range(1, 31)] == [VALUES[k] for k in KEYS]
    # Consistent before the tab closed, inconsistent (key 2) after it reopened.
    assert (ratings[15].first_label, ratings[15].label_changes) == ("consistent", 1)
    assert all(r.response_played_through for r in ratings.values())
    assert all(r.guideline.version == 1 for r in ratings.values())
    assert all(r.time_on_task_ms > 0 for r in ratings.values())
    assert RatingEvent.objects.filter(assignment__rater=first, kind="play").count() >= 31
    assert RatingEvent.objects.filter(assignment__rater=first, kind="seek").exists()

    # A second rater: 30 of the 40 items are full (overlap 1), so only the other 10 come.
    other = browser.new_context(viewport={"width": 1200, "height": 1000})
    page2 = other.new_page()
    page2.on("pageerror", lambda error: errors.append(str(error)))
    second_url = f"{rater_server}/rate/{second.token}/"
    page2.goto(second_url)
    with page2.expect_navigation():
        page2.keyboard.press("Enter")
    open_item(page2, None, 1)
    assert "item 1 of 10" in page2.locator(".rate-progress").inner_text()
    shot(page2, "second-rater")
    other.close()
    full = set(Assignment.objects.filter(rater=first).values_list("item_id", flat=True))
    given = set(Assignment.objects.filter(rater=second).values_list("item_id", flat=True))
    assert len(given) == 10 and not given & full
    assert not errors, errors


def test_the_dashboard_draws_its_charts_with_the_local_plotly(rater_server, browser, client):
    from django.contrib.auth import get_user_model

    from annotation import assignment as rating

    board = make_board(submissions=3, tasks=4, audio=False)
    study = make_study(board, per_stratum=4, overlap=3, batch_size=12)
    for n, rater in enumerate(invite(study, 4)):
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            label = "consistent" if (current.position + n) % 3 else "inconsistent"
            rating.assignment_submit(rater=rater, code=current.code, label=label)
    staff = get_user_model().objects.create_superuser("boss", "b@example.org", "pw")
    client.force_login(staff)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": rater_server}]
    )
    page = context.new_page()
    errors, requested = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{rater_server}/studies/{study.slug}/")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 3")
    assert page.locator("#chart-confusion .heatmaplayer").count() == 1
    assert page.locator("#chart-strata .point").count() >= 3
    # Each chart fills its box; the per-stratum one the whole width (not plotly's 700 px or
    # half the screen), and no legend has a scrollbar.
    charts = page.evaluate(
        """() => Array.from(document.querySelectorAll('.chart')).map(c => ({
             id: c.id, box: c.clientWidth,
             drawn: c.querySelector('.main-svg').getBoundingClientRect().width,
             scrollbars: Array.from(c.querySelectorAll('.legend .scrollbar'))
               .filter(b => b.getBoundingClientRect().height > 0).length}))"""
    )
    main = page.evaluate(
        "() => { const m = getComputedStyle(document.querySelector('main'));"
        " return document.querySelector('main').clientWidth - parseFloat(m.paddingLeft)"
        " - parseFloat(m.paddingRight); }"
    )
    for chart in charts:
        assert abs(chart["drawn"] - chart["box"]) <= 2, chart
        assert chart["scrollbars"] == 0, chart
    strata = next(c for c in charts if c["id"] == "chart-strata")
    assert strata["box"] >= main - 4, (strata, main)
    shot(page, "dashboard")
    context.close()
    assert not errors, errors
    assert all(url.startswith(rater_server) for url in requested), requested
