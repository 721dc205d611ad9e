"""The cast of the board tests: team Lab (alice owns it, bob is a member), team Rivals (carol),
and staff (sam)."""

from __future__ import annotations

from django.contrib.auth.models import User

from evaluation.models import Membership, Team


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
