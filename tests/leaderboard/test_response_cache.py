"""Whole responses cached for readers without a session (leaderboard/response_cache.py), for
every registered plug-in (the toy plug-in included): a stored board, chart, export or JSON page
is served without a query, and changes at once when a submission is withdrawn, published, shown
anonymously, revealed or a new one is scored, through the services that do it; private rows and
a signed-in reader's header never reach a response stored for anonymous readers. A task page,
whose audio URLs expire, is kept at most half their lifetime.

The board state is kept for five minutes here (the site's default is five seconds; the tests'
settings read it on every request), so only what the services announce can change a page at
once."""

from __future__ import annotations

import re
import time

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evaluation.benchmarks import registry
from evaluation.board_state import board_changed
from evaluation.identity import ANONYMOUS_NAME
from evaluation.models import Membership, Submission, System, Team
from evaluation.services import submission_create
from evaluation.services.work import inline
from leaderboard.accounts.services import api_token_create
from tests import factories
from tests.conftest import demo_runs, demo_runs_scored, every_plugin_board
from tests.leaderboard.conftest import AUDIO_URL

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]
NAME = "Halcyon Bittern"
FRESH = "Fresh Kestrel"


def scored_rows(benchmark, count: int) -> list[Submission]:
    """``count`` published rows (tests/factories.py), every metric of the first at 60, of the
    next at 50, and so on."""
    return [
        factories.scored_submission(
            benchmark,
            system=f"Row {n}",
            results=factories.plugin_results(
                benchmark.plugin, factories.every_metric(benchmark.plugin, 60 - 10 * n)
            ),
        )
        for n in range(count)
    ]


def _board(slug, settings, folder, scored):
    """The board, its shown row (the first of ``scored(benchmark, plugin)``) named NAME and
    owned by team Bittern, and that team's owner; the plug-in's demo files are in ``folder``
    (tests/conftest.py demo_files)."""
    settings.BOARD_STATE_SECONDS = 300
    benchmark, plugin = every_plugin_board(slug, settings, folder, name="cache")
    shown = scored(benchmark, plugin)[0]
    team = Team.objects.create(slug="bittern", name="Bittern Lab")
    owner = User.objects.create_user("bittern-owner", password="pw-owner-1234")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    System.objects.filter(pk=shown.system_id).update(name=NAME, team=team)
    Submission.objects.filter(pk=shown.pk).update(team=team, submitted_by=owner)
    caches["responses"].clear()  # the rows were changed behind the services' backs
    return benchmark, plugin, Submission.objects.get(pk=shown.pk), owner, folder


@pytest.fixture
def board(request, settings, demo_files):
    """Two rows written directly: what the board, its exports and the submission page show."""
    return _board(
        request.param,
        settings,
        demo_files(request.param),
        lambda benchmark, plugin: scored_rows(benchmark, 2),
    )


@pytest.fixture
def uploaded_board(request, settings, demo_files):
    """A demo run scored by the pipeline: a task page reads its submission's upload (and only
    that submission's)."""
    folder = demo_files(request.param)
    return _board(
        request.param,
        settings,
        folder,
        lambda benchmark, plugin: demo_runs_scored(benchmark, plugin, folder, count=1),
    )


def _addresses(slug: str) -> list[str]:
    board = f"/benchmarks/{slug}/"
    return [
        board,
        f"{board}?sort=system",
        f"{board}charts.json",
        f"{board}leaderboard.csv",
        f"/api/benchmarks/{slug}/leaderboard/",
        f"/api/benchmarks/{slug}/leaderboard/?rows=all",
    ]


def _text(client: Client, address: str, **headers) -> str:
    response = client.get(address, **headers)
    assert response.status_code == 200, (address, response.status_code)
    return response.content.decode()


def _shown_everywhere(client: Client, slug: str, name: str) -> list[str]:
    """The addresses whose response does not hold the name."""
    return [address for address in _addresses(slug) if name not in _text(client, address)]


def _submit(benchmark, plugin, folder, *, name: str) -> Submission:
    offline = benchmark.judges.get(slug="offline")
    run = demo_runs(plugin, folder)[0]
    with inline():
        made = submission_create(
            benchmark=benchmark,
            bundle_path=run.path,
            system_name=name,
            row_group=run.row_group,
            judge=offline,
            publish=True,
            options=dict(run.options),
            allow_partial=True,
        )
    return Submission.objects.get(pk=made.pk)


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_a_stored_page_changes_at_once_with_what_it_shows(board):
    benchmark, plugin, shown, owner, folder = board
    slug = benchmark.slug
    visitor = Client()
    assert _shown_everywhere(visitor, slug, NAME) == []
    for address in _addresses(slug):
        with CaptureQueriesContext(connection) as queries:
            _text(visitor, address)
        assert len(queries) == 0, (address, "served again without a query", len(queries))

    team = Client()
    team.force_login(owner)
    manage = f"/submissions/{shown.pk}/manage"
    assert team.post(f"{manage}/unpublish/").status_code == 302
    assert _shown_everywhere(visitor, slug, NAME) == _addresses(slug)  # withdrawn: nowhere

    assert team.post(f"{manage}/publish/").status_code == 302
    assert _shown_everywhere(visitor, slug, NAME) == []

    assert team.post(f"{manage}/anonymize/").status_code == 302
    assert _shown_everywhere(visitor, slug, NAME) == _addresses(slug)
    board_page = _text(visitor, f"/benchmarks/{slug}/")
    assert ANONYMOUS_NAME in board_page

    assert team.post(f"{manage}/reveal/").status_code == 302
    assert _shown_everywhere(visitor, slug, NAME) == []

    fresh = _submit(benchmark, plugin, folder, name=FRESH)
    assert fresh.status == Submission.Status.SCORED
    assert _shown_everywhere(visitor, slug, FRESH) == []


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_private_rows_and_headers_stay_with_their_reader(board):
    benchmark, plugin, shown, owner, folder = board
    slug = benchmark.slug
    team = Client()
    team.force_login(owner)
    assert team.post(f"/submissions/{shown.pk}/manage/unpublish/").status_code == 302
    outsider = User.objects.create_user("kestrel-outsider", password="pw-outsider-1234")
    rival = Client()
    rival.force_login(outsider)
    token = api_token_create(user=owner, name="reads")[1]
    visitor = Client()
    board_page = f"/benchmarks/{slug}/"

    # Read by the team first (its private row, its own header), then by a visitor.
    assert _shown_everywhere(team, slug, NAME) == []
    assert owner.username in _text(team, board_page)
    assert _shown_everywhere(visitor, slug, NAME) == _addresses(slug)
    assert owner.username not in _text(visitor, board_page)
    # Stored for visitors now: the team, a token and another account still get their own.
    assert _shown_everywhere(team, slug, NAME) == []
    api = f"/api/benchmarks/{slug}/leaderboard/?rows=all"
    assert NAME in _text(visitor, api, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert NAME not in _text(visitor, api)
    rival_page = _text(rival, board_page)
    assert outsider.username in rival_page and owner.username not in rival_page
    assert _shown_everywhere(rival, slug, NAME) == _addresses(slug)


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_a_submission_page_is_stored_once_final(board):
    benchmark, plugin, shown, owner, folder = board
    address = f"/submissions/{shown.pk}/"
    visitor = Client()
    assert NAME in _text(visitor, address)
    with CaptureQueriesContext(connection) as queries:
        assert NAME in _text(visitor, address)
    assert len(queries) == 0

    team = Client()
    team.force_login(owner)
    assert team.post(f"/submissions/{shown.pk}/manage/anonymize/").status_code == 302
    page = _text(visitor, address)
    assert NAME not in page and ANONYMOUS_NAME in page
    assert team.post(f"/submissions/{shown.pk}/manage/reveal/").status_code == 302
    assert team.post(f"/submissions/{shown.pk}/manage/unpublish/").status_code == 302
    assert visitor.get(address).status_code == 404
    assert NAME in _text(team, address)  # its team still reads it

    # Being scored again: its progress moves without the board's state, so it is not stored.
    assert team.post(f"/submissions/{shown.pk}/manage/publish/").status_code == 302
    Submission.objects.filter(pk=shown.pk).update(status=Submission.Status.JUDGING)
    board_changed(benchmark_id=benchmark.pk)
    _text(visitor, address)
    with CaptureQueriesContext(connection) as queries:
        assert "judging" in _text(visitor, address).lower()
    assert len(queries) > 0


def test_a_returning_reader_gets_304s(settings, tmp_path):
    """ETag and Last-Modified on the board, its charts and exports; a conditional request
    answers 304 until the board changes, for a visitor (stored) and a signed-in reader of an
    export (validated by its content, never shared: Cache-Control private)."""
    settings.BOARD_STATE_SECONDS = 300
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="etag")
    shown, _ = scored_rows(benchmark, 2)
    owner = User.objects.create_user("etag-owner", is_staff=True)
    slug = benchmark.slug
    visitor = Client()
    member = Client()
    member.force_login(owner)
    for address in _addresses(slug):
        first = visitor.get(address)
        assert first["ETag"] and first["Last-Modified"], address
        assert "public" in first["Cache-Control"]
        again = visitor.get(address, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304 and again.content == b"", address
        since = visitor.get(address, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
        assert since.status_code == 304, address
        # nginx may keep a visitor's page for a moment (docker/nginx.conf), never a member's.
        assert first["X-Accel-Expires"] == "2"
        mine = member.get(address)
        assert "private" in mine["Cache-Control"] and mine["ETag"], address
        assert not mine.has_header("X-Accel-Expires")
        # A signed-in page carries a fresh CSRF mask each time, so only its exports repeat.
        if not mine["Content-Type"].startswith("text/html"):
            assert member.get(address, HTTP_IF_NONE_MATCH=mine["ETag"]).status_code == 304

    tags = {address: visitor.get(address)["ETag"] for address in _addresses(slug)}
    staff = Client()
    staff.force_login(owner)
    assert staff.post(f"/submissions/{shown.pk}/manage/unpublish/").status_code == 302
    for address, tag in tags.items():
        changed = visitor.get(address, HTTP_IF_NONE_MATCH=tag)
        assert changed.status_code == 200 and changed["ETag"] != tag, address


def test_the_proxy_keeps_only_what_the_application_marks_for_visitors():
    from tests.config.test_docker_compose import nginx_directives, nginx_values

    assert nginx_values("proxy_cache") == [["floorboard_pages"]]
    # No time of its own: only X-Accel-Expires (stored visitors' pages) makes nginx keep one.
    assert nginx_values("proxy_cache_valid") == []
    assert nginx_values("proxy_ignore_headers") == []
    for directive in ("proxy_cache_bypass", "proxy_no_cache"):
        assert nginx_values(directive) == [["$floorboard_session", "$http_authorization"]]
    # The session map: a session or messages cookie anywhere in the header, and nothing else.
    ((pattern, value),) = [(n, a) for n, a in nginx_directives() if n.startswith("~")]
    assert value == ["1"]
    session = re.compile(pattern[1:])
    for header in ("sessionid=a1", "csrftoken=x; sessionid=a1", "csrftoken=x; messages=m"):
        assert session.search(header), header
    for header in ("csrftoken=x", "xsessionid=1", "theme=dark; notmessages=2"):
        assert not session.search(header), header


def test_each_rendering_of_the_api_is_stored_apart(settings, tmp_path):
    """A browser's Accept gets the browsable API's HTML, a script's the JSON: neither is
    served the other's stored copy."""
    settings.BOARD_STATE_SECONDS = 300
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="accept")
    scored_rows(benchmark, 1)
    address = f"/api/benchmarks/{benchmark.slug}/leaderboard/"
    visitor = Client()
    for _ in range(2):
        page = visitor.get(address, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
        assert page["Content-Type"].startswith("text/html")
        data = visitor.get(address, HTTP_ACCEPT="application/json")
        assert data["Content-Type"] == "application/json" and data.json()["count"] == 1


def test_a_stored_export_is_served_within_the_apis_rates(settings, monkeypatch, tmp_path):
    """Serving a stored copy costs little, but a client past the API's rates is still refused,
    as the view itself refuses it."""
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    settings.BOARD_STATE_SECONDS = 300
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="rates")
    scored_rows(benchmark, 1)
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "5/minute"},
    }
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", api_settings.DEFAULT_THROTTLE_RATES)
    board = f"/benchmarks/{benchmark.slug}/"
    for address in (
        f"/api/benchmarks/{benchmark.slug}/leaderboard/",
        f"{board}leaderboard.csv",
        f"{board}charts.json",
    ):
        caches["default"].clear()
        visitor = Client()
        assert [visitor.get(address).status_code for _ in range(4)] == [200, 200, 200, 429]
    # The board's page itself has no such rate.
    assert {Client().get(board).status_code for _ in range(5)} == {200}


# --- The task page: a stored copy carries signed audio URLs that expire -----------------------


def _task_address(submission: Submission) -> str:
    """A public task of the submission, one with an audio file where the plug-in's demo has one
    (its page then holds signed URLs)."""
    rows = list(
        submission.task_results.filter(task__held_out=False)
        .select_related("task")
        .order_by("task__task_id")
    )
    heard = [row for row in rows if any(name.endswith(".wav") for name in row.files)]
    row = (heard or rows)[0]
    return f"/submissions/{submission.pk}/tasks/{row.task.task_id}/"


@pytest.mark.parametrize("uploaded_board", SLUGS, indirect=True)
def test_a_task_page_is_stored_once_final_and_changes_with_its_submission(uploaded_board):
    benchmark, plugin, shown, owner, folder = uploaded_board
    address = _task_address(shown)
    visitor = Client()
    assert NAME in _text(visitor, address)
    with CaptureQueriesContext(connection) as queries:
        assert NAME in _text(visitor, address)
    assert len(queries) == 0  # served without the view

    team = Client()
    team.force_login(owner)
    manage = f"/submissions/{shown.pk}/manage"
    assert team.post(f"{manage}/anonymize/").status_code == 302
    page = _text(visitor, address)
    assert NAME not in page and ANONYMOUS_NAME in page
    assert team.post(f"{manage}/reveal/").status_code == 302
    assert NAME in _text(visitor, address)
    assert team.post(f"{manage}/unpublish/").status_code == 302
    assert visitor.get(address).status_code == 404
    assert team.post(f"{manage}/publish/").status_code == 302
    assert NAME in _text(visitor, address)

    # Being scored again: what it shows moves without the board's state, so it is not stored.
    Submission.objects.filter(pk=shown.pk).update(status=Submission.Status.JUDGING)
    board_changed(benchmark_id=benchmark.pk)
    _text(visitor, address)
    with CaptureQueriesContext(connection) as queries:
        _text(visitor, address)
    assert len(queries) > 0
    Submission.objects.filter(pk=shown.pk).update(status=Submission.Status.SCORED)
    board_changed(benchmark_id=benchmark.pk)
    _text(visitor, address)

    # Deleted (withdrawn first, as deleting asks): gone for everyone.
    assert team.post(f"{manage}/unpublish/").status_code == 302
    assert team.post(f"{manage}/delete/").status_code == 302
    assert visitor.get(address).status_code == 404
    assert team.get(address).status_code == 404


@pytest.mark.parametrize("uploaded_board", SLUGS, indirect=True)
def test_a_private_task_page_and_a_readers_header_are_never_stored(uploaded_board):
    benchmark, plugin, shown, owner, folder = uploaded_board
    address = _task_address(shown)
    team = Client()
    team.force_login(owner)
    assert team.post(f"/submissions/{shown.pk}/manage/unpublish/").status_code == 302
    visitor = Client()
    for _ in range(2):  # read by its team first, then by a visitor, twice
        page = _text(team, address)
        assert NAME in page and owner.username in page
        assert visitor.get(address).status_code == 404

    assert team.post(f"/submissions/{shown.pk}/manage/publish/").status_code == 302
    assert owner.username in _text(team, address)
    page = _text(visitor, address)
    assert NAME in page and owner.username not in page
    with CaptureQueriesContext(connection) as queries:
        assert _text(visitor, address) == page
    assert len(queries) == 0  # the stored copy, without the header
    assert owner.username in _text(team, address)


@pytest.mark.parametrize("uploaded_board", SLUGS, indirect=True)
def test_a_stored_task_page_never_outlives_half_its_links_life(
    uploaded_board, settings, monkeypatch
):
    """With links signed for 300 s, a stored task page is served for at most 150 s, and the
    links of a copy served just before then still play (signing and the cache read one clock,
    moved by hand here)."""
    benchmark, plugin, shown, owner, folder = uploaded_board
    settings.SIGNED_URL_SECONDS = 300
    settings.RESPONSE_CACHE_SECONDS = 600
    clock = [time.time()]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    address = _task_address(shown)
    visitor = Client()
    first = _text(visitor, address)

    clock[0] += 149
    with CaptureQueriesContext(connection) as queries:
        stored = _text(visitor, address)
    assert len(queries) == 0 and stored == first
    links = sorted(set(AUDIO_URL.findall(stored)))
    assert links, "every plug-in's demo task has audio"
    for link in links:
        assert visitor.get(link, HTTP_RANGE="bytes=0-15").status_code in (200, 206), link

    clock[0] += 2  # 151 s after it was stored: computed afresh, with links signed now
    with CaptureQueriesContext(connection) as queries:
        fresh = _text(visitor, address)
    assert len(queries) > 0
    assert not set(AUDIO_URL.findall(fresh)) & set(links)
