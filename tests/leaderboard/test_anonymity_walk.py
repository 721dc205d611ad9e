"""A submission shown anonymously gives nothing of itself away, on any benchmark: for every
registered plug-in (the toy plug-in included), two demo systems are scored and published, one
is shown anonymously by its team, and every response a visitor or another team's member can
reach (pages, pickers, compare, API, CSV and JSON exports, charts) is read for its system
name, team, organisation, manifest text, run configuration, contamination note and bundle
digest. The board and its charts are read before the switch too, so a cached copy holding the
real name would be served after it."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.benchmarks import registry
from evaluation.benchmarks.base import BenchmarkPlugin
from evaluation.identity import ANONYMOUS_NAME
from evaluation.models import Membership, Submission, System, TaskResult, Team
from tests.conftest import demo_runs_scored, every_plugin_board

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]

SECRETS = {
    "name": "Zephyrine Sentinel",
    "team": "Quillfeather Lab",
    "organisation": "Marrowgate Institute",
    "manifest": "umbral-manifest-text",
    "run_config": "umbral-model-x9",
    "contamination note": "umbral-contamination-note",
}


@pytest.fixture
def board(request, settings, demo_files):
    folder = demo_files(request.param)
    benchmark, plugin = every_plugin_board(request.param, settings, folder, name="walk")
    secret, other = demo_runs_scored(benchmark, plugin, folder, count=2)
    assert secret.status == other.status == Submission.Status.SCORED
    team = Team.objects.create(slug="quill", name=SECRETS["team"])
    owner = User.objects.create_user("owner", password="pw-owner-1234")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    System.objects.filter(pk=secret.system_id).update(
        name=SECRETS["name"],
        organization=SECRETS["organisation"],
        team=team,
        description=SECRETS["manifest"],
        paper_url="https://example.org/umbral-paper",
        code_url="https://example.org/umbral-code",
    )
    Submission.objects.filter(pk=secret.pk).update(
        team=team,
        submitted_by=owner,
        manifest={"organization": SECRETS["organisation"], "description": SECRETS["manifest"]},
        run_config={"model": SECRETS["run_config"], "input_modality": "audio"},
        contamination="no",
        contamination_note=SECRETS["contamination note"],
    )
    secret.refresh_from_db()
    outsider = User.objects.create_user("outsider", password="pw-outsider-1234")
    rivals = Team.objects.create(slug="rivals", name="Rivals")
    Membership.objects.create(team=rivals, user=outsider, role=Membership.Role.OWNER)
    return benchmark, secret, other, owner, outsider


def _addresses(benchmark, secret, other) -> list[str]:
    slug = benchmark.slug
    task_id = TaskResult.objects.filter(submission=secret).values_list("task__task_id", flat=True)[
        0
    ]
    pair = f"a={secret.pk}&b={other.pk}"
    board = f"/benchmarks/{slug}/"
    return [
        "/",
        board,
        f"{board}?sort=system",
        f"{board}?sort=system&desc=1",
        f"{board}?q=Anonymous",
        f"{board}?in=audio",
        f"{board}?contamination=no",
        f"{board}leaderboard.csv",
        f"{board}charts.json",
        f"{board}about/",
        f"{board}judges/",
        f"{board}compare/",
        f"{board}compare/?{pair}",
        f"{board}compare/?b={secret.pk}&a={other.pk}",
        f"{board}compare/tasks/{task_id}/?{pair}",
        f"/api/benchmarks/{slug}/leaderboard/",
        f"/api/benchmarks/{slug}/compare/?{pair}",
        f"/api/benchmarks/{slug}/",
        f"/api/submissions/?benchmark={slug}",
        "/api/submissions/",
        f"/api/submissions/{secret.pk}/",
        f"/api/submissions/{secret.pk}/tasks/",
        "/api/systems/",
        f"/submissions/{secret.pk}/",
        f"/submissions/{secret.pk}/outcomes.csv",
        f"/submissions/{secret.pk}/outcomes.json",
        f"/submissions/{secret.pk}/tasks/{task_id}/",
    ]


def _offers_comparisons(plugin) -> bool:
    kind = type(plugin)
    return (
        kind.metric_contributions is not BenchmarkPlugin.metric_contributions
        or kind.task_contributions is not BenchmarkPlugin.task_contributions
    )


def _read(client: Client, address: str, *, compares: bool = True) -> str:
    response = client.get(address)
    # A plug-in without per-task contributions offers no comparison: the page says so (400).
    expected = 400 if not compares and "compare/?" in address else 200
    assert response.status_code == expected, (address, response.status_code)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode()


def _leaks(text: str, secret: Submission) -> list[str]:
    found = [label for label, value in SECRETS.items() if value in text]
    if secret.bundle_sha256 and secret.bundle_sha256[:12] in text:
        found.append("bundle digest")
    return found


@pytest.mark.parametrize("board", SLUGS, indirect=True)
def test_an_anonymous_submission_gives_nothing_of_itself_away(board):
    benchmark, secret, other, owner, outsider = board
    compares = _offers_comparisons(registry()[benchmark.plugin])
    addresses = _addresses(benchmark, secret, other)
    visitor = Client()
    # Cached before the switch: the board's table and the charts hold the real name now.
    warm = [f"/benchmarks/{benchmark.slug}/", f"/benchmarks/{benchmark.slug}/charts.json"]
    assert all(SECRETS["name"] in _read(visitor, address) for address in warm)

    team = Client()
    team.force_login(owner)
    answer = team.post(f"/submissions/{secret.pk}/manage/anonymize/")
    assert answer.status_code == 302
    assert Submission.objects.get(pk=secret.pk).is_anonymous

    rival = Client()
    rival.force_login(outsider)
    for client in (visitor, rival):
        for address in addresses:
            text = _read(client, address, compares=compares)
            assert not _leaks(text, secret), (address, _leaks(text, secret))
        board_json = json.loads(_read(client, f"/api/benchmarks/{benchmark.slug}/leaderboard/"))
        assert ANONYMOUS_NAME in json.dumps(board_json)  # the row is there, under its shown name
        assert f"/systems/{secret.system_id}/" not in _read(client, "/api/systems/")
        assert client.get(f"/systems/{secret.system_id}/").status_code in (200, 404)
        assert not _leaks(client.get(f"/systems/{secret.system_id}/").content.decode(), secret)

    # Its team still reads all of it: the walk above reads responses that could show it.
    shown_to_team = _read(team, f"/api/submissions/{secret.pk}/")
    assert SECRETS["run_config"] in shown_to_team and SECRETS["name"] in shown_to_team
    assert SECRETS["name"] in _read(team, f"/benchmarks/{benchmark.slug}/compare/", compares=True)

    # Revealed: the board and charts say the name again at once.
    team.post(f"/submissions/{secret.pk}/manage/reveal/")
    assert all(SECRETS["name"] in _read(visitor, address) for address in warm)
