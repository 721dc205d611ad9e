"""Audio for raters: signed, rater-scoped URLs that name only an assignment (never a
submission, system or storage key), served from storage with HTTP Range support, and the
waveform peaks the player draws. On S3 the bytes are proxied, not redirected to, because a
presigned URL would carry the storage key (and with it the submission)."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.urls import reverse

from evaluation.audio import Unsatisfiable, parse_range, wav_peaks

from .models import Assignment, item_clip

SALT = "annotation.rater-audio"
CHUNK = 256 * 1024
PEAK_BUCKETS_MAX = 4000


def _token(assignment: Assignment, which: str) -> str:
    return signing.TimestampSigner(salt=SALT).sign_object(
        {"r": assignment.rater_id, "a": assignment.code, "w": which}
    )


def audio_url(*, assignment: Assignment, which: str) -> str:
    return reverse("annotation:rater-audio", args=[_token(assignment, which)])


def peaks_url(*, assignment: Assignment, which: str) -> str:
    return reverse("annotation:rater-audio-peaks", args=[_token(assignment, which)])


def audio_lifetime_seconds(study) -> int:
    """As long as the rater keeps the item, and never shorter than the site's signed URLs."""
    return max(settings.SIGNED_URL_SECONDS, study.lock_minutes * 60)


def audio_assignment(token: str) -> tuple[Assignment, str]:
    """The assignment and which clip a token grants; Http404 for anything not valid now."""
    try:
        payload = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=None)
        assignment = (
            Assignment.objects.select_related("item", "rater__study")
            .filter(code=payload["a"], rater_id=payload["r"])
            .first()
        )
        which = payload["w"]
    except (signing.BadSignature, KeyError, TypeError):
        raise Http404("no such clip") from None
    if assignment is None or item_clip(assignment.item, which) is None:
        raise Http404("no such clip")
    try:
        signing.TimestampSigner(salt=SALT).unsign_object(
            token, max_age=audio_lifetime_seconds(assignment.rater.study)
        )
    except signing.SignatureExpired:
        raise Http404("this clip link has expired; reload the page") from None
    if not assignment.rater.is_active or assignment.status == Assignment.Status.RELEASED:
        raise Http404("no such clip")
    return assignment, which


def _s3_range(key: str, start: int, end: int):
    """A streaming body of bytes [start, end] of an S3 object."""
    from storages.utils import clean_name

    name = default_storage._normalize_name(clean_name(key))
    return default_storage.bucket.Object(name).get(Range=f"bytes={start}-{end}")["Body"]


def _storage_is_s3() -> bool:
    return hasattr(default_storage, "bucket")


def _stream(handle, length: int):
    try:
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk
    finally:
        handle.close()


def ranged_response(request, key: str, content_type: str = "audio/wav") -> HttpResponse:
    try:
        size = default_storage.size(key)
    except FileNotFoundError:
        raise Http404("the clip is missing from storage") from None
    try:
        wanted = parse_range(request.headers.get("Range"), size)
    except Unsatisfiable:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = wanted if wanted else (0, size - 1)
    length = max(0, end - start + 1)
    if _storage_is_s3() and length:
        handle = _s3_range(key, start, end)
    else:
        handle = default_storage.open(key, "rb")
        if start:
            handle.seek(start)
    response = StreamingHttpResponse(
        _stream(handle, length), status=206 if wanted else 200, content_type=content_type
    )
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if wanted:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Content-Type-Options"] = "nosniff"
    return response


# --- Waveform peaks ---------------------------------------------------------------------------


def item_peaks(*, key: str, sha256: str, buckets: int) -> dict:
    """Peaks of an item's clip, cached by the audio's own hash (the bytes never change)."""
    buckets = min(PEAK_BUCKETS_MAX, max(100, (buckets + 99) // 100 * 100))
    cache_key = f"annotation:peaks:{sha256 or key}:{buckets}"
    peaks = cache.get(cache_key)
    if peaks is None:
        with default_storage.open(key, "rb") as handle:
            peaks = wav_peaks(handle, buckets=buckets)
        cache.set(cache_key, peaks, 7 * 24 * 3600)
    return peaks
