"""Stored audio for the browser: short-lived signed URLs, byte-range serving and waveform peaks.

Nothing serves MEDIA_ROOT directly. A page that may show a submission signs the storage key of
each clip (bound to the viewer and, when given, to the submission, whose visibility is checked
again on every request); the URL works for SIGNED_URL_SECONDS. On the filesystem the view streams
the requested byte range itself (206 Partial Content, so browsers can seek); on S3 it redirects
to a presigned URL and S3 answers the ranges.
"""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass, field

from django.conf import settings
from django.core import signing
from django.core.files.storage import default_storage
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseForbidden,
    HttpResponseRedirect,
    JsonResponse,
)
from django.urls import reverse
from django.views.decorators.http import require_safe

from evaluation.held_out import held_out_key, sees_held_out
from evaluation.selectors import submissions_visible_to
from evaluation.stored import (
    content_type,
    peak_buckets,
    ranged_response,
    storage_is_s3,
    stored_peaks,
)

SALT = "floorboard.audio"
BLOCK_BYTES = 64 * 1024
PEAK_BUCKETS_DEFAULT = 1000
PEAK_BUCKETS_MAX = 4000
PEAK_CACHE_SECONDS = 7 * 24 * 3600


# --- Signed URLs -----------------------------------------------------------------------------


def _user_id(user) -> int | None:
    return user.pk if user is not None and user.is_authenticated else None


def audio_token(*, key: str, user, submission_id: int | None = None) -> str:
    """A signed, timestamped token naming one storage key, for this viewer only."""
    return signing.dumps({"k": key, "u": _user_id(user), "s": submission_id}, salt=SALT)


def audio_url(*, key: str, user, submission_id: int | None = None) -> str:
    token = audio_token(key=key, user=user, submission_id=submission_id)
    return reverse("audio", args=[token])


def peaks_url(*, key: str, user, submission_id: int | None = None) -> str:
    token = audio_token(key=key, user=user, submission_id=submission_id)
    return reverse("audio-peaks", args=[token])


@dataclass(frozen=True)
class Clip:
    """What the player fragment needs for one stored clip."""

    label: str
    url: str
    peaks_url: str
    markers: list[dict] = field(default_factory=list)
    name: str = ""  # the file's name in its task folder, e.g. response.wav

    @property
    def markers_json(self) -> str:
        return json.dumps(self.markers)


def clip_for(
    *,
    key: str,
    user,
    label: str,
    submission_id: int | None = None,
    markers: list | None = None,
    name: str = "",
) -> Clip:
    """A clip for the player fragment (leaderboard/fragments/player.html)."""
    return Clip(
        label=label,
        url=audio_url(key=key, user=user, submission_id=submission_id),
        peaks_url=peaks_url(key=key, user=user, submission_id=submission_id),
        markers=list(markers or []),
        name=name,
    )


class AccessDenied(Exception):
    pass


def key_from_token(token: str, *, user) -> str:
    """The storage key a token grants this user, or AccessDenied (expired, tampered, another
    viewer's token, or a submission this user may no longer see)."""
    try:
        payload = signing.loads(token, salt=SALT, max_age=settings.SIGNED_URL_SECONDS)
    except signing.SignatureExpired as exc:
        raise AccessDenied("this audio link has expired; reload the page") from exc
    except signing.BadSignature as exc:
        raise AccessDenied("this audio link is not valid") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("k"), str):
        raise AccessDenied("this audio link is not valid")
    if payload.get("u") != _user_id(user):
        raise AccessDenied("this audio link was made for someone else")
    submission_id = payload.get("s")
    if (
        submission_id is not None
        and not submissions_visible_to(user=user).filter(pk=submission_id).exists()
    ):
        raise AccessDenied("you may not hear this submission")
    if not sees_held_out(user) and held_out_key(payload["k"]):
        raise AccessDenied("this task is held out")
    return payload["k"]


def _private(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = f"private, max-age={settings.SIGNED_URL_SECONDS}"
    return response


@require_safe
def audio_file(request, token: str):
    """GET/HEAD one stored clip by signed token, honouring Range on the filesystem."""
    try:
        name = key_from_token(token, user=request.user)
    except AccessDenied as exc:
        return HttpResponseForbidden(str(exc))
    if storage_is_s3():
        url = default_storage.url(
            name,
            parameters={"ResponseContentType": content_type(name)},
            expire=settings.SIGNED_URL_SECONDS,
        )
        return _private(HttpResponseRedirect(url))
    return _private(ranged_response(request, name))


# --- Waveform peaks ---------------------------------------------------------------------------


def _bucket_count(raw: str | None) -> int:
    try:
        wanted = int(raw) if raw else PEAK_BUCKETS_DEFAULT
    except ValueError:
        wanted = PEAK_BUCKETS_DEFAULT
    return peak_buckets(wanted)


@require_safe
def audio_peaks(request, token: str):
    """The waveform of one stored clip as JSON, by the same signed token as the audio."""
    try:
        name = key_from_token(token, user=request.user)
    except AccessDenied as exc:
        return JsonResponse({"error": str(exc)}, status=403)
    if not default_storage.exists(name):
        raise Http404("no such audio file")
    try:
        peaks = stored_peaks(name=name, buckets=_bucket_count(request.GET.get("buckets")))
    except (wave.Error, EOFError) as exc:
        return JsonResponse({"error": f"not a PCM WAV file: {exc}"}, status=422)
    return _private(JsonResponse(peaks))
