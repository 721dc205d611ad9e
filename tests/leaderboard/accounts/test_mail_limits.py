"""The links people ask for by e-mail (address verification, password reset) are limited per
account, per client address and per recipient within an hour, and only an account's newest
verification link works. Expected counts come from the limits set in each test."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.utils import timezone

from leaderboard.accounts.models import EmailAddress

pytestmark = pytest.mark.django_db


def link_in(message) -> str:
    return re.search(r"https?://[^\s]+", message.body).group(0).split("testserver", 1)[-1]


def change(client, email, address="10.0.0.1"):
    return client.post(
        "/accounts/profile/", {"email": email, "action": "change"}, REMOTE_ADDR=address
    )


def resend(client, email, address="10.0.0.1"):
    return client.post(
        "/accounts/profile/", {"email": email, "action": "resend"}, REMOTE_ADDR=address
    )


def reset(client, email, address="10.0.0.1"):
    return client.post("/accounts/password/reset/", {"email": email}, REMOTE_ADDR=address)


@pytest.fixture
def ann(client):
    user = User.objects.create_user("ann", password="ann-horse-battery")
    client.force_login(user)
    return user


def test_one_recipient_gets_at_most_its_hourly_links(client, ann, settings):
    assert settings.EMAILS_PER_RECIPIENT_PER_HOUR == 3
    assert change(client, "target@example.org").status_code == 302
    codes = [resend(client, "target@example.org").status_code for _ in range(9)]
    assert codes == [302, 302] + [429] * 7
    assert [m.to for m in mail.outbox] == [["target@example.org"]] * 3
    refused = resend(client, "target@example.org").content.decode()
    assert "3 e-mails to target@example.org were asked for in the last hour" in refused
    assert "nothing was sent" in refused


def test_one_account_gets_at_most_its_hourly_links_whatever_the_recipients(client, ann, settings):
    settings.EMAILS_PER_ACCOUNT_PER_HOUR = 5
    codes = [change(client, f"a{index}@example.org").status_code for index in range(7)]
    assert codes == [302] * 5 + [429] * 2
    assert len(mail.outbox) == 5
    refused = change(client, "a9@example.org").content.decode()
    assert "5 e-mails for your account were asked for in the last hour" in refused
    # Refused: the address is unchanged, and its link still works.
    address = EmailAddress.objects.get(user=ann)
    assert address.email == "a4@example.org"
    assert client.get(link_in(mail.outbox[-1])).status_code == 200


def test_one_client_address_asks_for_at_most_its_hourly_links(client, settings):
    settings.EMAILS_PER_ADDRESS_PER_HOUR = 4
    codes = []
    for index in range(5):
        user = User.objects.create_user(f"u{index}")
        client.force_login(user)
        codes.append(change(client, f"u{index}@example.org", "203.0.113.9").status_code)
    assert codes == [302] * 4 + [429]
    refused = change(client, "u4@example.org", "203.0.113.9").content.decode()
    assert "4 e-mails were asked for from your address in the last hour" in refused
    assert change(client, "u4@example.org", "198.51.100.1").status_code == 302
    assert len(mail.outbox) == 5


def test_password_reset_links_are_limited_per_recipient_alike_for_any_address(client):
    bo = User.objects.create_user("bo", email="bo@example.org", password="old pass 12345")
    EmailAddress.objects.create(user=bo, email="bo@example.org", verified_at=timezone.now())
    for email in ("bo@example.org", "nobody@example.org"):
        codes = [reset(client, email).status_code for _ in range(5)]
        # The same answers whether or not an account has the address.
        assert codes == [302, 302, 302, 429, 429], email
        refused = reset(client, email).content.decode()
        assert f"3 e-mails to {email} were asked for in the last hour" in refused
    assert [m.to for m in mail.outbox] == [["bo@example.org"]] * 3


def test_password_reset_links_per_account_stop_without_saying_so(client, settings):
    settings.EMAILS_PER_ACCOUNT_PER_HOUR = 2
    settings.EMAILS_PER_RECIPIENT_PER_HOUR = 10
    bo = User.objects.create_user("bo", email="bo@example.org", password="old pass 12345")
    EmailAddress.objects.create(user=bo, email="bo@example.org", verified_at=timezone.now())
    codes = [reset(client, "bo@example.org").status_code for _ in range(4)]
    # The page never tells whether an address has an account: it says "sent" each time.
    assert codes == [302] * 4
    assert len(mail.outbox) == 2


def test_password_reset_requests_per_client_address(client, settings):
    settings.EMAILS_PER_ADDRESS_PER_HOUR = 3
    codes = [
        reset(client, f"n{index}@example.org", "203.0.113.7").status_code for index in range(4)
    ]
    assert codes == [302, 302, 302, 429]
    assert reset(client, "n5@example.org", "198.51.100.2").status_code == 302


def test_only_the_newest_verification_link_works(client, ann):
    change(client, "ann@example.org")
    answer = resend(client, "ann@example.org")
    assert answer.status_code == 302
    said = client.get("/accounts/profile/").content.decode()
    assert "A new link is on its way to ann@example.org." in said
    assert "The link sent to ann@example.org before no longer works" in said
    first, newest = (link_in(message) for message in mail.outbox)
    stale = client.get(first)
    assert stale.status_code == 400
    assert "A newer link was sent to this address since" in stale.content.decode()
    assert not EmailAddress.objects.get(user=ann).is_verified
    assert client.get(newest).status_code == 200
    assert EmailAddress.objects.get(user=ann).is_verified


def test_changing_a_pending_address_says_the_earlier_link_is_void(client, ann):
    change(client, "old@example.org")
    change(client, "new@example.org")
    said = client.get("/accounts/profile/").content.decode()
    assert "We sent a link to new@example.org" in said
    assert "The link sent to old@example.org before no longer works" in said
    assert client.get(link_in(mail.outbox[0])).status_code == 400


def test_sign_up_says_when_no_link_could_be_sent(client, settings):
    settings.EMAILS_PER_RECIPIENT_PER_HOUR = 1
    for index, address in enumerate(("10.2.0.1", "10.2.0.2")):
        response = client.post(
            "/accounts/signup/",
            {
                "username": f"twin{index}",
                "email": "shared@example.org",
                "password1": "Zq8!vert-lamp",
                "password2": "Zq8!vert-lamp",
            },
            REMOTE_ADDR=address,
            follow=True,
        )
        assert response.status_code == 200
        client.logout()
    page = response.content.decode()
    assert "No link to confirm shared@example.org was sent" in page
    assert User.objects.filter(username="twin1").exists()
    assert len(mail.outbox) == 1


def test_a_link_made_before_links_carried_their_time_asks_for_a_new_one(client, ann):
    from django.core import signing

    from leaderboard.accounts.mail import VERIFY_SALT

    change(client, "ann@example.org")
    address = EmailAddress.objects.get(user=ann)
    old = signing.dumps({"u": ann.pk, "e": address.email}, salt=VERIFY_SALT)
    response = client.get(f"/accounts/email/verify/{old}/")
    assert response.status_code == 400
    assert "This link is no longer valid; ask for a new one" in response.content.decode()
    assert not EmailAddress.objects.get(user=ann).is_verified
