"""What others see of a team's submission (publish, unpublish, show anonymously, reveal, delete)
is decided by the team's owners and staff: alice (owner) and staff may, bob (a member) is
refused with the reason and sees the actions disabled, charlie (outsider) and anonymous are
refused without learning whose submission it is. Retrying and the team's spending stay every
member's."""

from __future__ import annotations

import pytest

from evaluation.models import Submission

pytestmark = pytest.mark.django_db

ACTIONS = ("publish", "unpublish", "anonymize", "reveal", "delete")
MEMBER_REASON = (
    "Only owners of Lab A and staff can publish, unpublish, show anonymously, reveal or delete "
    "its submissions; you are a member. Ask an owner: alice."
)
# A private submission is a 404 to whoever may not see it; a published one they may see is 403.
REFUSED = {
    "published": {"anonymous": 403, "charlie": 403, "bob": 403},
    "private": {"anonymous": 404, "charlie": 404, "bob": 403},
}


def state(submission: Submission) -> tuple:
    fresh = Submission.objects.filter(pk=submission.pk).values_list("is_published", "is_anonymous")
    return tuple(fresh.first() or ())


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("which", ["published", "private"])
def test_members_outsiders_and_anonymous_cannot_change_it(world, action, which):
    submission = world.submission(which)
    before = state(submission)
    path = f"/submissions/{submission.pk}/manage/{action}/"
    for role, code in REFUSED[which].items():
        client = world.client(role)
        asked, done = client.get(path), client.post(path)
        assert (asked.status_code, done.status_code) == (code, code), role
        if role == "bob":
            assert asked.content.decode() == done.content.decode() == MEMBER_REASON
        else:
            assert "Lab A" not in done.content.decode() and "alice" not in done.content.decode()
    assert state(submission) == before


@pytest.mark.parametrize("role", ["alice", "staff"])
def test_owners_and_staff_change_it(world, role):
    client = world.client(role)
    private = world.private
    base = f"/submissions/{private.pk}/manage"
    for action in ACTIONS:
        assert client.get(f"{base}/{action}/").status_code == 200, action
    assert client.post(f"{base}/publish/").status_code == 302
    assert state(private) == (True, False)
    assert client.post(f"{base}/anonymize/").status_code == 302
    assert state(private) == (True, True)
    assert client.post(f"{base}/reveal/").status_code == 302
    assert client.post(f"{base}/unpublish/").status_code == 302
    assert state(private) == (False, False)


def test_a_member_sees_the_owners_actions_disabled_with_the_reason(world):
    page = world.client("bob").get(f"/submissions/{world.private.pk}/").content.decode()
    start = page.index('id="owner-actions"')
    nav = page[start : page.index("</nav>", start)]
    assert MEMBER_REASON in nav
    for label in ("Publish", "Show anonymously (under review)", "Delete"):
        assert (
            f'<button type="button" class="button{" danger" if label == "Delete" else ""}" '
            f'disabled aria-describedby="owner-actions-reason">{label}</button>'
        ) in nav
    assert "/manage/" not in nav
    # What judging cost the team stays every member's to see.
    assert 'id="spending"' in page


@pytest.mark.parametrize("role", ["alice", "staff"])
def test_owners_and_staff_see_the_actions_enabled(world, role):
    page = world.client(role).get(f"/submissions/{world.private.pk}/").content.decode()
    base = f"/submissions/{world.private.pk}/manage"
    for action in ("publish", "anonymize", "delete"):
        assert f'href="{base}/{action}/"' in page, action
    assert "disabled" not in page[page.index('id="owner-actions"') :].split("</nav>")[0]


@pytest.mark.parametrize("role", ["charlie", "anonymous"])
def test_outsiders_see_no_team_actions(world, role):
    page = world.client(role).get(f"/submissions/{world.published.pk}/").content.decode()
    assert 'id="owner-actions"' not in page and "/manage/" not in page
