"""Unpublished work stays with its team on the leaderboard page, its JSON and CSV, its charts,
and the system page: anonymous, outsider, teammate and staff. The rows are written directly
(tests/factories.py): what is shown to whom does not depend on how they were scored."""

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from evaluation.models import Submission
from tests import factories
from tests.leaderboard.test_board_page import mp_results

pytestmark = pytest.mark.django_db

VIEWERS = ["anonymous", "outsider", "teammate", "staff"]
SEES_PRIVATE = {"anonymous": False, "outsider": False, "teammate": True, "staff": True}


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture(scope="module")
def shared_runs(shared_db, shared_people):
    """Once for the module, scored by the offline judge on a board of MP-Bench: a published
    run of Open Agent, a newer unpublished run of it, and an unpublished Secret Agent, all
    submitted by team Lab's owner."""
    lab, users = shared_people
    board = factories.benchmark("mp-bench", slug="mp-bench", name="MP-Bench")

    def submit(name: str, publish: bool, counts: tuple) -> Submission:
        return factories.scored_submission(
            board,
            system=name,
            results=mp_results(*counts),
            team=lab,
            submitted_by=users["owner"],
            published=publish,
        )

    return {
        "open": submit("Open Agent", True, (300, 50, 120, 64, 130, 72)),
        "open_draft": submit("Open Agent", False, (310, 52, 121, 60, 128, 70)),
        "secret": submit("Secret Agent", False, (200, 40, 100, 50, 110, 60)),
    }


def login(client, people, viewer: str):
    _, users = people
    if viewer != "anonymous":
        client.force_login(users[viewer])


@pytest.mark.parametrize("viewer", VIEWERS)
def test_board_json_csv_and_page(client, people, runs, viewer):
    login(client, people, viewer)
    sees = SEES_PRIVATE[viewer]
    data = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=offline").json()
    by_name = {e["system"]: e for e in data["entries"]}
    assert ("Secret Agent" in by_name) == sees
    # The newest run this viewer may see: the team's draft, or the published one.
    expected_open = runs["open_draft"] if sees else runs["open"]
    assert by_name["Open Agent"]["submission"] == expected_open.pk
    assert by_name["Open Agent"]["flags"]["private"] == sees
    if sees:
        assert by_name["Secret Agent"]["flags"]["private"] is True

    page = client.get("/benchmarks/mp-bench/?judge=offline").content.decode()
    assert ('data-system="Secret Agent"' in page) == sees
    assert ("badge private" in page) == sees
    assert (f'href="/submissions/{runs["open_draft"].pk}/"' in page) == sees

    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get("/benchmarks/mp-bench/leaderboard.csv?judge=offline").content.decode()
            )
        )
    )
    assert ("Secret Agent" in [r["system"] for r in rows]) == sees
    assert {r["system"]: r["submission"] for r in rows}["Open Agent"] == str(expected_open.pk)


@pytest.mark.parametrize("viewer", VIEWERS)
def test_charts(client, people, runs, viewer):
    login(client, people, viewer)
    figures = client.get("/benchmarks/mp-bench/charts.json?judge=offline").json()
    labels = [name for trace in figures["figures"][1]["data"] for name in trace["x"]]
    assert ("Secret Agent" in labels) == SEES_PRIVATE[viewer]
    assert figures["points"] == (2 if SEES_PRIVATE[viewer] else 1)


def test_cached_team_charts_never_reach_others(client, people, runs):
    url = "/benchmarks/mp-bench/charts.json?judge=offline"
    login(client, people, "teammate")
    assert "Secret Agent" in client.get(url).content.decode()
    for viewer in ("outsider", "anonymous"):
        client.logout()
        login(client, people, viewer)
        assert "Secret Agent" not in client.get(url).content.decode()
    # Once published, everyone sees it at once: the key follows visibility.
    Submission.objects.filter(pk=runs["secret"].pk).update(is_published=True)
    assert "Secret Agent" in client.get(url).content.decode()


@pytest.mark.parametrize("viewer", VIEWERS)
def test_system_page(client, people, runs, viewer):
    login(client, people, viewer)
    sees = SEES_PRIVATE[viewer]
    secret = client.get(f"/systems/{runs['secret'].system_id}/")
    assert secret.status_code == (200 if sees else 404)
    if sees:
        assert (
            "Secret Agent" in secret.content.decode() and "badge private" in secret.content.decode()
        )
    page = client.get(f"/systems/{runs['open'].system_id}/").content.decode()
    assert f'href="/submissions/{runs["open"].pk}/"' in page
    assert (f'href="/submissions/{runs["open_draft"].pk}/"' in page) == sees


def test_hidden_entries_only_for_staff_and_their_team(client, people, runs):
    Submission.objects.filter(pk=runs["open"].pk).update(is_hidden=True)
    url = "/api/benchmarks/mp-bench/leaderboard/?judge=offline"
    assert client.get(url).json()["entries"] == []
    login(client, people, "outsider")
    assert client.get(url).json()["entries"] == []
    client.logout()
    login(client, people, "staff")
    entries = client.get(url + "&sort=system").json()["entries"]
    assert [e["system"] for e in entries] == ["Open Agent", "Secret Agent"]
    staff_open = entries[0]
    assert staff_open["submission"] == runs["open_draft"].pk
    Submission.objects.filter(pk=runs["open_draft"].pk).delete()
    hidden = client.get(url).json()["entries"][0]
    assert hidden["submission"] == runs["open"].pk
    assert hidden["flags"]["hidden"] is True and hidden["flags"]["private"] is True


def test_viewer_classes_separate_teams(people, runs):
    from django.contrib.auth.models import AnonymousUser

    from evaluation.identity import viewer_for

    def viewer_class(*, user):
        return viewer_for(user).cache_class

    lab, users = people
    loner = User.objects.create_user("dan")
    assert viewer_class(user=AnonymousUser()) == viewer_class(user=loner) == "public"
    assert viewer_class(user=users["teammate"]) == viewer_class(user=users["owner"])
    assert viewer_class(user=users["teammate"]) not in (
        "public",
        viewer_class(user=users["outsider"]),
    )
    assert viewer_class(user=users["staff"]) == "staff"
