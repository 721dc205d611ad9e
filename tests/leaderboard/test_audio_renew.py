"""A page left open: its audio links expire, and the player asks for fresh ones with the same
checks as playing (the viewer, a submission they may still see), for up to a week."""

from __future__ import annotations

import os

import pytest
from django.core import signing
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluation.models import Benchmark, Membership, Submission, System, Team
from leaderboard import audio

pytestmark = pytest.mark.django_db


@pytest.fixture
def clip():
    data = os.urandom(4000)
    return default_storage.save("clips/renew.wav", ContentFile(data)), data


def later(monkeypatch, seconds: float):
    import time as clock

    now = clock.time() + seconds
    monkeypatch.setattr(signing.time, "time", lambda: now)


def test_an_expired_link_is_renewed_and_the_new_one_plays(client, clip, monkeypatch, settings):
    name, data = clip
    renew = audio.renew_url(key=name, user=None)
    url = audio.audio_url(key=name, user=None)
    later(monkeypatch, settings.SIGNED_URL_SECONDS + 60)
    assert client.get(url).status_code == 403  # what a player hit after five minutes
    fresh = client.get(renew)
    assert fresh.status_code == 200 and fresh["Cache-Control"] == "no-store"
    body = fresh.json()
    assert set(body) == {"url", "peaks", "renew", "expires_in"}
    assert body["expires_in"] == settings.SIGNED_URL_SECONDS
    response = client.get(body["url"], HTTP_RANGE="bytes=0-9")
    assert response.status_code == 206 and b"".join(response.streaming_content) == data[:10]
    # Hours later, the renewed renewal link renews again; past a week nothing does.
    later(monkeypatch, 6 * 3600)
    assert client.get(body["renew"]).status_code == 200
    later(monkeypatch, settings.SIGNED_URL_RENEW_SECONDS + 3600)
    assert client.get(renew).status_code == 403


def test_renewal_checks_the_viewer_and_the_submission_again(client, clip, django_user_model):
    name, _ = clip
    owner = django_user_model.objects.create_user("owner")
    team = Team.objects.create(name="T", slug="t")
    Membership.objects.create(team=team, user=owner)
    benchmark = Benchmark.objects.create(slug="b", name="B", plugin="mp-bench")
    submission = Submission.objects.create(
        benchmark=benchmark,
        system=System.objects.create(name="S", team=team),
        team=team,
        status="scored",
    )
    renew = audio.renew_url(key=name, user=owner, submission_id=submission.pk)
    assert client.get(renew).status_code == 403  # made for someone else
    client.force_login(owner)
    assert client.get(renew).status_code == 200
    Membership.objects.filter(user=owner).delete()  # no longer in the team: private work
    assert client.get(renew).status_code == 403
    tampered = renew.replace("/renew/", "x/renew/")
    assert client.get(tampered).status_code == 403


def test_the_player_markup_carries_its_renewal_link(settings):
    from django.template.loader import render_to_string

    clip = audio.clip_for(key="clips/x.wav", user=None, label="Agent response", name="r.wav")
    html = render_to_string("leaderboard/fragments/player.html", {"clip": clip})
    assert f'data-renew="{clip.renew_url}"' in html
    assert f'data-expires="{settings.SIGNED_URL_SECONDS}"' in html
