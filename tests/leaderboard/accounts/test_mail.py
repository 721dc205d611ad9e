"""E-mail: an address is confirmed by the link sent to it; a forgotten password is reset through
a confirmed address only; a submitter with a confirmed address hears once when a submission is
scored, fails or stalls (Django's e-mail backend: the test outbox here)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.utils import timezone

from evaluation.models import Benchmark, Submission, System, Team
from leaderboard.accounts.mail import submission_notices_send
from leaderboard.accounts.models import EmailAddress, SubmissionNotice

pytestmark = pytest.mark.django_db


def link_in(message) -> str:
    return re.search(r"https?://[^\s]+", message.body).group(0).split("testserver", 1)[-1]


def test_sign_up_sends_a_link_that_confirms_the_address(client):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "ada",
            "email": "ada@example.org",
            "password1": "a long pass phrase 91",
            "password2": "a long pass phrase 91",
        },
    )
    assert response.status_code == 302
    address = EmailAddress.objects.get(user__username="ada")
    assert not address.is_verified
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.org"]
    profile = client.get("/accounts/profile/").content.decode()
    assert "not confirmed" in profile
    confirmed = client.get(link_in(mail.outbox[0]))
    assert confirmed.status_code == 200 and "is confirmed" in confirmed.content.decode()
    address.refresh_from_db()
    assert address.is_verified
    assert "not confirmed" not in client.get("/accounts/profile/").content.decode()
    # A changed address must be confirmed anew.
    client.post("/accounts/profile/", {"email": "ada@lab.example", "action": "change"})
    address.refresh_from_db()
    assert address.email == "ada@lab.example" and not address.is_verified
    assert mail.outbox[-1].to == ["ada@lab.example"]
    # A link for the old address no longer confirms anything.
    old = client.get(link_in(mail.outbox[0]))
    assert old.status_code == 400
    bad = client.get("/accounts/email/verify/nonsense/")
    assert bad.status_code == 400 and "not valid" in bad.content.decode()


def test_password_reset_goes_to_confirmed_addresses_only(client):
    confirmed = User.objects.create_user("bo", email="bo@example.org", password="old pass 12345")
    EmailAddress.objects.create(user=confirmed, email="bo@example.org", verified_at=timezone.now())
    unconfirmed = User.objects.create_user("cy", email="cy@example.org", password="x pass 98765")
    EmailAddress.objects.create(user=unconfirmed, email="cy@example.org")
    login = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/password/reset/"' in login
    client.post("/accounts/password/reset/", {"email": "cy@example.org"})
    assert mail.outbox == []  # not confirmed: nothing sent (and the page says the same)
    sent = client.post("/accounts/password/reset/", {"email": "bo@example.org"})
    assert sent.status_code == 302 and sent["Location"] == "/accounts/password/reset/sent/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["bo@example.org"]
    page = client.get(link_in(mail.outbox[0]), follow=True)
    assert "Choose a new password" in page.content.decode()
    form_url = page.redirect_chain[-1][0]
    done = client.post(
        form_url, {"new_password1": "new pass phrase 77", "new_password2": "new pass phrase 77"}
    )
    assert done.status_code == 302
    assert client.login(username="bo", password="new pass phrase 77")


@pytest.fixture
def submitter(db):
    user = User.objects.create_user("dee")
    EmailAddress.objects.create(user=user, email="dee@example.org", verified_at=timezone.now())
    return user


def make_submission(user, status, **fields) -> Submission:
    team = Team.objects.create(name=f"T{Team.objects.count()}", slug=f"t{Team.objects.count()}")
    benchmark = Benchmark.objects.get_or_create(slug="b", name="B", plugin="mp-bench")[0]
    return Submission.objects.create(
        benchmark=benchmark,
        system=System.objects.create(name=f"S{System.objects.count()}", team=team),
        team=team,
        submitted_by=user,
        status=status,
        **fields,
    )


def test_notices_go_once_per_kind_to_a_confirmed_submitter(submitter, settings):
    settings.FLOORBOARD_SITE_URL = "https://board.example"
    scored = make_submission(submitter, "scored")
    failed = make_submission(submitter, "failed", error="ingest: the bundle vanished\nmore")
    running = make_submission(submitter, "judging", heartbeat_at=timezone.now())
    stalled = make_submission(
        submitter, "judging", heartbeat_at=timezone.now() - timedelta(hours=2)
    )
    silent = make_submission(User.objects.create_user("eve"), "scored")  # no confirmed address
    assert submission_notices_send() == 3
    subjects = sorted(m.subject for m in mail.outbox)
    assert subjects == sorted(
        [
            f"Floorboard: submission #{scored.pk} scored",
            f"Floorboard: submission #{failed.pk} failed",
            f"Floorboard: submission #{stalled.pk} has stalled",
        ]
    )
    failure = next(m for m in mail.outbox if "failed" in m.subject)
    assert "ingest: the bundle vanished" in failure.body
    assert f"https://board.example/submissions/{failed.pk}/" in failure.body
    assert all(m.to == ["dee@example.org"] for m in mail.outbox)
    assert submission_notices_send() == 0  # each once
    # The stalled one finishes: its "scored" notice is a new kind, sent once.
    Submission.objects.filter(pk=stalled.pk).update(status="scored")
    assert submission_notices_send() == 1
    assert not SubmissionNotice.objects.filter(submission__in=[running, silent]).exists()
