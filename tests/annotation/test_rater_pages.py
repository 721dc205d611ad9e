"""What a rater can reach through an invite link: every page, fragment, JSON answer and audio
response is crawled and must never carry the judge's verdict, another rater's answer, or which
system or submission produced the response. Audio comes through rater-scoped signed URLs with
byte ranges."""

from __future__ import annotations

import base64
import json
import re
import wave
from html.parser import HTMLParser

import pytest
from django.core import signing
from django.core.files.storage import default_storage
from django.urls import reverse

from annotation import assignment as rating
from annotation.models import Assignment, Rating, RatingEvent, item_clip
from annotation.services import rater_update
from tests.annotation.factories import (
    JUDGE_NAME,
    invite,
    make_board,
    make_study,
)

pytestmark = pytest.mark.django_db


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls, self.state = [], None
        self._in_state = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href", "action", "data-peaks", "data-renew"):
            if attrs.get(name):
                self.urls.append(attrs[name])
        self._in_state = tag == "script" and attrs.get("id") == "rate-state"

    def handle_data(self, data):
        if self._in_state:
            self.state = json.loads(data)
            self._in_state = False


def forbidden(board) -> list[str]:
    names = [s.system.name for s in board.submissions]
    ids = [str(s.pk) for s in board.submissions]
    return [
        *names,
        *ids,
        JUDGE_NAME,
        board.judge.slug,
        "zanzibar-9",  # the judge's model
        "VERDICT-REASONING",
        "verdict",
        "judgment",
        "submissions/",  # storage keys
        "scenario_",  # task ids: not needed by raters, so not shown
        "stratum",
    ]


def assert_blind(text: str, board, where: str) -> None:
    lowered = text.lower()
    for secret in forbidden(board):
        assert secret.lower() not in lowered, f"{secret!r} appears in {where}"


def decoded_token_payloads(url: str) -> str:
    """Whatever a rater could decode from a signed URL's readable part."""
    parts = url.rstrip("/").split("/")
    token = parts[-2] if parts[-1] in ("peaks", "renew") else parts[-1]
    payload = token.split(":")[0]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


def test_every_rater_page_json_and_audio_response_is_blind(client):
    board = make_board(submissions=2, tasks=4)
    study = make_study(board, per_stratum=3, overlap=2, batch_size=6)
    first, second = invite(study, 2)
    # The first rater answers everything, so the second has other labels it must not see.
    while (current := rating.rater_current(rater=first, start=True)) is not None:
        rating.assignment_submit(rater=first, code=current.code, label="inconsistent")
    seen: list[tuple[str, str]] = []

    def get(url, **kwargs):
        response = client.get(url, **kwargs)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        text = body.decode("utf-8", "replace") if not body.startswith(b"RIFF") else ""
        seen.append((url, headers + "\n" + text))
        return response, body

    invite_url = reverse("annotation:rate", args=[second.token])
    response, _ = get(invite_url)
    assert response.status_code == 200 and "Start" in response.content.decode()
    start = client.post(reverse("annotation:rate-start", args=[second.token]))
    seen.append(("start", str(start.headers)))
    for position in range(1, 7):
        response, body = get(invite_url)
        page = Links()
        page.feed(body.decode())
        state = page.state
        assert set(state) == {
            "code",
            "eventsUrl",
            "submitUrl",
            "nextUrl",
            "backUrl",
            "review",
            "guidelineVersion",
            "labels",
            "draftLabel",
            "comment",
            "flagged",
            "heardResponse",
            "positions",
            "requirePlay",
            "breakMinutes",
            "batchKey",
            "batchActiveMs",
        }
        # The way back within the batch names nothing but the rater's own item codes.
        if position > 1:
            assert state["backUrl"].startswith(f"/rate/{second.token}/items/")
            review, _ = get(state["backUrl"])
            assert review.status_code == 200 and "already answered" in review.content.decode()
        assert state["draftLabel"] is None  # nothing of the first rater's answers
        assert f'item <strong id="rate-position">{position}</strong> of 6' in body.decode()
        audio_urls = [u for u in page.urls if u.startswith("/rate/audio/")]
        assert len(audio_urls) == 6  # two clips, each with its waveform and a way to renew
        for url in audio_urls:
            assert_blind(decoded_token_payloads(url), board, f"the signed URL {url}")
            clip, data = get(url)
            assert clip.status_code == 200
            if "/renew/" in url:
                fresh = json.loads(data)
                assert set(fresh) == {"url", "peaks", "renew", "expires_in"}
                assert fresh["url"].startswith("/rate/audio/")
                assert_blind(decoded_token_payloads(fresh["url"]), board, "a renewed URL")
            elif "/peaks/" not in url:
                assert data.startswith(b"RIFF")
                assert "Content-Disposition" not in clip.headers
        events = client.post(
            state["eventsUrl"],
            data=json.dumps(
                {"page": "crawl", "events": [{"seq": 0, "kind": "play", "player": "response"}]}
            ),
            content_type="application/json",
        )
        seen.append((state["eventsUrl"], events.content.decode()))
        assert events.json() == {"ok": True}
        submitted = client.post(
            state["submitUrl"],
            data=json.dumps({"label": "consistent", "guideline_version": 1}),
            content_type="application/json",
        )
        seen.append((state["submitUrl"], submitted.content.decode()))
        assert submitted.json() == {
            "ok": True,
            "stored": True,
            "next": invite_url,
            "feedback": None,  # sampled items: no feedback, no verdict
        }
        again = client.post(
            state["submitUrl"],
            data=json.dumps({"label": "inconsistent"}),
            content_type="application/json",
        )
        seen.append((state["submitUrl"], again.content.decode()))
        assert again.json()["stored"] is False
    response, _ = get(invite_url)
    assert "Batch 1 is done" in response.content.decode()
    bad = client.post(
        reverse("annotation:rate-submit", args=[second.token, "nope"]),
        data="{}",
        content_type="application/json",
    )
    seen.append(("bad submit", bad.content.decode()))
    assert bad.status_code == 400
    assert len(seen) > 40
    for where, text in seen:
        assert_blind(text, board, where)
    assert Rating.objects.filter(rater=second).count() == 6
    assert RatingEvent.objects.filter(assignment__rater=second, kind="play").count() == 6


def test_invite_links_that_do_not_exist_or_were_withdrawn_show_nothing(client):
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2)
    rater = invite(study)
    assert client.get(reverse("annotation:rate", args=["not-a-token"])).status_code == 404
    rater_update(rater=rater, is_active=False)
    # A withdrawn link says so, in the raters' own layout, instead of a bare 404.
    withdrawn = client.get(reverse("annotation:rate", args=[rater.token]))
    assert withdrawn.status_code == 410
    assert "This invite link has been withdrawn" in withdrawn.content.decode()
    assert 'class="site"' not in withdrawn.content.decode()


def test_the_rater_page_resumes_where_the_rater_left_off(client):
    board = make_board(submissions=1, tasks=3)
    study = make_study(board, per_stratum=3, overlap=1, batch_size=3)
    rater = invite(study)
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    url = reverse("annotation:rate", args=[rater.token])
    first = client.get(url).context["page_state"]
    client.post(
        first["submitUrl"],
        data=json.dumps({"label": "consistent"}),
        content_type="application/json",
    )
    second = client.get(url).context["page_state"]
    client.post(
        second["eventsUrl"],
        data=json.dumps(
            {
                "page": "p",
                "events": [{"seq": 0, "kind": "choose", "value": "inconsistent"}],
                "active_ms": 1200,
                "positions": {"context-0": 0.4, "response": 0.25},
            }
        ),
        content_type="application/json",
    )
    again = client.get(url).context["page_state"]  # the tab was closed and the link reopened
    assert again["code"] == second["code"] != first["code"]
    assert again["draftLabel"] == "inconsistent"
    assert again["positions"] == {"context-0": 0.4, "response": 0.25}


def audio_url(client, rater):
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    response = client.get(reverse("annotation:rate", args=[rater.token]))
    links = Links()
    links.feed(response.content.decode())
    return next(
        u
        for u in links.urls
        if u.startswith("/rate/audio/") and "/peaks/" not in u and "/renew/" not in u
    )


def test_audio_is_served_with_byte_ranges(client):
    board = make_board(submissions=1, tasks=2, conversation_seconds=0.5)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    url = audio_url(client, rater)
    current = Assignment.objects.get(rater=rater, position=1)
    with default_storage.open(item_clip(current.item, "context-0")["key"], "rb") as handle:
        data = handle.read()
    size = len(data)
    whole = client.get(url)
    assert whole.status_code == 200 and b"".join(whole.streaming_content) == data
    assert whole["Accept-Ranges"] == "bytes" and whole["Content-Length"] == str(size)
    cases = {
        "bytes=10-19": (10, 19),
        "bytes=-5": (size - 5, size - 1),
        f"bytes={size - 3}-": (size - 3, size - 1),
        f"bytes=0-{size + 100}": (0, size - 1),
    }
    for header, (start, end) in cases.items():
        part = client.get(url, headers={"range": header})
        assert part.status_code == 206, header
        assert b"".join(part.streaming_content) == data[start : end + 1], header
        assert part["Content-Range"] == f"bytes {start}-{end}/{size}"
    refused = client.get(url, headers={"range": f"bytes={size}-"})
    assert refused.status_code == 416 and refused["Content-Range"] == f"bytes */{size}"


def test_audio_links_are_signed_scoped_and_expire(client, monkeypatch):
    board = make_board(submissions=1, tasks=4)
    study = make_study(board, per_stratum=4, overlap=1, batch_size=2, lock_minutes=5)
    a, b = invite(study, 2)
    url = audio_url(client, a)
    assert client.get(url).status_code == 200
    token = url.split("/")[-2]
    payload = signing.TimestampSigner(salt="annotation.rater-audio").unsign_object(token)
    forged = signing.TimestampSigner(salt="other").sign_object({**payload, "r": b.pk})
    assert client.get(reverse("annotation:rater-audio", args=[forged])).status_code == 404
    tampered = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert client.get(reverse("annotation:rater-audio", args=[tampered])).status_code == 404
    # Someone else's assignment code under a valid signature is not theirs either.
    other = signing.TimestampSigner(salt="annotation.rater-audio").sign_object(
        {**payload, "r": b.pk}
    )
    assert client.get(reverse("annotation:rater-audio", args=[other])).status_code == 404
    # Past the lifetime (the lock, 5 minutes here, never less than SIGNED_URL_SECONDS).
    import time as clock

    later = clock.time() + 3600
    monkeypatch.setattr(signing.time, "time", lambda: later)
    assert client.get(url).status_code == 404
    # A page left open asks for fresh URLs with the expired token, and they play.
    renewed = client.get(url.rstrip("/") + "/renew/")
    assert renewed.status_code == 200
    fresh = renewed.json()
    assert client.get(fresh["url"]).status_code == 200
    monkeypatch.undo()
    rater_update(rater=a, is_active=False)
    assert client.get(url).status_code == 404
    assert client.get(url.rstrip("/") + "/renew/").status_code == 404


def test_waveform_peaks_for_the_player(client):
    board = make_board(submissions=1, tasks=2, response_seconds=0.6)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    links = Links()
    links.feed(client.get(reverse("annotation:rate", args=[rater.token])).content.decode())
    peaks_url = next(
        u for u in links.urls if "/peaks/" in u and "response" in decoded_token_payloads(u)
    )
    peaks = client.get(peaks_url, {"buckets": 200}).json()
    current = Assignment.objects.get(rater=rater, position=1)
    with (
        default_storage.open(item_clip(current.item, "response")["key"], "rb") as handle,
        wave.open(handle) as clip,
    ):
        frames, rate = clip.getnframes(), clip.getframerate()
    assert peaks["buckets"] == 200 and len(peaks["min"]) == len(peaks["max"]) == 200
    assert peaks["duration"] == pytest.approx(frames / rate)
    # The factory's tone peaks at 12000 of 32768.
    assert max(peaks["max"]) == pytest.approx(12000 / 32768, abs=0.01)
    assert min(peaks["min"]) == pytest.approx(-12000 / 32768, abs=0.01)
    assert re.fullmatch(r"/rate/audio/[^/]+/peaks/", peaks_url)


def test_attention_checks_show_their_instruction_and_gold_items_look_like_any_other(client):
    from annotation.models import Item
    from annotation.services import check_item_add

    board = make_board(submissions=1, tasks=5, audio=False)
    study = make_study(
        board, per_stratum=3, overlap=1, batch_size=5, gold_per_batch=1, attention_per_batch=1
    )
    submission = board.submissions[0]
    spare = sorted(
        {f"scenario_discussion-{n:03d}" for n in range(5)}
        - set(study.items.values_list("task_id", flat=True))
    )
    check_item_add(
        study=study,
        role=Item.Role.GOLD,
        submission=submission,
        task_id=spare[0],
        expected_label="consistent",
    )
    check_item_add(
        study=study,
        role=Item.Role.ATTENTION,
        submission=submission,
        task_id=spare[1],
        expected_label="inconsistent",
        instruction="Attention: choose Inconsistent here.",
    )
    rater = invite(study)
    client.post(reverse("annotation:rate-start", args=[rater.token]))
    shown = {}
    while True:
        response = client.get(reverse("annotation:rate", args=[rater.token]))
        if "page_state" not in response.context:
            break
        state = response.context["page_state"]
        role = Assignment.objects.get(code=state["code"]).item.role
        shown[role] = response.content.decode()
        client.post(
            state["submitUrl"],
            data=json.dumps({"label": "inconsistent"}),
            content_type="application/json",
        )
    assert set(shown) == {"sample", "gold", "attention"}
    assert "Attention: choose Inconsistent here." in shown["attention"]
    assert 'class="instruction"' not in shown["gold"] and "gold" not in shown["gold"].lower()
