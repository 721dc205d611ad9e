"""A queued submission's page when no worker runs, for every registered plug-in, in headless
Chromium at 1400x900 and 390x844: the notice is shown and read, the page does not scroll
sideways, nothing fails in the console or the network, and the notice goes once a worker beats.
Screenshots are kept in test-artifacts/ux/."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evaluation.benchmarks import registry
from evaluation.models import Benchmark, Submission, System, WorkerBeat
from tests.leaderboard.test_ux_browser import WIDTHS, no_page_overflow, shot, watch

pytestmark = pytest.mark.django_db(transaction=True)

NOTICE = "No worker is running: none has been seen yet."


@pytest.mark.parametrize("slug", sorted(registry()))
def test_a_queued_page_says_no_worker_runs_at_both_widths(browser, live_server, slug):
    plugin = registry()[slug]
    board = Benchmark.objects.create(slug=f"{slug}-board", name=plugin.name, plugin=slug)
    queued = Submission.objects.create(
        benchmark=board,
        system=System.objects.create(name=f"{plugin.name} waiting"),
        status="queued",
        is_published=True,
    )
    url = f"{live_server.url}/submissions/{queued.pk}/"
    for width, (w, h) in WIDTHS.items():
        page = browser.new_page(viewport={"width": w, "height": h})
        seen = watch(page)
        page.goto(url)
        notice = page.locator(".no-worker")
        assert notice.is_visible()
        assert NOTICE in " ".join(notice.inner_text().split())
        no_page_overflow(page)
        shot(page, f"no-worker-{slug}-{width}")
        assert seen == {"errors": [], "failed": []}
        page.close()

    now = timezone.now()
    WorkerBeat.objects.create(worker="w:1", queue="floorboard", started_at=now, seen_at=now)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    assert page.locator(".no-worker").count() == 0
    page.close()
