"""What raters and study staff met, in headless Chromium at 1400x900 and 390x844: a rater page
with no way to the public board, going back to change an answer, a comment and a flag, feedback
after a gold item, the guideline on a key, a break reminder; a dashboard that stays on the page
with long reasons, shows n beside every figure and marks what is too small, and a snapshot page
with the figures without excluded raters. Screenshots in test-artifacts/ux/."""

from __future__ import annotations

import pytest

from annotation import assignment as rating
from annotation.models import Assignment, Item, Rating
from annotation.services import check_item_add, rater_update, snapshot_freeze
from tests.annotation.factories import invite, make_board, make_study
from tests.annotation.test_browser import rater_server  # noqa: F401 (the serial live server)
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = REPO / "test-artifacts" / "ux"
WIDTHS = {"wide": (1400, 900), "phone": (390, 844)}


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def fits(page) -> None:
    width = page.viewport_size["width"]
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width


def at_item(page, number: int) -> None:
    page.wait_for_function(
        "n => document.getElementById('rate-position') &&"
        " document.getElementById('rate-position').textContent === String(n)"
        " && window.floorboardRate",
        arg=number,
    )


def gold_position(seed: int, *, samples: int) -> int:
    """Where a rater with this seed meets the one gold item of a first batch (from 1)."""
    return rating.batch_layout(seed, 1, list(range(samples)), [-1]).index(-1) + 1


def test_a_rater_goes_back_comments_flags_and_learns_from_gold(
    rater_server,  # noqa: F811
    browser,
    settings,
):
    settings.RATER_BREAK_MINUTES = 0.001  # a reminder at once, to see it
    board = make_board(submissions=2, tasks=4, audio=True)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=5, gold_per_batch=1)
    gold_source = board.submissions[0]
    gold_task = (
        gold_source.task_results.exclude(
            pk__in=Item.objects.filter(study=study).values("task_result")
        )
        .filter(task__spec__family="discussion")
        .first()
    )
    check_item_add(
        study=study,
        role=Item.Role.GOLD,
        submission=gold_source,
        task_id=gold_task.task.task_id,
        expected_label="inconsistent",
    )
    rater = invite(study)
    # The walk below answers items 1 and 2 as samples and meets the gold item among 3 to 5: a
    # rater seed whose first batch (four samples, one gold item) puts it there.
    rater.seed = next(seed for seed in range(1000) if gold_position(seed, samples=4) >= 3)
    rater.save(update_fields=["seed"])
    for label, (width, height) in WIDTHS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
        page.goto(f"{rater_server}/rate/{rater.token}/")
        # The raters' own layout: no site header, nothing that leads to the board.
        assert page.locator("header.site").count() == 0
        assert page.locator("header.rater-header").count() == 1
        links = page.eval_on_selector_all("a[href]", "a => a.map(x => x.getAttribute('href'))")
        assert not any(
            link.startswith(("/benchmarks", "/systems", "/submissions")) for link in links
        )
        fits(page)
        shot(page, f"rater-welcome-{label}")
        if label == "wide":
            with page.expect_navigation():
                page.click("#rate-start")
            at_item(page, 1)
            gold_at = Assignment.objects.get(rater=rater, item__role=Item.Role.GOLD).position
            assert gold_at >= 3, gold_at
            # G opens the guideline, and G again closes it.
            page.keyboard.press("g")
            assert page.locator("#guideline").get_attribute("open") is not None
            page.keyboard.press("g")
            assert page.locator("#guideline").get_attribute("open") is None
            # Work long enough and a break is suggested (and can be put off).
            page.evaluate("() => window.floorboardRate.checkBreak()")
            assert page.locator("#break-reminder").is_visible()
            page.click("#break-dismiss")
            assert page.locator("#break-reminder").is_hidden()
            # Item 1: label, comment, flag, submit.
            page.keyboard.press("1")
            page.keyboard.press("n")
            page.keyboard.type("The second speaker is cut off.")
            page.locator("#rate-comment").blur()
            page.keyboard.press("f")
            assert page.locator("#rate-flag").is_checked()
            shot(page, "rater-comment-flag-wide")
            page.keyboard.press("Enter")
            at_item(page, 2)
            # Item 2: answer, then go back (B) and change item 1's answer.
            page.keyboard.press("2")
            page.keyboard.press("Enter")
            at_item(page, 3)
            with page.expect_navigation():
                page.keyboard.press("b")
            assert "already answered" in page.inner_text("#review-note")
            assert (
                page.locator(".label-choice[aria-pressed=true]").get_attribute("data-value")
                == "inconsistent"
            )
            with page.expect_navigation():
                page.keyboard.press("b")
            at_item(page, 1)
            assert page.locator("#rate-comment").input_value() == "The second speaker is cut off."
            page.keyboard.press("2")
            with page.expect_navigation():
                page.keyboard.press("Enter")  # saved, on to the next answered item
            assert "already answered" in page.inner_text("#review-note")
            with page.expect_navigation():
                page.click("#rate-forward")
            at_item(page, 3)
            shot(page, "rater-back-in-batch-wide")
            # On through the batch; the gold item says what was expected.
            saw_feedback = False
            for number in range(3, 6):
                at_item(page, number)
                page.keyboard.press("1")
                page.keyboard.press("Enter")
                feedback = page.locator("#check-feedback")
                try:
                    feedback.wait_for(state="visible", timeout=1500)
                except Exception:  # not the gold item: the page moved on
                    continue
                saw_feedback = True
                assert "Expected “Inconsistent”; you chose “Consistent”" in feedback.inner_text()
                shot(page, "rater-gold-feedback-wide")
                with page.expect_navigation():
                    page.keyboard.press("Enter")
            assert saw_feedback
            page.wait_for_selector("text=Batch 1 is done")
            assert page.locator("#nothing-left").is_visible()  # no empty batch on offer
            assert page.locator("#rate-start").count() == 0
            shot(page, "rater-nothing-left-wide")
        assert not errors, errors
        context.close()
    first = Rating.objects.get(rater=rater, assignment__position=1)
    assert first.label == "inconsistent" and first.revised_at is not None
    assert first.comment == "The second speaker is cut off." and first.flagged
    assert first.label_changes == 1


def test_dashboard_and_snapshot_pages_at_both_widths(rater_server, browser, client):  # noqa: F811
    from django.contrib.auth import get_user_model

    board = make_board(submissions=3, tasks=3, audio=False)
    study = make_study(board, per_stratum=1, overlap=3, batch_size=3)
    raters = invite(study, 3)
    for rater in raters:
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    # One rater excluded: the snapshot shows the figures without them too.
    rater_update(rater=raters[0], is_excluded=True)
    snapshot = snapshot_freeze(study=study)
    staff = get_user_model().objects.create_user("boss", is_staff=True)
    client.force_login(staff)
    cookie = {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": rater_server}
    for label, (width, height) in WIDTHS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        context.add_cookies([cookie])
        page = context.new_page()
        page.goto(f"{rater_server}/studies/{study.slug}/")
        if label == "wide":
            fits(page)  # a long "undefined (...)" reason wraps in its cell
        progress = page.inner_text("#progress-ratings")
        assert "from 3 raters who rated, of 3 invited" in progress
        figures = page.inner_text("table.figures")
        assert "n=" in figures and "too few to mean anything" in figures
        assert "1 items" not in page.inner_text("main")
        shot(page, f"study-dashboard-{label}")
        page.goto(f"{rater_server}/studies/{study.slug}/snapshots/{snapshot.sha256}/")
        assert page.locator("#without-excluded").is_visible()
        assert "Rater 1" in page.inner_text("#without-excluded")
        shot(page, f"study-snapshot-{label}")
        context.close()
    # Signed out, the study pages send to the site's own login.
    anonymous = browser.new_page()
    anonymous.goto(f"{rater_server}/studies/")
    assert "/accounts/login/" in anonymous.url and "/admin/" not in anonymous.url
    anonymous.close()
