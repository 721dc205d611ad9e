"""Two findings of the attack pass, as an adversary would try them again.

A team submitting under another team's system name gets a system of its own: the other team's
row, its system type and its private manifest are never reached. A submission whose requests
match another team's private work is judged from the shared cache (a re-score stays free), but
sees that judgment as its own, used when it was linked: never the other submission's times."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.contrib.auth.models import User

from evaluation.models import Judgment, Membership, Submission, System, TaskJudgment, Team
from evaluation.services import submission_create
from tests.conftest import copy_examples, zip_tree

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


def _bundle(mpbench_dir, tmp_path, name: str, manifest: dict):
    tree = copy_examples(mpbench_dir, tmp_path / name)
    (tree / "manifest.json").write_text(json.dumps(manifest))
    return zip_tree(tree, tmp_path / f"{name}.zip")


def _submit(mpbench, bundle, team, *, system_type: str, publish: bool) -> Submission:
    submission = submission_create(
        benchmark=mpbench,
        bundle_path=bundle,
        system_name="Agent",
        row_group=system_type,
        judge=mpbench.judges.get(slug="offline"),
        allow_partial=True,
        team=team,
        publish=publish,
    )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error
    return submission


def test_another_teams_system_name_reaches_a_system_of_ones_own(
    eager, client, mpbench, mpbench_dir, tmp_path, teams
):
    victims, _ = teams["victims"]
    attackers, attacker = teams["attackers"]
    theirs = _submit(
        mpbench,
        _bundle(mpbench_dir, tmp_path, "v", {"organization": "Victim Lab (private)"}),
        victims,
        system_type="realtime",
        publish=False,
    )
    ours = _submit(
        mpbench,
        _bundle(mpbench_dir, tmp_path, "a", {"organization": "Attacker"}),
        attackers,
        system_type="text-llm",
        publish=True,
    )
    assert ours.system_id != theirs.system_id
    victim_system = System.objects.get(pk=theirs.system_id)
    assert victim_system.team == victims and victim_system.organization == "Victim Lab (private)"
    theirs.refresh_from_db()
    assert theirs.row_group == "realtime"  # not moved to the attacker's group

    client.force_login(attacker)
    # The victim's unpublished system and its manifest stay out of reach.
    assert client.get(f"/api/systems/{victim_system.pk}/").status_code == 404
    page = client.get(f"/systems/{victim_system.pk}/")
    assert page.status_code == 404
    board = client.get("/api/benchmarks/mp-bench/leaderboard/?judge=offline").json()
    shown = [
        (e["system"], e["system_id"])
        for e in board["entries"]
        if not e["flags"]["reported_in_paper"]
    ]
    assert shown == [("Agent", ours.system_id)]
    assert "Victim Lab" not in client.get(f"/api/systems/{ours.system_id}/").content.decode()


def test_a_cache_hit_on_private_work_shows_only_this_submissions_use(
    eager, client, mpbench, mpbench_dir, tmp_path, teams
):
    victims, _ = teams["victims"]
    attackers, attacker = teams["attackers"]
    theirs = _submit(
        mpbench, _bundle(mpbench_dir, tmp_path, "v", {}), victims, system_type="", publish=False
    )
    ours = _submit(
        mpbench, _bundle(mpbench_dir, tmp_path, "a", {}), attackers, system_type="", publish=False
    )
    shared = TaskJudgment.objects.filter(
        task_result__submission=ours, judgment__uses__task_result__submission=theirs
    ).select_related("judgment", "task_result__task")
    assert shared.exists(), "identical requests were not judged once"
    link = shared.first()
    judgment = Judgment.objects.get(pk=link.judgment_id)
    assert judgment.completed_at < ours.created_at  # the victim's call came first

    client.force_login(attacker)
    task_id = link.task_result.task.task_id
    body = client.get(f"/api/submissions/{ours.pk}/tasks/{task_id}/judgments/").json()
    text = json.dumps(body)
    for entry in body["judgments"]:
        assert "completed_at" not in entry and "id" not in entry and "submission" not in entry
        if entry["used_at"] is not None:
            used = datetime.fromisoformat(entry["used_at"].replace("Z", "+00:00"))
            assert used >= ours.created_at
    # The victim's call time, to the microsecond (this run's own use may fall in the same second).
    called = judgment.completed_at.isoformat()
    assert called not in text and called.replace("+00:00", "Z") not in text
    assert f"/submissions/{theirs.pk}/" not in text
