"""Where the bytes of an upload live until it is finished.

Filesystem storage: one partial file under the storage's uploads/partial/ folder, appended chunk
by chunk. S3 storage: a multipart upload the browser fills through presigned part URLs.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import BinaryIO

from botocore.exceptions import ClientError
from django.core.files.storage import storages

# The browser sends parts of this size straight to the bucket; S3 allows at most 10,000 parts
# and at least 5 MiB for every part but the last.
S3_PART_BYTES = 16 * 1024 * 1024
S3_MAX_PARTS = 10_000
S3_MIN_PART_BYTES = 5 * 1024 * 1024
# A part URL is asked for just before its part is sent, so it need not outlive one part.
PART_URL_SECONDS = 3600


# --- Filesystem -----------------------------------------------------------------------------


def partial_name(upload_id) -> str:
    """The storage name of an upload's partial file."""
    return f"uploads/partial/{upload_id}.part"


def partial_path(upload_id) -> Path:
    return Path(storages["default"].path(partial_name(upload_id)))


def partial_create(upload_id) -> Path:
    path = partial_path(upload_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def partial_delete(upload_id) -> None:
    partial_path(upload_id).unlink(missing_ok=True)


def partial_fill(upload_id, *, source: Path) -> None:
    """The whole upload at once: ``source`` (a request's temporary file) becomes the partial
    file, moved where it can be (streamed across filesystems)."""
    shutil.move(source, partial_path(upload_id))


def partial_place(upload_id, *, name: str) -> None:
    """Make the partial file also the stored file `name`, without copying its bytes: a hard
    link in the same storage folder (a copy only where the filesystem has no links). The partial
    stays until the upload is discarded, so a finish that fails later leaves it as it was."""
    target = Path(storages["default"].path(name))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(partial_path(upload_id), target)
    except OSError:
        shutil.copyfile(partial_path(upload_id), target)


# --- S3 -------------------------------------------------------------------------------------


def _s3():
    storage = storages["default"]
    return storage.bucket.meta.client, storage.bucket_name


def s3_key(name: str) -> str:
    """The object key for a storage name, under the storage's location prefix if it has one."""
    location = (storages["default"].location or "").strip("/")
    return f"{location}/{name}" if location else name


def s3_part_bytes(size: int) -> int:
    """S3_PART_BYTES, or larger (whole MiB) when the bundle would need more than 10,000 parts."""
    needed = math.ceil(size / S3_MAX_PARTS)
    if needed <= S3_PART_BYTES:
        return S3_PART_BYTES
    return math.ceil(needed / (1024 * 1024)) * 1024 * 1024


def s3_part_count(size: int, part_bytes: int) -> int:
    return max(1, math.ceil(size / part_bytes))


def s3_part_size(size: int, part_bytes: int, number: int) -> int:
    """Bytes in part `number` (from 1): part_bytes, and the remainder for the last one."""
    return max(0, min(part_bytes, size - (number - 1) * part_bytes))


def multipart_start(*, key: str) -> str:
    client, bucket = _s3()
    return client.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/zip")[
        "UploadId"
    ]


def part_url(*, key: str, upload_id: str, number: int) -> str:
    """A presigned PUT for one part, for the endpoint browsers reach (config/storage.py)."""
    storage = storages["default"]
    client = getattr(storage, "public_client", None) or storage.bucket.meta.client
    bucket = storage.bucket_name
    return client.generate_presigned_url(
        "upload_part",
        Params={"Bucket": bucket, "Key": key, "UploadId": upload_id, "PartNumber": number},
        ExpiresIn=PART_URL_SECONDS,
    )


def parts_uploaded(*, key: str, upload_id: str) -> list[dict]:
    """[{"PartNumber", "ETag", "Size"}] of the parts the bucket holds, in order."""
    client, bucket = _s3()
    parts: list[dict] = []
    for page in client.get_paginator("list_parts").paginate(
        Bucket=bucket, Key=key, UploadId=upload_id
    ):
        parts.extend(page.get("Parts", []))
    return sorted(parts, key=lambda part: part["PartNumber"])


def multipart_complete(*, key: str, upload_id: str, parts: list[dict]) -> None:
    client, bucket = _s3()
    client.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        MultipartUpload={
            "Parts": [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in parts]
        },
    )


def multipart_abort(*, key: str, upload_id: str) -> None:
    client, bucket = _s3()
    try:
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchUpload":
            raise


def object_size(*, key: str) -> int | None:
    client, bucket = _s3()
    try:
        return client.head_object(Bucket=bucket, Key=key)["ContentLength"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


def object_upload(*, key: str, path: Path) -> None:
    """Put a local file into the bucket, streamed (in parts when it is large)."""
    client, bucket = _s3()
    client.upload_file(str(path), bucket, key)


def object_download(*, key: str, target: BinaryIO) -> None:
    """Stream the object into an open local file (ranged GETs, never the whole object in memory)."""
    client, bucket = _s3()
    client.download_fileobj(bucket, key, target)


def object_copy(*, source: str, target: str) -> None:
    """Copy an object inside the bucket: CopyObject, or UploadPartCopy in parts past 5 GB. The
    bytes never leave the store."""
    client, bucket = _s3()
    client.copy({"Bucket": bucket, "Key": source}, bucket, target)


def object_delete(*, key: str) -> None:
    client, bucket = _s3()
    client.delete_object(Bucket=bucket, Key=key)


def multipart_uploads_abort_stale(*, initiated_before, keep: set[str]) -> list[str]:
    """Abort every incomplete multipart upload in the bucket, under any prefix (bundles/,
    uploads/, submissions/...), begun before ``initiated_before``, except the upload ids in
    ``keep`` (browser uploads still open). Returns the keys whose upload was aborted."""
    client, bucket = _s3()
    aborted = []
    for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=bucket):
        for upload in page.get("Uploads", []):
            if upload["UploadId"] in keep or upload["Initiated"] >= initiated_before:
                continue
            multipart_abort(key=upload["Key"], upload_id=upload["UploadId"])
            aborted.append(upload["Key"])
    return aborted
