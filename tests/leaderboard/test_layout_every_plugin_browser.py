"""No page scrolls sideways, on any benchmark, at a phone's 390x844 or at 1400x900: for every
registered plug-in (the example one included, so a new benchmark inherits the check), two demo
runs are scored and a rating study of its first item kind is made, and a signed-in staff member
who belongs to a team opens each page a person reaches from the board (home, board, About,
judges, compare and a task compared, system, submission, a task's drill-down, the studies, a new
study, the study's dashboard). Wide content (tables, a 64-character digest) scrolls inside its
own box, which the core's stylesheet gives every table. The header's account links stay in its
bar; the board's charts fill their width; a task's answer text is a box of its own and its
timeline's words are readable. Screenshots are kept in test-artifacts/layout/."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.services import StudyPlan, study_create
from evaluation.benchmarks import registry
from evaluation.models import Membership, Submission, TaskResult, Team
from tests.conftest import REPO, demo_runs_scored, every_plugin_board
from tests.leaderboard.test_anonymity_walk import _offers_comparisons

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]
VIEWPORTS = {"phone": (390, 844), "wide": (1400, 900)}
ARTIFACTS = REPO / "test-artifacts" / "layout"


@pytest.fixture
def walk(request, settings, tmp_path):
    benchmark, plugin = every_plugin_board(request.param, settings, tmp_path, name="layout")
    first, second = demo_runs_scored(benchmark, plugin, tmp_path, count=2)
    assert first.status == second.status == Submission.Status.SCORED
    staff = User.objects.create_user("maintainer", password="pw-maintainer-1234", is_staff=True)
    for name in ("Listening Machines Group", "Conversational Agents Lab"):
        team = Team.objects.create(slug=name.lower().replace(" ", "-"), name=name)
        Membership.objects.create(team=team, user=staff, role=Membership.Role.OWNER)
    kind = plugin.study_kinds[0]
    study = study_create(
        plan=StudyPlan(
            name="Does the offline judge agree with people",
            slug=f"layout-{benchmark.pk}",
            benchmark=benchmark,
            judge=benchmark.judges.get(slug="offline"),
            kind=kind.key,
            strata=(first, second),
            guideline_text="Rate it.",
            per_stratum=3,
            positive_label=kind.labels[0],
            negative_label=kind.labels[1],
        )
    )
    task_id = TaskResult.objects.filter(submission=first).order_by("task__task_id")[0].task.task_id
    board = f"/benchmarks/{benchmark.slug}/"
    pair = f"a={first.pk}&b={second.pk}"
    pages = {
        "home": "/",
        "board": board,
        "about": f"{board}about/",
        "judges": f"{board}judges/",
        "compare": f"{board}compare/?{pair}",
        "compare-task": f"{board}compare/tasks/{task_id}/?{pair}",
        "system": f"/systems/{first.system_id}/",
        "submission": f"/submissions/{first.pk}/",
        "task": f"/submissions/{first.pk}/tasks/{task_id}/",
        "studies": "/studies/",
        "new-study": f"/studies/new/?benchmark={benchmark.pk}",
        "study": f"/studies/{study.slug}/",
    }
    return benchmark, staff, pages, _offers_comparisons(plugin)


def overflow(page) -> int:
    """How far the page reaches past the window's width, in CSS pixels (0: it does not)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize("walk", SLUGS, indirect=True)
def test_no_page_scrolls_sideways_and_the_header_holds_its_links(walk, browser, live_server):
    benchmark, staff, pages, compares = walk
    client = Client()
    client.force_login(staff)
    cookie = {"name": "sessionid", "value": client.cookies["sessionid"].value}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    wide = []
    for viewport, (width, height) in VIEWPORTS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        context.add_cookies([cookie | {"url": live_server.url}])
        page = context.new_page()
        for name, address in pages.items():
            response = page.goto(live_server.url + address)
            # A plug-in without per-task contributions offers no comparison: the page says so.
            expected = 200 if compares or name != "compare" else 400
            assert response.status == expected, (name, address, response.status)
            page.wait_for_load_state("load")
            if (extra := overflow(page)) > 0:
                wide.append(f"{viewport} {name} {address}: {extra} px too wide")
                page.screenshot(
                    path=str(ARTIFACTS / f"{benchmark.plugin}-{name}-{viewport}.png"),
                    full_page=True,
                )
            if name in ("task", "compare-task") and response.status == 200:
                # Answer text sits in a box of its own (an inline bordered span ran over the
                # next row); a timeline's words are readable, not cut to a few letters; audio
                # links renew themselves, so no note asks for a reload.
                inline = page.evaluate(
                    "() => Array.from(document.querySelectorAll('.response-text'))"
                    ".filter(e => getComputedStyle(e).display === 'inline').length"
                )
                assert inline == 0, (viewport, name)
                chips = page.evaluate(
                    "() => Array.from(document.querySelectorAll('.timeline .w'))"
                    ".map(w => w.scrollWidth > w.clientWidth + 1)"
                )
                assert sum(chips) <= len(chips) / 2, (viewport, name, sum(chips), len(chips))
                assert "reload the page to renew" not in page.content()
            if name == "board" and viewport == "wide":
                # Each chart fills the width it is given, not plotly's default 700 px.
                page.wait_for_selector('#charts[data-ready="1"]', timeout=30000)
                widths = page.evaluate(
                    """() => Array.from(document.querySelectorAll('#chart-list .chart')).map(
                         c => [c.clientWidth,
                               c.querySelector('.main-svg').getBoundingClientRect().width])"""
                )
                assert all(abs(box - drawn) <= 2 and box > 700 for box, drawn in widths), widths
            if name == "board":
                # The account links (user, teams, tokens, log out) stay inside the header bar.
                bar = page.locator("header.site").bounding_box()
                for link in page.locator("header.site nav.account > :not(style)").all():
                    box = link.bounding_box()
                    assert box["y"] >= bar["y"] - 0.5, (viewport, link.inner_text())
                    assert box["y"] + box["height"] <= bar["y"] + bar["height"] + 0.5, (
                        viewport,
                        link.inner_text(),
                        box,
                        bar,
                    )
                    assert box["x"] + box["width"] <= width, (viewport, link.inner_text())
                page.screenshot(
                    path=str(ARTIFACTS / f"{benchmark.plugin}-board-{viewport}.png"),
                    full_page=False,
                )
        context.close()
    assert not wide, "\n".join(wide)
