"""Who gets what from every API endpoint: alice (owner), bob (teammate), charlie (outsider),
anonymous and staff, for Lab A's published and its unpublished submission. A submission the
user may not see is a 404, exactly like one that does not exist."""

from __future__ import annotations

import pytest

from evaluation.models import Submission

pytestmark = pytest.mark.django_db

ANSWERED_TASK = "q1"  # a task both submissions answered (accounts/people.py)
SEES_ALL = dict.fromkeys(("alice", "bob", "charlie", "anonymous", "staff"), 200)
TEAM_AND_STAFF = {"alice": 200, "bob": 200, "charlie": 404, "anonymous": 404, "staff": 200}
EXPECTED_READ = {"published": SEES_ALL, "private": TEAM_AND_STAFF}

READ_PATHS = {
    "detail": "/api/submissions/{pk}/",
    "tasks": "/api/submissions/{pk}/tasks/",
    "judgments": "/api/submissions/{pk}/tasks/" + ANSWERED_TASK + "/judgments/",
    "system": "/api/systems/{system}/",
}


def answers(world, method: str, path: str, data=None) -> dict[str, int]:
    got = {}
    for role in ("anonymous", "charlie", "staff", "bob", "alice"):
        client = world.client(role)
        response = client.post(path, data, format="json") if method == "post" else client.get(path)
        got[role] = response.status_code
    return got


@pytest.mark.parametrize("endpoint", sorted(READ_PATHS))
@pytest.mark.parametrize("which", ["published", "private"])
def test_reads_follow_visibility(world, endpoint, which):
    submission = world.submission(which)
    path = READ_PATHS[endpoint].format(pk=submission.pk, system=submission.system_id)
    assert answers(world, "get", path) == EXPECTED_READ[which]


def test_lists_hold_exactly_what_each_user_may_see(world):
    reported = set(Submission.objects.filter(is_reported=True).values_list("pk", flat=True))
    assert len(reported) == 1  # the toy paper's one row (tests/toyplugin/toy.py)
    public = reported | {world.published.pk}
    team = public | {world.private.pk}
    expected = {"anonymous": public, "charlie": public, "alice": team, "bob": team, "staff": team}
    for role, ids in expected.items():
        body = world.client(role).get("/api/submissions/?page_size=1000").json()
        got = [row["id"] for row in body["results"]]
        assert len(got) == len(set(got)) == body["count"], role  # no row twice
        assert set(got) == ids, role

    for role, ids in expected.items():
        systems = world.client(role).get("/api/systems/?page_size=1000").json()["results"]
        names = {s["name"] for s in systems}
        assert ("Private Agent" in names) == (world.private.pk in ids), role
        assert "Published Agent" in names and "Toy Paper Model" in names, role


def test_system_page_lists_only_visible_submissions(world):
    world.private.system = world.published.system
    world.private.save(update_fields=["system"])
    path = f"/api/systems/{world.published.system_id}/"
    for role, expected in {
        "alice": {world.published.pk, world.private.pk},
        "staff": {world.published.pk, world.private.pk},
        "charlie": {world.published.pk},
        "anonymous": {world.published.pk},
    }.items():
        body = world.client(role).get(path).json()
        assert {s["id"] for s in body["submissions"]} == expected, role


def test_a_hidden_submission_is_gone_for_the_public_only(world):
    Submission.objects.filter(pk=world.published.pk).update(is_hidden=True)
    path = f"/api/submissions/{world.published.pk}/"
    assert answers(world, "get", path) == TEAM_AND_STAFF


def test_a_private_submission_answers_like_a_missing_one(world):
    charlie = world.client("charlie")
    private = charlie.get(f"/api/submissions/{world.private.pk}/")
    missing = charlie.get("/api/submissions/987654/")
    assert private.status_code == missing.status_code == 404
    assert private.json() == missing.json()
    for suffix in ("tasks/", f"tasks/{ANSWERED_TASK}/judgments/", "publish/", "retry-failed/"):
        method = charlie.post if suffix.endswith(("publish/", "retry-failed/")) else charlie.get
        assert (
            method(f"/api/submissions/{world.private.pk}/{suffix}").json()
            == method(f"/api/submissions/987654/{suffix}").json()
        )


def test_benchmarks_and_judges_are_public(world):
    for path in (
        "/api/benchmarks/",
        "/api/benchmarks/toy-bench/",
        "/api/benchmarks/toy-bench/judges/",
    ):
        assert answers(world, "get", path) == SEES_ALL, path
    for path in ("/api/benchmarks/nope/", "/api/benchmarks/nope/judges/", "/api/systems/987654/"):
        assert world.client("staff").get(path).status_code == 404, path


@pytest.mark.parametrize("which", ["published", "private"])
def test_retry_failed_is_for_the_team_and_staff(world, which, django_capture_on_commit_callbacks):
    path = f"/api/submissions/{world.submission(which).pk}/retry-failed/"
    with django_capture_on_commit_callbacks(execute=True):
        got = answers(world, "post", path)
    assert got == {
        "anonymous": 401,
        "charlie": 403 if which == "published" else 404,
        "staff": 202,
        "bob": 202,
        "alice": 202,
    }
    assert Submission.objects.get(pk=world.submission(which).pk).status == "scored"


@pytest.mark.parametrize("which", ["published", "private"])
def test_publish_is_for_the_teams_owners_and_staff(world, which):
    submission = world.submission(which)
    path = f"/api/submissions/{submission.pk}/publish/"
    got = answers(world, "post", path)
    assert got == {
        "anonymous": 401,
        "charlie": 403 if which == "published" else 404,
        "staff": 200,
        "bob": 403,  # a member, not an owner
        "alice": 200,
    }
    submission.refresh_from_db()
    assert submission.is_published and submission.published_at is not None


def test_a_member_is_told_why_publishing_is_refused(world):
    response = world.client("bob").post(f"/api/submissions/{world.private.pk}/publish/")
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "Only owners of Lab A and staff can publish its submissions; you are a member. "
        "Ask an owner: alice."
    )
    assert not Submission.objects.get(pk=world.private.pk).is_published


def test_an_outsider_is_not_told_whose_submission_it_is(world):
    """An outsider may see a published (perhaps anonymous) row: the refusal names no team."""
    Submission.objects.filter(pk=world.published.pk).update(is_anonymous=True)
    response = world.client("charlie").post(f"/api/submissions/{world.published.pk}/publish/")
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert detail == "Only owners of the submission's team and staff can publish it."


def test_anonymous_is_told_how_to_authenticate(world):
    response = world.client("anonymous").post(f"/api/submissions/{world.published.pk}/publish/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "credentials were not provided" in response.json()["detail"]
