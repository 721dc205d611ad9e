"""Stored audio for the browser: short-lived signed URLs, byte-range serving and waveform peaks.

Nothing serves MEDIA_ROOT directly. A page that may show a submission signs the storage key of
each clip (bound to the viewer and, when given, to the submission, whose visibility is checked
again on every request); the URL works for SIGNED_URL_SECONDS. On the filesystem the view streams
the requested byte range itself (206 Partial Content, so browsers can seek); on S3 it redirects
to a presigned URL and S3 answers the ranges.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseForbidden,
    HttpResponseRedirect,
    JsonResponse,
    StreamingHttpResponse,
)
from django.urls import reverse
from django.views.decorators.http import require_safe

from evaluation.audio import Unsatisfiable, parse_range, wav_peaks
from evaluation.selectors import submissions_visible_to

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
    return payload["k"]


# --- Storage ----------------------------------------------------------------------------------


def storage_is_s3() -> bool:
    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - django-storages is a dependency
        return False
    return isinstance(default_storage, S3Storage)


class _RangedObject(io.RawIOBase):
    """A seekable read-only view of an S3 object that fetches only the bytes asked for, so a zip's
    directory and one member can be read without downloading the whole bundle."""

    def __init__(self, obj):
        self._obj = obj
        self._size = obj.content_length
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        if self._position >= self._size or len(buffer) == 0:
            return 0
        last = min(self._position + len(buffer), self._size) - 1
        data = self._obj.get(Range=f"bytes={self._position}-{last}")["Body"].read()
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def _s3_object(name: str):
    from storages.utils import clean_name

    return default_storage.bucket.Object(default_storage._normalize_name(clean_name(name)))


def open_stored_seekable(name: str):
    """A seekable binary file for a stored object; on S3 it reads by ranges, never the whole
    object (django-storages' own S3 files download everything first)."""
    if storage_is_s3():
        return io.BufferedReader(_RangedObject(_s3_object(name)), buffer_size=256 * 1024)
    return default_storage.open(name, "rb")


def open_stored_stream(name: str):
    """A front-to-back binary stream of a stored object."""
    if storage_is_s3():
        return _s3_object(name).get()["Body"]
    return default_storage.open(name, "rb")


# --- Byte ranges -------------------------------------------------------------------------------


class _RangeStream:
    """Yields bytes [first, last] of an open file in blocks and closes it when done or closed."""

    def __init__(self, handle, first: int, last: int):
        self._handle = handle
        self._remaining = last - first + 1
        handle.seek(first)

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._remaining <= 0:
            self.close()
            raise StopIteration
        block = self._handle.read(min(BLOCK_BYTES, self._remaining))
        if not block:
            self.close()
            raise StopIteration
        self._remaining -= len(block)
        return block

    def close(self) -> None:
        self._handle.close()


def _content_type(name: str) -> str:
    return "audio/wav" if name.lower().endswith(".wav") else "application/octet-stream"


def _range_response(request, name: str) -> HttpResponse:
    try:
        size = default_storage.size(name)
    except (FileNotFoundError, OSError) as exc:
        raise Http404("no such audio file") from exc
    # An If-Range we cannot validate (we send no validators) means: send the whole file.
    header = None if request.headers.get("If-Range") else request.headers.get("Range")
    try:
        span = parse_range(header, size)
    except Unsatisfiable:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        response["Accept-Ranges"] = "bytes"
        return response
    first, last = span if span else (0, size - 1)
    length = max(0, last - first + 1)
    if request.method == "HEAD" or length == 0:
        response = HttpResponse(status=206 if span else 200)
    else:
        handle = default_storage.open(name, "rb")
        response = StreamingHttpResponse(
            _RangeStream(handle, first, last), status=206 if span else 200
        )
    if span:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["Content-Type"] = _content_type(name)
    filename = name.rsplit("/", 1)[-1].replace('"', "")
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


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
            parameters={"ResponseContentType": _content_type(name)},
            expire=settings.SIGNED_URL_SECONDS,
        )
        return _private(HttpResponseRedirect(url))
    return _private(_range_response(request, name))


# --- Waveform peaks ---------------------------------------------------------------------------


def _bucket_count(raw: str | None) -> int:
    try:
        wanted = int(raw) if raw else PEAK_BUCKETS_DEFAULT
    except ValueError:
        wanted = PEAK_BUCKETS_DEFAULT
    # Rounded to hundreds so a handful of sizes share the cache.
    return min(PEAK_BUCKETS_MAX, max(100, int(math.ceil(wanted / 100.0)) * 100))


def stored_peaks(*, name: str, buckets: int) -> dict:
    """wav_peaks of a stored clip, cached (stored clips never change under the same key)."""
    size = default_storage.size(name)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    cache_key = f"floorboard:peaks:v1:{digest}:{size}:{buckets}"
    peaks = cache.get(cache_key)
    if peaks is None:
        stream = open_stored_stream(name)
        try:
            peaks = wav_peaks(stream, buckets=buckets)
        finally:
            stream.close()
        cache.set(cache_key, peaks, PEAK_CACHE_SECONDS)
    return peaks


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
