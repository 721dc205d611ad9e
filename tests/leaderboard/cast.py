"""The cast of the board tests: team Lab (alice owns it, bob is a member), team Rivals (carol),
and staff (sam)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User

from evaluation.models import Benchmark, Membership, Submission, Team
from evaluation.services import submission_create
from tests.conftest import zip_tree


def lab_and_rivals() -> tuple[Team, dict[str, User]]:
    """Team Lab and its people by role: owner, teammate, outsider (of Rivals), staff."""
    lab = Team.objects.create(name="Lab", slug="lab")
    rivals = Team.objects.create(name="Rivals", slug="rivals")
    users = {
        "owner": User.objects.create_user("alice"),
        "teammate": User.objects.create_user("bob"),
        "outsider": User.objects.create_user("carol"),
        "staff": User.objects.create_user("sam", is_staff=True),
    }
    Membership.objects.create(team=lab, user=users["owner"], role=Membership.Role.OWNER)
    Membership.objects.create(team=lab, user=users["teammate"])
    Membership.objects.create(team=rivals, user=users["outsider"])
    return lab, users


def lab_submit(
    benchmark: Benchmark, bundle: Path, *, name: str, people, publish: bool
) -> Submission:
    """``bundle`` submitted by team Lab's owner under the offline judge, scored: the caller
    runs the stages in this process (scoring_here, or eager)."""
    lab, users = people
    submission = submission_create(
        benchmark=benchmark,
        bundle_path=bundle,
        system_name=name,
        judge=benchmark.judges.get(slug="offline"),
        allow_partial=True,
        team=lab,
        submitted_by=users["owner"],
        publish=publish,
    )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error
    return submission


def lab_run(benchmark: Benchmark, tree: Path, *, name: str, people, publish: bool) -> Submission:
    """``tree`` zipped beside itself, submitted as lab_submit does."""
    return lab_submit(
        benchmark,
        zip_tree(tree, tree.with_suffix(".zip")),
        name=name,
        people=people,
        publish=publish,
    )
