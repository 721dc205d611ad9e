"""The whole path a researcher, a study owner and a rater take, for every registered plug-in (the
example plug-in included, so a new benchmark inherits it), in headless Chromium against a live
server that submits and scores for real (the pipeline runs in the server's process, as the
embedded default's one-process site does; the offline judge):

About page → its example upload downloaded → submitted through the browser form with the
plug-in's own options and file type → scored → its row on the board → its submission page with the
run configuration → a task's drill-down, each clip the plug-in names for it answering ranges and
seeking (the example plug-in speaks its answers) → compared with another system, overall and on a
slice, a number in every cell → shown anonymously, after which no page, picker, chart, export or
API response a visitor reads holds its name → a rating study of each of the plug-in's item
kinds, and a calibration study of its first calibrated metric, made through the form, a rater
invited from the dashboard rating five items with the keyboard, the dashboard (with its
calibration table) → every export downloaded → the board's human-calibrated view and the
submission page's calibrated numbers.

Every page the walk meets is then opened at 1400x900 and 390x844, its charts drawn where it has
any: none scrolls sideways (tables scroll in their own box), none logs an error, no request
fails. Screenshots are kept in test-artifacts/walk/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from annotation.models import Study
from evaluation.benchmarks import registry
from evaluation.calibration import calibrated_columns
from evaluation.models import CalibratedScore, Membership, Submission, TaskResult, Team
from leaderboard.selectors_submissions import task_page_context
from tests.annotation.test_browser import rater_server  # noqa: F401 (the serial live server)
from tests.conftest import REPO, demo_runs_scored, every_plugin_board
from tests.leaderboard.test_calibrated_every_plugin import (
    calibrated_metric,
    judge_value,
    stored_key,
)
from tests.leaderboard.test_ux_browser import watch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

SLUGS = [*sorted(registry()), "toy-bench"]
ARTIFACTS = REPO / "test-artifacts" / "walk"
WIDTHS = {"wide": (1400, 900), "phone": (390, 844)}
NAME = "Walkthrough Agent"
RATED = 5
# The comparison's columns that hold numbers (the test and what is behind it are words).
NUMBERS = ("A", "B", "A − B", "95% interval of A − B", "p", "n")


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def signed_in(browser, server: str, user, viewport=WIDTHS["wide"]):
    client = Client()
    client.force_login(user)
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, accept_downloads=True
    )
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": server}]
    )
    return context


@pytest.fixture
def walk(request, settings, tmp_path, eager):
    """(benchmark, plug-in, owner, another scored and published system's submission)."""
    cache.clear()
    benchmark, plugin = every_plugin_board(request.param, settings, tmp_path, name="walk")
    other = demo_runs_scored(benchmark, plugin, tmp_path / "others", count=1)[0]
    owner = User.objects.create_user("walker", password="pw-walker-1234", is_staff=True)
    team = Team.objects.create(name="Walkers", slug="walkers")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    return benchmark, plugin, owner, other


def _submit_through_the_form(page, server: str, benchmark, example: Path) -> Submission:
    page.goto(f"{server}/benchmarks/{benchmark.slug}/submit/")
    accepted = page.get_attribute("#bundle-file", "accept") or ""
    suffix = "".join(example.suffixes)
    assert any(suffix.endswith(s) for s in accepted.split(",")), (accepted, suffix)
    page.fill("#id_system_name", NAME)
    if page.locator("#id_judge").count():
        page.select_option("#id_judge", "offline")
    if page.locator("#id_allow_partial").count():
        page.check("#id_allow_partial")
    page.check("#id_publish")
    # The plug-in's own options are on the form, each with its help; their defaults are kept.
    for option in registry()[benchmark.plugin].upload.options:
        field = page.locator(f"#id_option_{option.name}")
        assert field.count() == 1, option.name
        assert option.help[:40] in page.inner_text("#upload-form")
    page.set_input_files("#bundle-file", str(example))
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=120_000)
    submission = Submission.objects.get(system__name=NAME)
    assert submission.status == Submission.Status.SCORED, submission.error
    return submission


def _audio_plays(page) -> int:
    """Every player of the page answers a range request with 206 and seeks; how many."""
    sources = page.eval_on_selector_all(
        "audio", "players => players.map(p => p.currentSrc || p.src).filter(Boolean)"
    )
    for source in sources[:2]:
        response = page.request.get(source, headers={"Range": "bytes=0-99"})
        assert response.status == 206, (source, response.status)
        assert len(response.body()) == 100
    if sources:
        seeked = page.evaluate(
            """() => new Promise((done, fail) => {
                const player = document.querySelector('audio');
                const seek = () => { player.currentTime = Math.min(0.5, player.duration / 2); };
                player.addEventListener('seeked', () => done(player.currentTime), {once: true});
                player.addEventListener('error', () => fail('audio error'), {once: true});
                if (player.readyState >= 1) seek();
                else player.addEventListener('loadedmetadata', seek, {once: true});
                player.load && player.readyState < 1 && player.load();
            })"""
        )
        assert seeked > 0
    return len(sources)


def _every_cell_has_a_number(page, table: str, columns: tuple[str, ...] = ()) -> None:
    """Every row's cells (those under ``columns``, by header; else all) hold a number, or the
    row says why not (too few tasks for a test or an interval, or none in the metric)."""
    headers = [" ".join(h.split()) for h in page.locator(f"{table} thead th").all_inner_texts()]
    wanted = [i for i, h in enumerate(headers) if not columns or h in columns]
    rows = page.locator(f"{table} tbody tr")
    assert rows.count() > 0, table
    for text in rows.all_inner_texts():
        cells = text.split("\t")
        empty = [headers[i] for i in wanted if i > 0 and not re.search(r"\d", cells[i])]
        assert not empty or "below" in text or "no units" in text, (table, empty, text)


def _study_through_the_form(
    page, server: str, benchmark, kind, runs, *, calibrates: str = ""
) -> Study:
    """A study of the kind made through the staff form: a calibration study of the metric
    column ``calibrates`` when given, else an agreement study."""
    slug = f"walk-{'cal-' if calibrates else ''}{kind.key}".replace("_", "-")[:50]
    page.goto(f"{server}/studies/new/?benchmark={benchmark.pk}&kind={kind.key}")
    form = page.locator("#study-form")
    form.locator("input[name=name]").fill(f"Walk study of {kind.label}")
    form.locator("input[name=slug]").fill(slug)
    if calibrates:
        form.locator("select[name=calibrated_metric]").select_option(calibrates)
    if form.locator("input[name=rater_title]").count():
        form.locator("input[name=rater_title]").fill(f"Rate {kind.label.lower()}")
    form.locator("select[name=judge]").select_option(str(benchmark.judges.get(slug="offline").pk))
    for run in runs:
        form.locator(f"input[name=strata][value='{run.pk}']").check()
    form.locator("input[name=per_stratum]").fill("3")  # a demo run has a handful of tasks
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    errors = page.locator("#study-form .errorlist").all_inner_texts()
    assert not errors, errors
    return Study.objects.get(slug=slug)


def _rate_with_the_keyboard(browser, invite_url: str, count: int) -> None:
    rater = browser.new_context(viewport={"width": 1400, "height": 900})
    page = rater.new_page()
    seen = watch(page)
    page.goto(invite_url)
    if page.locator("#rate-start").count():
        with page.expect_navigation():
            page.keyboard.press("Enter")  # the start button has the focus
    for number in range(1, count + 1):
        page.wait_for_function(
            "n => document.getElementById('rate-position') &&"
            " document.getElementById('rate-position').textContent === String(n)"
            " && window.floorboardRate",
            arg=number,
        )
        page.keyboard.press("1")
        page.keyboard.press("Enter")
    assert seen == {"errors": [], "failed": []}, seen
    rater.close()


@pytest.mark.parametrize("walk", SLUGS, indirect=True)
def test_the_whole_walk_for_every_plugin(walk, browser, rater_server, tmp_path):  # noqa: F811
    benchmark, plugin, owner, other = walk
    server = rater_server
    context = signed_in(browser, server, owner)
    page = context.new_page()
    seen = watch(page)
    visited: list[str] = []

    # About → its example upload.
    about = f"{server}/benchmarks/{benchmark.slug}/about/"
    page.goto(about)
    visited.append(about)
    assert "Cite this benchmark" in page.inner_text("#cite")
    with page.expect_download() as download:
        page.click("#example-upload")
    example = tmp_path / download.value.suggested_filename
    download.value.save_as(example)

    # Submitted through the form, scored, on the board.
    submission = _submit_through_the_form(page, server, benchmark, example)
    visited.append(f"{server}/benchmarks/{benchmark.slug}/submit/")
    page_url = f"{server}/submissions/{submission.pk}/"
    assert "Status: scored" in page.inner_text("p.status")
    assert page.locator("#run-config").count() == 1
    visited.append(page_url)
    board = f"{server}/benchmarks/{benchmark.slug}/"
    page.goto(board)
    visited.append(board)
    assert NAME in page.inner_text("#board")

    # A task's drill-down, its audio where the plug-in has clips: every clip the plug-in names
    # for the task has a player that answers ranges and seeks (the example plug-in's included).
    page.goto(page_url)
    first_task = page.locator("#tasks table a").first.get_attribute("href")
    task_url = f"{server}{first_task}"
    page.goto(task_url)
    visited.append(task_url)
    task_id = first_task.rstrip("/").rsplit("/", 1)[1]
    declared = task_page_context(
        task_result=TaskResult.objects.select_related("task", "submission__benchmark").get(
            submission=submission, task__task_id=task_id
        )
    )["clips"]
    assert _audio_plays(page) == len(declared), (task_id, declared)
    if plugin.slug == "toy-bench":
        assert declared, "the example plug-in's example upload has its answers spoken"

    # Compared with another system, overall and on a slice.
    compare = f"{server}/benchmarks/{benchmark.slug}/compare/?a={submission.pk}&b={other.pk}"
    page.goto(compare)
    visited.append(compare)
    _every_cell_has_a_number(page, "#compare-table", NUMBERS)
    if page.locator("#slice-table").count():
        _every_cell_has_a_number(page, "#slice-table")
        sliced = page.locator("#slice-table tbody a").first.get_attribute("href")
        page.goto(f"{server}/benchmarks/{benchmark.slug}/compare/{sliced}")
        visited.append(page.url)
        _every_cell_has_a_number(page, "#compare-table", NUMBERS)

    # Every export: the board's and the submission's.
    for url, links in ((board, "#export-csv, #export-json"), (page_url, "#downloads a")):
        page.goto(url)
        exports = page.eval_on_selector_all(links, "found => found.map(a => a.href)")
        assert len(exports) == 2, (url, exports)
        for href in exports:
            response = page.request.get(href)
            assert response.status == 200 and response.body(), href

    # Rating studies: one of each item kind, and a calibration study of the plug-in's first
    # calibrated metric, five items rated by an invited rater.
    runs = [submission, other]
    studies = [(kind, "") for kind in plugin.study_kinds]
    if plugin.calibrated_metrics:
        column, declared, _ = calibrated_columns(plugin)[0]
        studies.append((plugin.study_kind(declared.study_kind), column))
    for kind, calibrates in studies:
        study = _study_through_the_form(page, server, benchmark, kind, runs, calibrates=calibrates)
        dashboard = f"{server}/studies/{study.slug}/"
        page.goto(dashboard)
        with page.expect_navigation():
            page.click("button[name=status][value=open]")
        invites = page.locator("form[action$='/invites/']")
        invites.locator("input[name=name]").fill("Walk rater")
        with page.expect_navigation():
            invites.locator("button[type=submit]").click()
        page.wait_for_selector("input.invite")
        # The link names the site's configured address; the rater opens it on this server.
        invite = re.sub(
            r"^https?://[^/]+", server, page.locator("input.invite").first.input_value()
        )
        _rate_with_the_keyboard(browser, invite, min(RATED, study.items.count()))
        page.goto(dashboard)
        visited.append(dashboard)
        assert "from 1 rater who rated" in page.inner_text("#progress-ratings")
        if calibrates:
            # The calibration table: a row per submission with what its labels give, and the
            # labels each needs for the target width.
            plan = page.locator("#calibration-plan tbody tr")
            assert plan.count() == len(runs), page.inner_text("#calibration-plan")
            assert CalibratedScore.objects.filter(
                metric=calibrates, submission__in=runs
            ).count() == len(runs)
        exports = page.eval_on_selector_all(
            "a[href$='ratings.csv'], a[href$='ratings.json']", "found => found.map(a => a.href)"
        )
        assert len(exports) == 2, exports
        for href in exports:
            response = page.request.get(href)
            assert response.status == 200 and response.body(), href

    # Shown anonymously: a visitor meets its name nowhere.
    page.goto(f"{server}/submissions/{submission.pk}/manage/anonymize/")
    with page.expect_navigation():
        page.click("#confirm")
    visitor = browser.new_context()
    looking = visitor.new_page()
    for url in (
        board,
        f"{server}/benchmarks/{benchmark.slug}/compare/",
        compare,
        page_url,
        f"{server}/benchmarks/{benchmark.slug}/leaderboard.csv",
        f"{server}/benchmarks/{benchmark.slug}/charts.json",
        f"{server}/api/benchmarks/{benchmark.slug}/leaderboard/",
        f"{server}/api/submissions/{submission.pk}/",
    ):
        response = looking.request.get(url)
        assert NAME not in response.text(), url
    visitor.close()
    context.close()
    assert seen == {"errors": [], "failed": []}, seen

    # Human-calibrated numbers on both rows (as a calibration study writes them): the board's
    # calibrated view, ranked by them where the benchmark ranks, joins the pages below.
    submission.refresh_from_db()
    metric = calibrated_metric(plugin)
    for row, (value, needed) in ((submission, (62.5, 0)), (other, (None, 6))):
        CalibratedScore.objects.update_or_create(
            submission=row,
            judge=submission.judge,
            metric=stored_key(plugin, metric),
            defaults=dict(
                study_id=1,
                study_name="Walk calibration",
                population=120,
                labelled=30,
                labels_needed=needed,
                judge_value=judge_value(row, submission.judge, metric),
                value=value,
                low=None if value is None else value - 9.5,
                high=None if value is None else value + 8.25,
                bias=None if value is None else -7.5,
                bias_low=None if value is None else -15.0,
                bias_high=None if value is None else 0.5,
            ),
        )
    ranked = "&rank_by=calibrated" if plugin.rank_keys else ""
    calibrated = f"{board}?judge={submission.judge.slug}&calibrated={metric.key}{ranked}"
    visited += [calibrated, page_url]

    # Every page of the walk at both widths.
    for label, viewport in WIDTHS.items():
        context = signed_in(browser, server, owner, viewport)
        for number, url in enumerate(visited):
            page = context.new_page()
            seen = watch(page)
            page.goto(url)
            if page.locator("#charts").count():
                page.wait_for_selector('#charts[data-ready="1"]', timeout=30_000)
            width = page.viewport_size["width"]
            scroll = page.evaluate("document.scrollingElement.scrollWidth")
            assert scroll <= width, f"{url} is {scroll} px wide at {width} px"
            assert seen == {"errors": [], "failed": []}, (url, seen)
            if url == calibrated:
                assert "needs 6 more labels" in page.inner_text("#board"), url
            shot(page, f"{plugin.slug}-{number:02d}-{label}")
            page.close()
        context.close()
