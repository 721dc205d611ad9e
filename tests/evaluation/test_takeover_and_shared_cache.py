"""Two findings of the attack pass, as an adversary would try them again.

A team submitting under another team's system name gets a system of its own: the other team's
row, its system type and its private manifest are never reached. A submission whose requests
match another team's private work gets judgments of its own (judgments are shared within a
team only): it never sees the other submission's times, links or judgments."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from evaluation.models import Judgment, Membership, Submission, System, TaskJudgment, Team
from evaluation.services import submission_create
from tests.conftest import toy_upload

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def teams():
    made = {}
    for slug in ("victims", "attackers"):
        team = Team.objects.create(name=slug.title(), slug=slug)
        user = User.objects.create_user(f"{slug}-owner")
        Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
        made[slug] = (team, user)
    return made


def _bundle(tmp_path, name: str, manifest: dict):
    """The example plug-in's answers to three of its six tasks, with ``manifest``."""
    return toy_upload(tmp_path / f"{name}.zip", manifest)


def _submit(toybench, bundle, team, *, system_type: str, publish: bool) -> Submission:
    submission = submission_create(
        benchmark=toybench,
        bundle_path=bundle,
        system_name="Agent",
        row_group=system_type,
        judge=toybench.judges.get(slug="offline"),
        allow_partial=True,
        team=team,
        publish=publish,
    )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error
    return submission


def test_another_teams_system_name_reaches_a_system_of_ones_own(
    eager, client, toybench, tmp_path, teams
):
    victims, _ = teams["victims"]
    attackers, attacker = teams["attackers"]
    theirs = _submit(
        toybench,
        _bundle(tmp_path, "v", {"organization": "Victim Lab (private)"}),
        victims,
        system_type="small",
        publish=False,
    )
    ours = _submit(
        toybench,
        _bundle(tmp_path, "a", {"organization": "Attacker"}),
        attackers,
        system_type="large",
        publish=True,
    )
    assert ours.system_id != theirs.system_id
    victim_system = System.objects.get(pk=theirs.system_id)
    assert victim_system.team == victims and victim_system.organization == "Victim Lab (private)"
    theirs.refresh_from_db()
    assert theirs.row_group == "small"  # not moved to the attacker's group

    client.force_login(attacker)
    # The victim's unpublished system and its manifest stay out of reach.
    assert client.get(f"/api/systems/{victim_system.pk}/").status_code == 404
    page = client.get(f"/systems/{victim_system.pk}/")
    assert page.status_code == 404
    board = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=offline").json()
    shown = [
        (e["system"], e["system_id"])
        for e in board["entries"]
        if not e["flags"]["reported_in_paper"]
    ]
    assert shown == [("Agent", ours.system_id)]
    assert "Victim Lab" not in client.get(f"/api/systems/{ours.system_id}/").content.decode()


def test_requests_matching_another_teams_private_work_get_judgments_of_their_own(
    eager, client, toybench, tmp_path, teams
):
    victims, _ = teams["victims"]
    attackers, attacker = teams["attackers"]
    theirs = _submit(toybench, _bundle(tmp_path, "v", {}), victims, system_type="", publish=False)
    ours = _submit(toybench, _bundle(tmp_path, "a", {}), attackers, system_type="", publish=False)
    theirs_used = Judgment.objects.filter(uses__task_result__submission=theirs)
    ours_used = Judgment.objects.filter(uses__task_result__submission=ours)
    assert ours_used.exists() and theirs_used.exists()
    assert not ours_used.filter(pk__in=theirs_used.values("pk")).exists()
    # Byte-identical requests: the same hashes, each team its own judgment.
    assert set(ours_used.values_list("prompt_sha256", flat=True)) == set(
        theirs_used.values_list("prompt_sha256", flat=True)
    )
    assert all(j.completed_at >= ours.created_at for j in ours_used)

    client.force_login(attacker)
    link = TaskJudgment.objects.filter(task_result__submission=ours, judgment__isnull=False)
    task_id = link.select_related("task_result__task").first().task_result.task.task_id
    text = client.get(f"/api/submissions/{ours.pk}/tasks/{task_id}/judgments/").content.decode()
    assert f"/submissions/{theirs.pk}/" not in text
    for judgment in theirs_used:
        called = judgment.completed_at.isoformat()
        assert called not in text and called.replace("+00:00", "Z") not in text
