"""Hostile input from rater pages answers 400 with a message, never 500; and an account cannot
join a study that samples its own team's submissions."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import Membership, Team
from tests.annotation.factories import invite, make_board, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def events_url(client):
    board = make_board(submissions=1, tasks=3)
    study = make_study(board, per_stratum=3, overlap=1, batch_size=3)
    rater = invite(study)
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    state = client.get(reverse("annotation:rate", args=[rater.token])).context["page_state"]
    return state["eventsUrl"]


def event(**fields) -> dict:
    return {"seq": 0, "kind": "play", "player": "response", "t": 10, **fields}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"page": "p", "events": [{"seq": 0, "kind": "play", "t": Infinity}]}',
            "events[0].t is NaN or Infinity",
        ),
        (
            '{"page": "p", "events": [{"seq": 0, "kind": "play", "t": NaN}]}',
            "events[0].t is NaN or Infinity",
        ),
        ('{"page": "p", "events": [], "active_ms": -Infinity}', "active_ms is NaN or Infinity"),
        (
            '{"page": "p", "events": [{"seq": 0, "kind": "seek", "position": NaN}]}',
            "position is NaN",
        ),
        (
            '{"page": "p", "events": [{"seq": 99999999999999, "kind": "play"}]}',
            "seq must be an integer from 0 to 2147483647",
        ),
        (
            '{"page": "p", "events": [{"seq": 1, "kind": "play", "t": 1e300}]}',
            "t must be a number of ms",
        ),
        ('{"page": "p", "positions": {"response": 1e308}}', "positions must map"),
        ("[" * 20_000 + "]" * 20_000, "nests 20,000 levels deep"),
    ],
)
def test_events_with_non_finite_or_huge_numbers_are_a_400(client, events_url, body, message):
    response = client.post(events_url, data=body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["ok"] is False and message in response.json()["error"]


def test_an_account_cannot_join_a_study_of_its_own_teams_work(client, django_user_model):
    board = make_board(submissions=2, tasks=2, audio=False)
    study = make_study(board, slug="open", per_stratum=2, allow_accounts=True)
    team = Team.objects.create(name="Makers", slug="makers")
    own = board.submissions[0]
    own.team = team
    own.save(update_fields=["team"])
    maker = django_user_model.objects.create_user("maker", password="x")
    Membership.objects.create(team=team, user=maker)
    outsider = django_user_model.objects.create_user("outsider", password="x")
    join = reverse("annotation:study-join", args=[study.slug])

    client.force_login(maker)
    refused = client.get(join)
    assert refused.status_code == 403
    assert (
        f"samples responses of your team&#x27;s submissions (#{own.pk})" in refused.content.decode()
    )
    assert not study.raters.filter(user=maker).exists()

    client.force_login(outsider)
    assert client.get(join).status_code == 302
    assert study.raters.filter(user=outsider).exists()
