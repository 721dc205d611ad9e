"""Writes for uploads: receive a bundle (chunked to the server or straight to S3), validate it,
and turn it into a submission within the team's limits.

Limits are enforced under a lock on the team row, taken before counting and held until the
submission exists, so concurrent creates for one team are serialised and never exceed them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.bundles import BundleRejected
from evaluation.models import Benchmark, Judge, Membership, Submission, Team
from evaluation.services import bundle_validate, submission_create, upload_limits
from leaderboard.uploads import storage
from leaderboard.uploads.models import Upload
from leaderboard.uploads.selectors import (
    LimitRefusal,
    account_limit_refusal,
    open_uploads_refusal,
    team_limit_refusal,
)

logger = logging.getLogger(__name__)

COPY_BYTES = 1024 * 1024
# A zip holds its files plus headers; beyond the uncompressed-size cap, this much is headroom.
ZIP_OVERHEAD_BYTES = 64 * 1024 * 1024


class UploadError(Exception):
    """A request about an upload that cannot be honoured; the message says why."""

    status = 400


class NotAMember(UploadError):
    status = 403


class UploadClosed(UploadError):
    status = 409


class UploadIncomplete(UploadError):
    status = 409


class ChunkMismatch(UploadError):
    status = 409


class ChunkOutOfOrder(UploadError):
    status = 409

    def __init__(self, message: str, *, received: int):
        super().__init__(message)
        self.received = received


class LimitReached(Exception):
    def __init__(self, refusal: LimitRefusal):
        super().__init__(refusal.message)
        self.refusal = refusal


class IdempotencyConflict(Exception):
    pass


def max_upload_bytes(*, benchmark: Benchmark) -> int:
    return upload_limits(benchmark).max_bytes + ZIP_OVERHEAD_BYTES


# --- Limits ---------------------------------------------------------------------------------


def submission_create_within_limits(
    *,
    team: Team,
    benchmark: Benchmark,
    bundle_path: Path,
    system_name: str,
    system_type: str,
    judge: Judge | None,
    allow_partial: bool,
    submitted_by,
    publish: bool,
    idempotency_key: str,
    validated=None,
) -> tuple[Submission, bool]:
    """(submission, created). A submission already made by this team under the same key is
    returned as it is; otherwise the team's limits are checked and the submission created, both
    under the team row lock. Raises LimitReached or BundleRejected."""
    with transaction.atomic():
        _lock(user=submitted_by, team=team)
        if idempotency_key:
            existing = Submission.objects.filter(team=team, idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing, False
        refusal = team_limit_refusal(team=team) or (
            account_limit_refusal(user=submitted_by) if submitted_by else None
        )
        if refusal is not None:
            raise LimitReached(refusal)
        # Validated beforehand, outside the lock: only the counting and the insert hold it.
        submission = submission_create(
            validated=validated,
            benchmark=benchmark,
            bundle_path=bundle_path,
            system_name=system_name,
            row_group=system_type,
            judge=judge,
            allow_partial=allow_partial,
            team=team,
            submitted_by=submitted_by,
            publish=publish,
            idempotency_key=idempotency_key,
        )
        return submission, True


def _lock(*, user, team: Team | None) -> None:
    """Row locks on the submitting account, then its team (always in this order, so two
    creates never wait on each other crosswise), held until the transaction ends."""
    if user is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
    if team is not None:
        Team.objects.select_for_update().filter(pk=team.pk).values_list("pk").get()


def _check_member(user, team: Team) -> None:
    if not Membership.objects.filter(team=team, user=user).exists():
        raise NotAMember(f"you are not a member of team {team.name}")


def _check_judge(benchmark: Benchmark, judge: Judge | None) -> None:
    if judge is None and not benchmark.judges.filter(is_official=True).exists():
        raise UploadError(f"benchmark {benchmark.slug} has no official judge; choose one")
    if judge is not None and judge.benchmark_id != benchmark.pk:
        raise UploadError(f"judge {judge.slug} does not judge {benchmark.slug}")


# --- API creates ----------------------------------------------------------------------------


def _file_sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(COPY_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _replay(*, team: Team, key: str, fingerprint: str) -> Upload | None:
    prior = Upload.objects.filter(team=team, idempotency_key=key).first()
    if prior is None:
        if Submission.objects.filter(team=team, idempotency_key=key).exists():
            raise IdempotencyConflict(
                f"Idempotency-Key {key!r} was already used by team {team.name} for another request"
            )
        return None
    if prior.fingerprint != fingerprint:
        raise IdempotencyConflict(
            f"Idempotency-Key {key!r} was already used by team {team.name} with a different "
            "bundle or different fields"
        )
    if prior.submission_id is None:
        raise IdempotencyConflict(
            f"the submission created with Idempotency-Key {key!r} no longer exists"
        )
    return prior


def submission_create_via_api(
    *,
    user,
    team: Team,
    benchmark: Benchmark,
    bundle_path: Path,
    filename: str,
    system_name: str,
    system_type: str = "",
    judge: Judge | None = None,
    allow_partial: bool = False,
    publish: bool = False,
    idempotency_key: str = "",
    options: dict | None = None,
) -> tuple[Upload, bool]:
    """(upload record, created). The same Idempotency-Key with the same request returns the
    first result; with a different request it raises IdempotencyConflict. A rejected bundle
    raises BundleRejected and records nothing."""
    _check_member(user, team)
    _check_judge(benchmark, judge)
    sha, size = _file_sha256(bundle_path)
    fingerprint = hashlib.sha256(
        json.dumps(
            {
                "benchmark": benchmark.pk,
                "system": system_name,
                "system_type": system_type,
                "judge": judge.pk if judge else None,
                "allow_partial": allow_partial,
                "publish": publish,
                "options": options or {},
                "bundle_sha256": sha,
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()
    if idempotency_key:
        prior = _replay(team=team, key=idempotency_key, fingerprint=fingerprint)
        if prior is not None:
            return prior, False
    report, contents = bundle_validate(
        benchmark=benchmark, path=bundle_path, allow_partial=allow_partial, options=options
    )
    if not report.ok:
        raise BundleRejected(report)
    with transaction.atomic():
        _lock(user=user, team=team)
        if idempotency_key:
            # Two identical requests at once: the second waited for the lock and finds the first.
            prior = _replay(team=team, key=idempotency_key, fingerprint=fingerprint)
            if prior is not None:
                return prior, False
        submission, _ = submission_create_within_limits(
            team=team,
            benchmark=benchmark,
            bundle_path=bundle_path,
            system_name=system_name,
            system_type=system_type,
            judge=judge,
            allow_partial=allow_partial,
            submitted_by=user,
            publish=publish,
            idempotency_key=idempotency_key,
            validated=contents,
        )
        upload = Upload.objects.create(
            benchmark=benchmark,
            team=team,
            user=user,
            method=Upload.Method.API,
            status=Upload.Status.ACCEPTED,
            filename=filename[:255],
            size=size,
            received=size,
            system_name=system_name,
            system_type=system_type,
            options=contents.options,
            judge=submission.judge,
            allow_partial=allow_partial,
            publish=publish,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
            report=report.as_dict(),
            submission=submission,
            finished_at=timezone.now(),
        )
    return upload, True


# --- Browser uploads ------------------------------------------------------------------------


def upload_start(
    *,
    user,
    team: Team,
    benchmark: Benchmark,
    filename: str,
    size: int,
    system_name: str,
    system_type: str = "",
    judge: Judge | None = None,
    allow_partial: bool = False,
    publish: bool = False,
    options: dict | None = None,
) -> Upload:
    """Open an upload: a partial file on the filesystem, or a multipart upload in the bucket.
    Refused at once when the team could not submit now, before any byte is sent."""
    _check_member(user, team)
    _check_judge(benchmark, judge)
    if size <= 0:
        raise UploadError("the bundle is empty")
    limit = max_upload_bytes(benchmark=benchmark)
    if size > limit:
        raise UploadError(f"the bundle is {size:,} bytes; the limit is {limit:,}")
    refusal = team_limit_refusal(team=team) or account_limit_refusal(user=user)
    if refusal is not None:
        raise LimitReached(refusal)
    on_s3 = storage.uses_s3()
    with transaction.atomic():
        # Counted and created under the user's row lock: parallel starts cannot pass the cap.
        _lock(user=user, team=None)
        refusal = open_uploads_refusal(user=user, adding=size)
        if refusal is not None:
            raise LimitReached(refusal)
        upload = Upload.objects.create(
            benchmark=benchmark,
            team=team,
            user=user,
            method=Upload.Method.S3 if on_s3 else Upload.Method.CHUNKED,
            filename=filename[:255],
            size=size,
            system_name=system_name,
            system_type=system_type,
            options=options or {},
            judge=judge,
            allow_partial=allow_partial,
            publish=publish,
        )
    try:
        if on_s3:
            upload.s3_key = storage.s3_key(f"uploads/{upload.pk}.zip")
            upload.part_bytes = storage.s3_part_bytes(size)
            upload.s3_upload_id = storage.multipart_start(key=upload.s3_key)
            upload.save(update_fields=["s3_key", "part_bytes", "s3_upload_id"])
        else:
            storage.partial_create(upload.pk)
    except BaseException:
        upload.delete()
        raise
    return upload


@contextlib.contextmanager
def _spool(stream: BinaryIO, length: int, directory: Path) -> Iterator[BinaryIO]:
    """Copy one chunk from the request into an anonymous temporary file, checking its length."""
    with tempfile.TemporaryFile(dir=directory) as spooled:
        copied = 0
        while copied < length:
            piece = stream.read(min(COPY_BYTES, length - copied))
            if not piece:
                break
            spooled.write(piece)
            copied += len(piece)
        if copied != length or stream.read(1):
            raise UploadError(f"the chunk was announced as {length:,} bytes but {copied:,} arrived")
        spooled.seek(0)
        yield spooled


def _same_bytes(left: BinaryIO, right: BinaryIO, length: int) -> bool:
    while length > 0:
        step = min(COPY_BYTES, length)
        if left.read(step) != right.read(step):
            return False
        length -= step
    return True


def upload_chunk_append(*, upload: Upload, offset: int, length: int, stream: BinaryIO) -> int:
    """Write the bytes [offset, offset + length) of a chunked upload; returns the bytes held.

    A chunk must start at or before the end of what the server has: a chunk sent again (the
    client never saw the answer) is checked against the bytes already held and changes nothing;
    a chunk that would leave a gap is refused with the offset to continue from."""
    if upload.method != Upload.Method.CHUNKED:
        raise UploadError("this upload goes straight to S3, not through the server")
    if length <= 0:
        raise UploadError("the chunk is empty")
    if length > settings.UPLOAD_CHUNK_BYTES:
        raise UploadError(
            f"the chunk is {length:,} bytes; chunks are at most {settings.UPLOAD_CHUNK_BYTES:,}"
        )
    if offset < 0 or offset + length > upload.size:
        raise UploadError(
            f"bytes {offset:,}-{offset + length:,} fall outside the announced "
            f"{upload.size:,}-byte bundle"
        )
    path = storage.partial_path(upload.pk)
    with _spool(stream, length, path.parent) as chunk, transaction.atomic():
        locked = Upload.objects.select_for_update().get(pk=upload.pk)
        if not locked.is_open:
            raise UploadClosed(f"the upload is {locked.status}; it takes no more bytes")
        held = locked.received
        if offset > held:
            raise ChunkOutOfOrder(
                f"the chunk starts at byte {offset:,} but the server holds {held:,} bytes; "
                f"send from byte {held:,}",
                received=held,
            )
        with open(path, "r+b") as target:
            # Bytes past `held` are from an append whose commit never happened: drop them.
            target.truncate(held)
            overlap = min(held - offset, length)
            if overlap:
                target.seek(offset)
                if not _same_bytes(target, chunk, overlap):
                    raise ChunkMismatch(
                        f"bytes from {offset:,} differ from those already received; "
                        "start a new upload"
                    )
            if offset + length > held:
                target.seek(held)
                shutil.copyfileobj(chunk, target, COPY_BYTES)
                target.flush()
                os.fsync(target.fileno())
        received = max(held, offset + length)
        Upload.objects.filter(pk=upload.pk).update(received=received)
    return received


def upload_part_urls(*, upload: Upload, numbers: list[int]) -> dict[int, str]:
    if upload.method != Upload.Method.S3:
        raise UploadError("this upload is chunked to the server; it has no part URLs")
    if not upload.is_open or not upload.s3_upload_id:
        raise UploadClosed(f"the upload is {upload.status}; it takes no more parts")
    count = storage.s3_part_count(upload.size, upload.part_bytes)
    bad = [n for n in numbers if not 1 <= n <= count]
    if bad or not numbers:
        raise UploadError(f"part numbers run from 1 to {count}; asked for {bad or 'none'}")
    return {
        n: storage.part_url(key=upload.s3_key, upload_id=upload.s3_upload_id, number=n)
        for n in numbers
    }


def _discard(upload: Upload) -> None:
    """Delete whatever bytes the upload left behind (partial file, multipart, object)."""
    if upload.method == Upload.Method.CHUNKED:
        storage.partial_delete(upload.pk)
    elif upload.method == Upload.Method.S3:
        if upload.s3_upload_id:
            storage.multipart_abort(key=upload.s3_key, upload_id=upload.s3_upload_id)
        storage.object_delete(key=upload.s3_key)


def _assemble_s3(upload: Upload) -> None:
    """Complete the multipart upload once every part is there, sized as announced."""
    if upload.s3_upload_id:
        parts = storage.parts_uploaded(key=upload.s3_key, upload_id=upload.s3_upload_id)
        count = storage.s3_part_count(upload.size, upload.part_bytes)
        missing = sorted(set(range(1, count + 1)) - {p["PartNumber"] for p in parts})
        if missing:
            raise UploadIncomplete(
                f"{len(missing)} of {count} parts have not arrived (first: part {missing[0]})"
            )
        for part in parts:
            expected = storage.s3_part_size(upload.size, upload.part_bytes, part["PartNumber"])
            if part["Size"] != expected:
                raise UploadIncomplete(
                    f"part {part['PartNumber']} holds {part['Size']:,} bytes; expected "
                    f"{expected:,}: send it again"
                )
        storage.multipart_complete(key=upload.s3_key, upload_id=upload.s3_upload_id, parts=parts)
        upload.s3_upload_id = ""
        Upload.objects.filter(pk=upload.pk).update(s3_upload_id="")
    stored = storage.object_size(key=upload.s3_key)
    if stored != upload.size:
        raise UploadIncomplete(f"the bucket holds {stored} bytes; expected {upload.size:,}")


@contextlib.contextmanager
def _local_bundle(upload: Upload) -> Iterator[Path]:
    """A local path to the whole bundle. From S3 it is streamed into a temporary file first."""
    if upload.method == Upload.Method.CHUNKED:
        if upload.received != upload.size:
            raise UploadIncomplete(
                f"the server holds {upload.received:,} of {upload.size:,} bytes; send the rest"
            )
        yield storage.partial_path(upload.pk)
        return
    _assemble_s3(upload)
    with tempfile.NamedTemporaryFile(
        suffix=".zip", prefix="floorboard-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as local:
        storage.object_download(key=upload.s3_key, target=local)
        local.flush()
        yield Path(local.name)


# What the user reads when finishing failed for a reason of the server's own (the details go to
# the log, never to the user).
FINISH_FAILED = (
    "The server could not finish checking this bundle. Its bytes are kept: finish again, "
    "or cancel the upload."
)


class FinishFailed(UploadError):
    status = 500


def _validation_stale_before():
    """A finish that has been validating since before this died with its process (a killed
    worker never reopens its upload): the upload may be finished again or cancelled."""
    return timezone.now() - timedelta(seconds=settings.UPLOAD_VALIDATING_STALE_SECONDS)


def _claimable(upload: Upload):
    return Upload.objects.filter(pk=upload.pk).filter(
        Q(status=Upload.Status.UPLOADING)
        | Q(status=Upload.Status.VALIDATING, updated_at__lt=_validation_stale_before())
    )


def _reopen(upload: Upload, *, error: str, report: dict | None) -> None:
    """Back to uploading, so the user can finish again or cancel. Keeps the report when it can
    be stored, and the upload reopened even when it cannot."""
    for kept in (report, None) if report is not None else (None,):
        try:
            Upload.objects.filter(pk=upload.pk, status=Upload.Status.VALIDATING).update(
                status=Upload.Status.UPLOADING,
                error=error,
                report=kept,
                updated_at=timezone.now(),
            )
            break
        except Exception:
            logger.exception("could not record the failed finish of upload %s", upload.pk)
    upload.refresh_from_db()


def upload_finish(*, upload: Upload) -> Upload:
    """Validate the whole bundle; rejected: keep the report, delete the bytes, create nothing.
    Accepted: create the submission within the team's limits. Whatever goes wrong leaves the
    upload open, to be finished again or cancelled: LimitReached and UploadError say why,
    anything else is logged and raised as FinishFailed with a message of our own."""
    if not _claimable(upload).update(
        status=Upload.Status.VALIDATING, error="", updated_at=timezone.now()
    ):
        upload.refresh_from_db()
        raise UploadClosed(f"the upload is {upload.status}; it cannot be finished again")
    upload.refresh_from_db()
    report_json = None
    try:
        with _local_bundle(upload) as path:
            report, contents = bundle_validate(
                benchmark=upload.benchmark,
                path=path,
                allow_partial=upload.allow_partial,
                options=upload.options,
            )
            report_json = report.as_dict()
            submission = None
            if report.ok:
                submission, _ = submission_create_within_limits(
                    team=upload.team,
                    benchmark=upload.benchmark,
                    bundle_path=path,
                    system_name=upload.system_name,
                    system_type=upload.system_type,
                    judge=upload.judge,
                    allow_partial=upload.allow_partial,
                    submitted_by=upload.user,
                    publish=upload.publish,
                    idempotency_key=f"upload-{upload.pk}",
                    validated=contents,
                )
        Upload.objects.filter(pk=upload.pk, status=Upload.Status.VALIDATING).update(
            status=Upload.Status.ACCEPTED if report.ok else Upload.Status.REJECTED,
            submission=submission,
            report=report_json,
            finished_at=timezone.now(),
            error="",
            updated_at=timezone.now(),
        )
    except (UploadError, LimitReached) as exc:
        _reopen(upload, error=str(exc), report=report_json)
        raise
    except Exception as exc:
        logger.exception("finishing upload %s failed", upload.pk)
        _reopen(upload, error=FINISH_FAILED, report=None)
        raise FinishFailed(FINISH_FAILED) from exc
    except BaseException:
        _reopen(upload, error=FINISH_FAILED, report=None)
        raise
    upload.refresh_from_db()
    # Accepted: the submission holds its own copy. Rejected: nothing of it is kept.
    try:
        _discard(upload)
    except Exception:
        logger.exception("could not delete the bytes of upload %s", upload.pk)
    return upload


def upload_cancel(*, upload: Upload) -> Upload:
    if not _claimable(upload).update(
        status=Upload.Status.CANCELLED, finished_at=timezone.now(), updated_at=timezone.now()
    ):
        upload.refresh_from_db()
        raise UploadClosed(f"the upload is {upload.status}; there is nothing to cancel")
    upload.refresh_from_db()
    _discard(upload)
    return upload


def upload_temp_files_sweep(*, older_than: timedelta) -> int:
    """Delete files in FILE_UPLOAD_TEMP_DIR untouched for this long: what a request killed
    mid-upload (a worker timeout) left behind. Returns how many."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR)
    cutoff = (timezone.now() - older_than).timestamp()
    removed = 0
    for path in folder.iterdir() if folder.is_dir() else ():
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def uploads_expire(*, older_than: timedelta) -> int:
    """Give up on uploads untouched for this long: delete their bytes. One whose finish died
    after its submission was created is marked accepted instead. Returns how many changed."""
    cutoff = timezone.now() - older_than
    changed = 0
    stale = Upload.objects.filter(
        status__in=[Upload.Status.UPLOADING, Upload.Status.VALIDATING], updated_at__lt=cutoff
    ).exclude(method=Upload.Method.API)
    for upload in stale:
        made = Submission.objects.filter(
            team=upload.team, idempotency_key=f"upload-{upload.pk}"
        ).first()
        status = Upload.Status.ACCEPTED if made else Upload.Status.EXPIRED
        if not Upload.objects.filter(pk=upload.pk, status=upload.status).update(
            status=status, submission=made, finished_at=timezone.now()
        ):
            continue
        try:
            _discard(upload)
        except Exception:
            logger.exception("could not delete the bytes of upload %s", upload.pk)
        changed += 1
    return changed
