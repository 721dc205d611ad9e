"""What a newcomer met, in real headless Chromium at 1400x900 and at a phone's 390x844: the board
(ranks explained, columns, search, a table that scrolls on its own with the system in view,
charts whose names are neither cut off nor piled up, a click that opens the system), the home
and About pages, the favicon, the submit page, the owner's actions, and players that renew their
links and play one at a time. Screenshots are kept in test-artifacts/ux/."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache

from evaluation.benchmarks.mpbench import demo
from evaluation.models import Judge, Membership, Team
from evaluation.services import benchmark_import, submission_create
from tests.conftest import REPO
from tests.leaderboard.test_board_page import ROWS, mp_results, scored_row

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts" / "ux"
WIDTHS = {"wide": (1400, 900), "phone": (390, 844)}


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def no_page_overflow(page) -> None:
    width = page.viewport_size["width"]
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= width, f"the page is {scroll} px wide at {width} px"


def watch(page) -> dict:
    """Page errors and every response that failed (a favicon 404 included)."""
    seen = {"errors": [], "failed": []}
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on(
        "response",
        lambda r: seen["failed"].append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    return seen


@pytest.fixture
def rows(mpbench_demo):
    cache.clear()
    judge = Judge.objects.create(
        benchmark=mpbench_demo,
        slug="gpt",
        name="GPT judge",
        provider=Judge.Provider.OPENAI,
        models_by_kind={"understanding": "m"},
    )
    for name, (system_type, facets, counts, latencies) in ROWS.items():
        scored_row(
            mpbench_demo,
            judge,
            name,
            mp_results(*counts, lat=latencies),
            system_type=system_type,
            organization="Lab of " + name,
            **facets,
        )
    return judge


def text_boxes(page, chart: str) -> list[dict]:
    return page.evaluate(
        """sel => Array.from(document.querySelectorAll(sel + ' .textpoint text'))
             .filter(t => t.textContent && t.style.display !== 'none')
             .map(t => { const b = t.getBoundingClientRect();
                         return {text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height}; })""",
        chart,
    )


def chart_box(page, chart: str) -> dict:
    return page.evaluate(
        "sel => { const b = document.querySelector(sel + ' .main-svg').getBoundingClientRect();"
        " return {x: b.x, y: b.y, w: b.width, h: b.height}; }",
        chart,
    )


def assert_labels_readable(page, chart: str) -> None:
    """Every point's name inside the chart and clear of every other name."""
    frame = chart_box(page, chart)
    boxes = text_boxes(page, chart)
    assert boxes, "no point names drawn"
    for box in boxes:
        assert box["x"] >= frame["x"] - 0.5 and box["x"] + box["w"] <= frame["x"] + frame["w"] + 0.5
        assert box["y"] >= frame["y"] - 0.5 and box["y"] + box["h"] <= frame["y"] + frame["h"] + 0.5
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap_x = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
            overlap_y = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
            # Glyph boxes include line spacing; a sliver of a pixel is not an overlap.
            assert overlap_x <= 1 or overlap_y <= 1, (a, b)


def test_the_board_at_both_widths(browser, live_server, rows):
    for label, (width, height) in WIDTHS.items():
        page = browser.new_page(viewport={"width": width, "height": height})
        seen = watch(page)
        page.goto(f"{live_server.url}/benchmarks/mp-bench/")
        no_page_overflow(page)
        page.wait_for_selector('#charts[data-ready="1"]', timeout=30000)
        # The paper's rows: the legend says they have no interval; names are readable.
        legend = page.evaluate("document.querySelector('#chart-0 .legend').textContent")
        assert "reported in a paper: no counts, so no 95% interval" in legend
        assert_labels_readable(page, "#chart-0")
        if label == "wide":
            # At full width every name fits: none had to be hidden.
            assert page.get_attribute("#chart-0", "data-hidden-labels") == "0"
        title = page.locator("#chart-0 .gtitle").bounding_box()
        frame = chart_box(page, "#chart-0")
        assert title["x"] + title["width"] <= frame["x"] + frame["w"] + 1  # not cut off
        if label == "phone":
            # The table scrolls on its own; rank and system stay in view while it does.
            scroller = page.locator("#board-scroll")
            assert page.evaluate(
                "() => { const s = document.getElementById('board-scroll');"
                " return s.scrollWidth > s.clientWidth; }"
            )
            system = page.locator("#board td.system").first
            before = system.bounding_box()["x"]
            scroller.evaluate("s => { s.scrollLeft = 400; }")
            assert abs(system.bounding_box()["x"] - before) < 2  # stays (a border aside)
            rank = page.locator("#board td.rank").first.bounding_box()
            assert rank["x"] >= 0 and system.bounding_box()["x"] >= rank["x"] + rank["width"] - 1
            # No plotly toolbar over the chart's own buttons.
            assert page.locator("#chart-0 .modebar").count() == 0
            buttons = page.locator("#chart-0 .updatemenu-button").first.bounding_box()
            assert buttons["y"] >= title["y"] + title["height"] - 1
        page.locator("#ranking summary").click()
        assert "Exact ties share a rank" in page.inner_text("#ranking-note")
        shot(page, f"board-paper-rows-{label}")

        # Another judge's board: search, hide a column, open a system from a chart.
        page.goto(f"{live_server.url}/benchmarks/mp-bench/?judge=gpt&group=none")
        page.wait_for_selector('#charts[data-ready="1"]', timeout=30000)
        assert "Lab of Alpha" in page.inner_text("#board")
        page.locator("#columns-menu summary").click()
        page.uncheck('input[data-toggle-col="org"]')
        assert not page.locator("#board th.col-org").is_visible()
        assert not page.locator("#board td.org").first.is_visible()
        page.reload()  # kept in the URL, like the rest of the board's state
        assert "hide=org" in page.url
        assert not page.locator("#board th.col-org").is_visible()
        # The chooser is open while it hides a column.
        page.check('input[data-toggle-col="org"]')
        assert page.locator("#board th.col-org").is_visible()
        page.fill("#board-search", "alp")
        with page.expect_navigation():
            page.press("#board-search", "Enter")
        shown = page.eval_on_selector_all(
            "#board tr[data-system]", "r => r.map(x => x.dataset.system)"
        )
        assert shown == ["Alpha"]
        rank = page.inner_text('#board tr[data-system="Alpha"] td.rank')
        assert rank != "1"  # the board's rank, not "first of what matched"
        shot(page, f"board-search-{label}")
        with page.expect_navigation():
            page.click("#clear-filters")
        page.wait_for_selector('#charts[data-ready="1"]', timeout=30000)
        point = page.locator("#chart-0 .point").first
        point.scroll_into_view_if_needed()
        box = point.bounding_box()
        with page.expect_navigation():
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert "/systems/" in page.url
        shot(page, f"system-from-chart-{label}")

        # An empty filter says so and offers to clear it.
        page.goto(f"{live_server.url}/benchmarks/mp-bench/?judge=gpt&duplex=yes&type=text-llm")
        assert "No row matches these filters." in page.inner_text("#board")
        with page.expect_navigation():
            page.click("#board #clear-filters")
        assert "duplex" not in page.url and page.locator("#board tr[data-system]").count() == 5
        assert not seen["errors"], seen["errors"]
        assert not seen["failed"], seen["failed"]  # no favicon 404, nothing else either
        page.close()


def test_home_and_about_pages_at_both_widths(browser, live_server, rows):
    for label, (width, height) in WIDTHS.items():
        page = browser.new_page(viewport={"width": width, "height": height})
        seen = watch(page)
        page.goto(f"{live_server.url}/")
        card = page.locator('[data-benchmark="mp-bench"]')
        # MP-Bench here is its plug-in's demo release: 18 tasks, and the paper's 14 rows.
        assert card.locator(".tasks").inner_text() == "18"
        assert "14 reported in a paper" in card.inner_text()
        no_page_overflow(page)
        shot(page, f"home-{label}")
        with page.expect_navigation():  # to the end of loading, style sheets included
            card.locator("text=About and how to submit").click()
        page.wait_for_selector("#about")
        no_page_overflow(page)
        assert "Cite this benchmark" in page.inner_text("#cite")
        shot(page, f"about-{label}")
        assert not seen["failed"], seen["failed"]
        page.close()


@pytest.fixture
def demo_board(eager, tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    return benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", name="Demo", is_demo=True
    ).benchmark


@pytest.fixture
def owner(db, django_user_model):
    user = django_user_model.objects.create_user("owner", password="pw")
    team = Team.objects.create(name="Owners", slug="owners")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    user.team = team
    return user


def signed_in(browser, live_server, client, user, viewport):
    client.force_login(user)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return context


def scored(board, tmp_path, owner, *, publish=False):
    path = tmp_path / f"run-{time.monotonic_ns()}.zip"
    demo.write_demo_bundle_zip(path, profile="strong", seed=3)
    submission = submission_create(
        benchmark=board,
        bundle_path=path,
        system_name="Browser Agent",
        judge=board.judges.get(slug="offline"),
        team=owner.team,
        publish=publish,
    )
    submission.refresh_from_db()
    return submission


def test_submit_page_and_owner_actions_at_both_widths(
    browser, live_server, client, demo_board, mpbench_demo, owner, tmp_path
):
    submission = scored(demo_board, tmp_path, owner)
    for label, viewport in WIDTHS.items():
        context = signed_in(browser, live_server, client, owner, viewport)
        page = context.new_page()
        # A benchmark that has not been imported says what to do, with no empty form.
        from evaluation.models import Benchmark

        Benchmark.objects.get_or_create(slug="bare", name="Bare", plugin="mp-bench")
        page.goto(f"{live_server.url}/benchmarks/bare/submit/")
        assert "takes no runs yet" in page.inner_text("#not-imported")
        shot(page, f"submit-not-imported-{label}")
        # The real form: an error names its field; no progress shown before bytes move.
        page.goto(f"{live_server.url}/benchmarks/demo/submit/")
        assert page.locator("#upload-progress-box").is_hidden()
        page.set_input_files("#bundle-file", str(tmp_path / next(tmp_path.glob("run-*.zip")).name))
        # What the browser cannot check itself is checked by the server, and said per field.
        page.eval_on_selector_all(
            "#upload-form [required]", "f => f.forEach(x => x.required = false)"
        )
        page.click("#upload-button")
        page.wait_for_selector("#upload-errors li")
        assert "System name: This field is required." in page.inner_text("#upload-errors")
        assert page.locator("#upload-progress-box").is_hidden()
        no_page_overflow(page)
        shot(page, f"submit-named-error-{label}")

        # Publish, confirmed on its own page.
        page.goto(f"{live_server.url}/submissions/{submission.pk}/")
        actions = page.locator("#owner-actions")
        with page.expect_navigation():
            actions.locator("text=Publish").click()
        assert "Everyone will see it" in page.inner_text("#consequence")
        shot(page, f"confirm-publish-{label}")
        with page.expect_navigation():
            page.click("#confirm")
        assert "Published." in page.inner_text("main p[role=status]")
        with page.expect_navigation():
            page.locator("#owner-actions >> text=Unpublish").click()
        with page.expect_navigation():
            page.click("#confirm")
        no_page_overflow(page)
        shot(page, f"submission-owner-actions-{label}")
        context.close()
    # Deleting, last: asked, then done; the board no longer knows it.
    context = signed_in(browser, live_server, client, owner, WIDTHS["wide"])
    page = context.new_page()
    page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    with page.expect_navigation():
        page.locator("#owner-actions >> text=Delete").click()
    assert "cannot be undone" in page.inner_text("#consequence")
    with page.expect_navigation():
        page.click("#confirm")
    assert page.url.startswith(f"{live_server.url}/benchmarks/demo/")
    assert "Browser Agent" not in page.inner_text("#board")
    context.close()


def test_players_renew_expired_links_and_play_one_at_a_time(
    browser, live_server, client, demo_board, owner, tmp_path, settings
):
    submission = scored(demo_board, tmp_path, owner)
    settings.SIGNED_URL_SECONDS = 3
    task = next(t for t in demo.DEMO_TASKS if t.family == "discussion")
    context = signed_in(browser, live_server, client, owner, WIDTHS["wide"])
    page = context.new_page()
    page.goto(f"{live_server.url}/submissions/{submission.pk}/tasks/{task.task_dir}/")
    response = '[data-floorboard-player][data-name="response.wav"]'
    conversation = '[data-floorboard-player][data-name="all_stitched.wav"]'
    page.wait_for_function(
        "sel => { const p = FloorboardPlayer.get(document.querySelector(sel));"
        " return p && p.duration > 0; }",
        arg=response,
    )
    # The page sits open past its links' lifetime; play still plays, through fresh links.
    page.wait_for_timeout(4000)
    page.click(f"{response} .fb-play")
    page.wait_for_function(
        "sel => document.querySelector(sel + ' audio').currentTime > 0.3", arg=response
    )
    assert (
        page.evaluate(f"FloorboardPlayer.get(document.querySelector('{response}')).renewals") >= 1
    )
    # Starting the conversation pauses the response: one track at a time.
    page.click(f"{conversation} .fb-play")
    page.wait_for_function(
        "sel => document.querySelector(sel + ' audio').currentTime > 0.2", arg=conversation
    )
    assert page.evaluate(f"document.querySelector('{response} audio').paused")
    # A word on the timeline plays its track and pauses the other.
    page.locator(".timeline .lane[data-player] [data-seek]").first.click()
    page.wait_for_timeout(300)
    playing = page.evaluate("() => FloorboardPlayer.players.filter(p => !p.paused).length")
    assert playing == 1
    # Asked for both: they play together, in sync.
    page.check("#play-together")
    page.click(f"{response} .fb-play")
    page.wait_for_function("() => FloorboardPlayer.players.every(p => !p.paused)")
    times = page.evaluate("() => FloorboardPlayer.players.map(p => p.currentTime)")
    assert max(times) - min(times) < 0.5
    shot(page, "task-players-wide")
    context.close()
    phone = signed_in(browser, live_server, client, owner, WIDTHS["phone"])
    page = phone.new_page()
    page.goto(f"{live_server.url}/submissions/{submission.pk}/tasks/{task.task_dir}/")
    no_page_overflow(page)
    shot(page, "task-players-phone")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    no_page_overflow(page)
    shot(page, "submission-phone")
    phone.close()
