"""Stored objects read without holding them whole: seekable range reads on S3 (a zip's
directory and one member, not the whole bundle), front-to-back streams, HTTP byte-range
responses, and cached waveform peaks. The leaderboard and rating studies put their own access
rules in front of these."""

from __future__ import annotations

import hashlib
import io
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from botocore.exceptions import (
    ClientError,
    ConnectionError,
    HTTPClientError,
    IncompleteReadError,
    ResponseStreamingError,
)
from django.conf import settings
from django.core.cache import cache
from django.core.files.storage import default_storage, storages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from storages.utils import clean_name
from urllib3.exceptions import HTTPError as Urllib3Error

from evaluation.audio import Unsatisfiable, parse_range, wav_peaks

# A response streams in blocks of this size; S3 range reads fetch buffers of S3_READ_BYTES.
BLOCK_BYTES = 64 * 1024
S3_READ_BYTES = 256 * 1024
PEAK_BUCKETS_MAX = 4000
PEAK_CACHE_SECONDS = 7 * 24 * 3600


# S3 error codes that say the store is busy or briefly away, not that the request is wrong.
TRANSIENT_CODES = {
    "InternalError",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "ServiceUnavailable",
    "SlowDown",
    "Throttling",
    "ThrottlingException",
}


def storage_unavailable(exc: BaseException) -> bool:
    """Whether an error (or one it was raised from) says the store did not answer or was
    briefly unable to (a refused or dropped connection, a timeout, a 5xx or throttling answer),
    as opposed to a permanent refusal (a missing object, access denied), which is not."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(
            exc,
            ConnectionError
            | HTTPClientError
            | IncompleteReadError
            | ResponseStreamingError
            | Urllib3Error,
        ):
            return True
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            return error.get("Code") in TRANSIENT_CODES or status >= 500
        exc = exc.__cause__ or exc.__context__
    return False


def storage_refusal(exc: BaseException) -> str | None:
    """A permanent storage error's reason in words (a missing object, access denied), or
    None when the error is not one."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if code in ("NoSuchKey", "404", "NotFound") or status == 404:
            return "a stored file is missing"
        if code in ("NoSuchBucket",):
            return "the storage bucket does not exist"
        if code in ("AccessDenied", "403", "Forbidden", "InvalidAccessKeyId") or status == 403:
            return "storage refused access"
    if isinstance(exc, FileNotFoundError):
        return "a stored file is missing"
    return None


def storage_is_s3() -> bool:
    """Whether the default storage is django-storages' S3 backend. Made, the storage has
    imported its backend: when the S3 module was never imported it cannot be one, and a worker
    on the filesystem does not pay for importing boto3 to find that out."""
    storage = storages["default"]
    module = sys.modules.get("storages.backends.s3")
    return module is not None and isinstance(storage, module.S3Storage)


class _RangedObject(io.RawIOBase):
    """A seekable read-only view of an S3 object that fetches only the bytes asked for."""

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
    return default_storage.bucket.Object(default_storage._normalize_name(clean_name(name)))


def open_stored_seekable(name: str):
    """A seekable binary file for a stored object; on S3 it reads by ranges, never the whole
    object (django-storages' own S3 files download everything first)."""
    if storage_is_s3():
        return io.BufferedReader(_RangedObject(_s3_object(name)), buffer_size=S3_READ_BYTES)
    return default_storage.open(name, "rb")


@contextmanager
def read_once(source: IO[bytes]) -> Iterator[IO[bytes]]:
    """``source`` read once, front to back, into an anonymous local file, which is what is
    then stored: storing may seek and read its input several times (an S3 upload seeks to the
    end for the size, then reads it for a checksum and again to send it), and from a member of
    a stored zip each of those means decompressing it and fetching it from the store again."""
    with tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR) as copy:
        shutil.copyfileobj(source, copy, BLOCK_BYTES)
        copy.seek(0)
        yield copy


def open_stored_stream(name: str):
    """A front-to-back binary stream of a stored object."""
    if storage_is_s3():
        return _s3_object(name).get()["Body"]
    return default_storage.open(name, "rb")


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


def content_type(name: str) -> str:
    return "audio/wav" if name.lower().endswith(".wav") else "application/octet-stream"


def ranged_response(request, name: str, *, named: bool = True) -> HttpResponse:
    """GET or HEAD of a stored object honouring a single Range (206, 416), streamed in blocks;
    on S3 by range reads. The caller adds its own caching headers. ``named``: say the file's
    name (never to a rater, for whom even a name can tell too much)."""
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
        handle = open_stored_seekable(name)
        response = StreamingHttpResponse(
            _RangeStream(handle, first, last), status=206 if span else 200
        )
    if span:
        response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["Content-Type"] = content_type(name)
    response["X-Content-Type-Options"] = "nosniff"
    if named:
        filename = name.rsplit("/", 1)[-1].replace('"', "")
        response["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


def peak_buckets(wanted: int) -> int:
    """Rounded to hundreds within bounds, so a handful of sizes share the cache."""
    return min(PEAK_BUCKETS_MAX, max(100, (wanted + 99) // 100 * 100))


def stored_peaks(*, name: str, buckets: int) -> dict:
    """wav_peaks of a stored clip, cached (a stored object never changes under its key)."""
    size = default_storage.size(name)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    cache_key = f"floorboard:peaks:v2:{digest}:{size}:{buckets}"
    peaks = cache.get(cache_key)
    if peaks is None:
        stream = open_stored_stream(name)
        try:
            peaks = wav_peaks(stream, buckets=buckets)
        finally:
            stream.close()
        cache.set(cache_key, peaks, PEAK_CACHE_SECONDS)
    return peaks
