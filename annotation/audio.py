"""Audio for raters: signed, rater-scoped URLs that name only an assignment (never a
submission, system or storage key), served from storage with HTTP Range support, and the
waveform peaks the player draws. On S3 the bytes are proxied, not redirected to, because a
presigned URL would carry the storage key (and with it the submission)."""

from __future__ import annotations

import re
import wave

import numpy as np
from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.urls import reverse

from .models import Assignment

SALT = "annotation.rater-audio"
WHICH = ("conversation", "response")
CHUNK = 256 * 1024
PEAK_BLOCK_FRAMES = 64 * 1024
PEAK_BUCKETS_MAX = 4000
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


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
    if assignment is None or which not in WHICH:
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


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single range, None for a header to ignore; ValueError when
    the range cannot be satisfied."""
    match = _RANGE.match(header.strip())
    if not match:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:
        suffix = int(last)
        if suffix == 0:
            raise ValueError("empty suffix range")
        return max(0, size - suffix), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or end < start:
        raise ValueError("range outside the file")
    return start, end


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
        wanted = _parse_range(request.headers.get("Range", ""), size)
    except ValueError:
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


def _samples(raw: bytes, width: int) -> np.ndarray:
    if width == 1:
        return (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    if width == 2:
        return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    if width == 4:
        return np.frombuffer(raw, dtype="<i4").astype(np.float64) / float(1 << 31)
    raise wave.Error(f"unsupported sample width {width} bytes")


def wav_peaks(handle, *, buckets: int) -> dict:
    """Min and max sample of `buckets` equal stretches of a PCM WAV, read block by block."""
    with wave.open(handle, "rb") as reader:
        channels, width = reader.getnchannels(), reader.getsampwidth()
        rate, frames = reader.getframerate(), reader.getnframes()
        count = max(0, min(buckets, frames))
        lows, highs = np.zeros(count), np.zeros(count)
        position = 0
        while position < frames:
            raw = reader.readframes(min(PEAK_BLOCK_FRAMES, frames - position))
            if not raw:
                break
            block = _samples(raw, width)
            block = block[: (len(block) // channels) * channels].reshape(-1, channels)
            index = ((position + np.arange(len(block), dtype=np.int64)) * count) // frames
            np.minimum.at(lows, index, block.min(axis=1))
            np.maximum.at(highs, index, block.max(axis=1))
            position += len(block)
    return {
        "duration": frames / rate if rate else 0.0,
        "buckets": count,
        "min": [round(float(v), 4) for v in lows],
        "max": [round(float(v), 4) for v in highs],
    }


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
