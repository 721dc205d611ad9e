"""Impersonation: any team can declare the system name, organisation and code address of another
team's row. What it cannot take is its own team's name, so every row that is not anonymous says
which team submitted it (page, JSON, CSV, the home page's leader), and a declared organisation
is marked unverified unless staff verified the row. An anonymous row still names no team."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User

from evaluation.identity import ANONYMOUS_NAME
from evaluation.models import Benchmark, Judge, Membership, Submission, System, Team
from tests.leaderboard.test_board_page import mp_results, scored_row

pytestmark = pytest.mark.django_db

UNVERIFIED = (
    '<span class="unverified" title="organisation as declared by the team, not verified">'
    "(unverified)</span>"
)
BOARD = "/benchmarks/teams-bench/"


@pytest.fixture
def rows(db):
    benchmark = Benchmark.objects.create(slug="teams-bench", name="Teams", plugin="mp-bench")
    judge = Judge.objects.create(
        benchmark=benchmark, slug="offline", name="Off", provider="offline"
    )
    genuine_team = Team.objects.create(name="Alpha Lab", slug="alpha-lab")
    impostors = Team.objects.create(name="Mallory Crew", slug="mallory")
    hidden_team = Team.objects.create(name="Quiet Owls", slug="quiet-owls")
    claims = {"organization": "Alpha Lab Inc", "code_url": "https://example.org/alpha-agent"}
    genuine = scored_row(
        benchmark,
        judge,
        "Alpha Agent",
        mp_results(300, 50, 120, 64, 130, 72),
        team=genuine_team,
        **claims,
    )
    Submission.objects.filter(pk=genuine.pk).update(is_verified=True)
    # The same name, organisation and code address, from another team, scoring higher.
    impostor = scored_row(
        benchmark,
        judge,
        "Alpha Agent",
        mp_results(500, 90, 128, 120, 250, 240),
        team=impostors,
        **claims,
    )
    hidden = scored_row(
        benchmark,
        judge,
        "Owl Agent",
        mp_results(200, 40, 100, 50, 120, 60),
        team=hidden_team,
        organization="Owl Institute",
    )
    Submission.objects.filter(pk=hidden.pk).update(is_anonymous=True)
    staff_row = scored_row(benchmark, judge, "House Agent", mp_results(100, 20, 90, 40, 100, 50))
    return {
        "genuine": genuine.pk,
        "impostor": impostor.pk,
        "hidden": hidden.pk,
        "staff": staff_row.pk,
        "hidden_team": hidden_team,
    }


def html_rows(page: str) -> dict[int, str]:
    found = {}
    for chunk in page.split("<tr ")[1:]:
        marker = 'data-submission="'
        if marker in chunk:
            pk = int(chunk.split(marker, 1)[1].split('"', 1)[0])
            found[pk] = chunk.split("</tr>", 1)[0]
    return found


def test_every_named_row_says_which_team_submitted_it(client, rows):
    shown = html_rows(client.get(f"{BOARD}?judge=offline").content.decode())
    impostor, genuine = shown[rows["impostor"]], shown[rows["genuine"]]
    assert "team: Mallory Crew</span>" in impostor
    assert "team: Alpha Lab</span>" in genuine
    # Both claim the organisation: only the staff-verified row's claim stands unmarked.
    assert f"Alpha Lab Inc</span> {UNVERIFIED}" in impostor
    assert UNVERIFIED not in genuine and "unverified" not in genuine
    assert (
        '<span title="organisation checked by the benchmark&#x27;s staff">Alpha Lab Inc</span>'
        in genuine
    )
    assert "team: site staff</span>" in shown[rows["staff"]]
    # The anonymous row names no team and no organisation.
    hidden = shown[rows["hidden"]]
    assert ANONYMOUS_NAME in hidden
    assert "team:" not in hidden and "Quiet Owls" not in hidden and "Owl Institute" not in hidden


def test_the_json_names_the_team_and_whether_the_organisation_was_verified(client, rows):
    data = client.get("/api/benchmarks/teams-bench/leaderboard/?judge=offline").json()
    entries = {e["submission"]: e for e in data["entries"]}
    assert entries[rows["impostor"]]["team"] == "Mallory Crew"
    assert entries[rows["impostor"]]["organization_verified"] is False
    assert entries[rows["impostor"]]["facets"]["organization"] == "Alpha Lab Inc"
    assert entries[rows["genuine"]]["team"] == "Alpha Lab"
    assert entries[rows["genuine"]]["organization_verified"] is True
    assert entries[rows["staff"]]["team"] is None
    hidden = entries[rows["hidden"]]
    assert hidden["system"] == ANONYMOUS_NAME and hidden["team"] is None
    assert hidden["facets"] == {} and hidden["organization_verified"] is False


def test_the_csv_names_the_team_and_whether_the_organisation_was_verified(client, rows):
    text = client.get(f"{BOARD}leaderboard.csv?judge=offline").content.decode()
    by_submission = {int(r["submission"]): r for r in csv.DictReader(io.StringIO(text))}
    expected = {
        rows["impostor"]: ("Mallory Crew", "Alpha Lab Inc", "no"),
        rows["genuine"]: ("Alpha Lab", "Alpha Lab Inc", "yes"),
        rows["staff"]: ("", "", "no"),
        rows["hidden"]: ("", "", "no"),
    }
    got = {
        pk: (r["team"], r["organization"], r["organization_verified"])
        for pk, r in by_submission.items()
    }
    assert got == expected
    assert "Quiet Owls" not in text and "Owl Institute" not in text


def test_the_team_of_an_anonymous_row_sees_its_own_name(client, rows):
    owner = User.objects.create_user("owl", password="pw")
    Membership.objects.create(team=rows["hidden_team"], user=owner, role=Membership.Role.OWNER)
    client.force_login(owner)
    shown = html_rows(client.get(f"{BOARD}?judge=offline").content.decode())
    assert "team: Quiet Owls</span>" in shown[rows["hidden"]]
    data = client.get("/api/benchmarks/teams-bench/leaderboard/?judge=offline").json()
    assert {e["submission"]: e["team"] for e in data["entries"]}[rows["hidden"]] == "Quiet Owls"


def test_the_home_page_names_the_leaders_team(client, rows):
    page = client.get("/").content.decode()
    card = page.split('href="/benchmarks/teams-bench/"', 1)[1].split("</article>", 1)[0]
    assert "Alpha Agent" in card and "team: Mallory Crew" in card
    assert System.objects.filter(name="Alpha Agent").count() == 2
