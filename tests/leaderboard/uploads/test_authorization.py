"""Who may upload, send bytes, finish, and see an upload: owner, teammate, outsider, anonymous,
staff."""

from __future__ import annotations

import pytest

from leaderboard.uploads.models import Upload
from tests.leaderboard.uploads.conftest import put_chunk, start_fields

pytestmark = pytest.mark.django_db(transaction=True)

START = "/benchmarks/toy-bench/submit/start/"


@pytest.fixture
def alices_upload(client, people, toybench) -> dict:
    client.force_login(people.alice)
    state = client.post(START, start_fields(size=1000)).json()
    client.logout()
    return state


def test_anonymous_is_sent_to_log_in_or_told_401(client, toybench, alices_upload):
    page = client.get("/benchmarks/toy-bench/submit/")
    assert page.status_code == 302 and "login" in page["Location"]
    detail = client.get(alices_upload["urls"]["page"])
    assert detail.status_code == 302 and "login" in detail["Location"]
    assert client.post(START, start_fields(size=1000)).status_code == 401
    assert put_chunk(client, alices_upload, b"x" * 10, 0).status_code == 401
    assert client.get(alices_upload["urls"]["state"]).status_code == 401
    assert client.post(alices_upload["urls"]["finish"]).status_code == 401
    assert client.post(alices_upload["urls"]["cancel"]).status_code == 401
    assert client.post(alices_upload["urls"]["parts"]).status_code == 401


def test_it_validates_team_membership_on_start(client, people, toybench):
    client.force_login(people.alice)
    response = client.post(START, start_fields(team="beta", size=1000))
    assert response.status_code == 403
    # Every form error names its field.
    assert response.json()["error"] == "Team: You are not a member of that team."
    assert Upload.objects.count() == 0
    page = client.get("/benchmarks/toy-bench/submit/").content.decode()
    assert 'value="alpha"' in page and 'value="beta"' not in page


def test_a_user_without_a_team_is_told_so(client, people, toybench):
    client.force_login(people.charlie)
    page = client.get("/benchmarks/toy-bench/submit/").content.decode()
    assert "not a member of any team" in page and 'id="upload-form"' not in page
    assert client.post(START, start_fields(size=1000)).status_code == 403


def test_outsider_cannot_see_or_touch_an_upload(client, people, alices_upload):
    client.force_login(people.bob)
    assert client.get(alices_upload["urls"]["page"]).status_code == 404
    assert client.get(alices_upload["urls"]["state"]).status_code == 404
    assert put_chunk(client, alices_upload, b"x" * 10, 0).status_code == 404
    assert client.post(alices_upload["urls"]["finish"]).status_code == 404
    assert client.post(alices_upload["urls"]["cancel"]).status_code == 404
    assert Upload.objects.get(pk=alices_upload["id"]).received == 0


def test_teammate_sees_the_status_page_but_sends_no_bytes(client, people, alices_upload):
    client.force_login(people.alice2)
    page = client.get(alices_upload["urls"]["page"])
    assert page.status_code == 200 and "Alpha Lab" in page.content.decode()
    assert "Validate and submit again" not in page.content.decode()
    assert put_chunk(client, alices_upload, b"x" * 10, 0).status_code == 404
    assert client.post(alices_upload["urls"]["cancel"]).status_code == 404


def test_owner_and_staff_see_the_status_page(client, people, alices_upload):
    client.force_login(people.alice)
    assert client.get(alices_upload["urls"]["page"]).status_code == 200
    client.force_login(people.staff)
    assert client.get(alices_upload["urls"]["page"]).status_code == 200
    # Staff read the page; only the uploader sends bytes.
    assert put_chunk(client, alices_upload, b"x" * 10, 0).status_code == 404


def test_a_member_who_left_the_team_loses_access(client, people, alices_upload):
    people.alpha.memberships.filter(user=people.alice).delete()
    client.force_login(people.alice)
    assert client.get(alices_upload["urls"]["page"]).status_code == 404
    assert put_chunk(client, alices_upload, b"x" * 10, 0).status_code == 404


def test_unknown_upload_and_benchmark(client, people, toybench):
    client.force_login(people.alice)
    assert client.get("/uploads/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert client.get("/benchmarks/nope/submit/").status_code == 404
    assert client.post("/benchmarks/nope/submit/start/", start_fields(size=5)).status_code == 404
