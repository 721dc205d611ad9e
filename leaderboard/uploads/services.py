"""Writes for uploads: receive a bundle (chunked to the server or straight to S3), validate it,
and hand it to evaluation.services.submissions.submission_create_within_limits, which turns it
into a submission within the team's limits.

Nothing but that counting and the submission's rows happens under the team's row lock: the
bundle is validated and put into bundles/ before it, and deleted again if no submission takes it.

A browser upload is finished by a worker (tasks.finish_upload): the request checks that every
byte is there and that the team could submit now, marks the upload finishing and queues it; the
upload's state endpoint says how it went.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from evaluation.models import Benchmark, Judge, Submission, Team
from evaluation.selectors import (
    account_limit_refusal,
    judge_choice_message,
    submission_create_refusal,
    team_limit_refusal,
)
from evaluation.services.files import file_sha256
from evaluation.services.submissions import (
    LimitReached,
    StoredBundle,
    bundle_discard_quietly,
    bundle_stored_name,
    bundle_suffix,
    bundle_validate,
    limits_locked,
    submission_create_within_limits,
    upload_limits,
)
from evaluation.stored import storage_is_s3
from leaderboard.uploads import storage
from leaderboard.uploads.models import Upload
from leaderboard.uploads.selectors import open_uploads_refusal

logger = logging.getLogger(__name__)

COPY_BYTES = 1024 * 1024
# A zip holds its files plus headers; beyond the uncompressed-size cap, this much is headroom.
ZIP_OVERHEAD_BYTES = 64 * 1024 * 1024


class UploadError(Exception):
    """A request about an upload that cannot be honoured; the message says why."""

    status = 400


class NotAMember(UploadError):
    """Not a member of the team, or not one that may publish."""

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


class IdempotencyConflict(Exception):
    pass


def max_upload_bytes(*, benchmark: Benchmark) -> int:
    return upload_limits(benchmark).max_bytes + ZIP_OVERHEAD_BYTES


def _check_may_submit(user, team: Team, *, publish: bool) -> None:
    refusal = submission_create_refusal(user=user, team=team, publish=publish)
    if refusal:
        raise NotAMember(refusal)


def _check_judge(benchmark: Benchmark, judge: Judge | None) -> None:
    if judge is None and not benchmark.judges.filter(is_official=True).exists():
        raise UploadError(judge_choice_message(benchmark))
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
    if prior.status == Upload.Status.ACCEPTED and prior.submission_id is None:
        raise IdempotencyConflict(
            f"the submission created with Idempotency-Key {key!r} no longer exists"
        )
    return prior


def upload_from_api(
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
    """(upload, created): an API request's bundle taken as an upload whose bytes are all there,
    and its finish queued, exactly as a browser upload's finish is: a worker validates it and
    creates the submission (upload_finish), never the web process. The request's file becomes
    the upload's bytes (moved on the filesystem, streamed into the bucket on S3); the caller
    answers at once with the upload's state, which the client follows.

    The same Idempotency-Key with the same request returns the first upload as it stands (a
    finish that failed for a reason of the server's own is queued again); with a different
    request it raises IdempotencyConflict. What can be told at once (not a member, an unknown
    judge, too large, a limit reached) raises before anything is stored."""
    _check_may_submit(user, team, publish=publish)
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
            return _finish_again(prior), False
    upload = upload_start(
        user=user,
        team=team,
        benchmark=benchmark,
        filename=filename,
        size=size,
        system_name=system_name,
        system_type=system_type,
        judge=judge,
        allow_partial=allow_partial,
        publish=publish,
        options=options,
        whole=True,
    )
    try:
        if upload.method == Upload.Method.S3:
            storage.object_upload(key=upload.s3_key, path=bundle_path)
        else:
            storage.partial_fill(upload.pk, source=bundle_path)
        with transaction.atomic():
            Upload.objects.filter(pk=upload.pk).update(
                received=size, idempotency_key=idempotency_key, fingerprint=fingerprint
            )
    except IntegrityError:
        # The same key at the same moment from another request of the team: that one stands.
        _drop(upload)
        prior = _replay(team=team, key=idempotency_key, fingerprint=fingerprint)
        if prior is None:
            raise
        return _finish_again(prior), False
    except BaseException:
        _drop(upload)
        raise
    upload.refresh_from_db()
    try:
        return upload_finish_request(upload=upload), True
    except (UploadError, LimitReached):
        _drop(upload)
        raise


def _drop(upload: Upload) -> None:
    """An API upload that is not going ahead: its bytes and its row go."""
    try:
        _discard(upload)
    finally:
        Upload.objects.filter(pk=upload.pk).delete()


def _finish_again(upload: Upload) -> Upload:
    """A replayed API request: an upload left open by a finish that failed is queued again."""
    if upload.is_open and upload.error and upload.received == upload.size:
        with contextlib.suppress(UploadError):
            upload = upload_finish_request(upload=upload)
    upload.refresh_from_db()
    return upload


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
    whole: bool = False,
) -> Upload:
    """Open an upload: a partial file on the filesystem, or a multipart upload in the bucket
    (``whole``: an object the server puts there in one go, for an API request's file).
    Refused at once when the team could not submit now, before any byte is sent."""
    _check_may_submit(user, team, publish=publish)
    _check_judge(benchmark, judge)
    if size <= 0:
        raise UploadError("the bundle is empty")
    limit = max_upload_bytes(benchmark=benchmark)
    if size > limit:
        raise UploadError(f"the bundle is {size:,} bytes; the limit is {limit:,}")
    # The bundle's own bytes at least: what it unpacks to is counted again once it is read.
    refusal = team_limit_refusal(team=team, adding_bytes=size) or account_limit_refusal(
        user=user, adding_bytes=size
    )
    if refusal is not None:
        raise LimitReached(refusal)
    on_s3 = storage_is_s3()
    # Counted and created under the user's row lock: parallel starts cannot pass the cap.
    with limits_locked(user=user, team=None):
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
            if not whole:
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


def _check_parts(upload: Upload) -> list[dict]:
    """The bucket's parts of a multipart upload, once every one is there, sized as announced."""
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
    return parts


def _check_complete(upload: Upload) -> None:
    """Every byte is where the worker will look for it (cheap: no byte is read)."""
    if upload.method == Upload.Method.CHUNKED:
        if upload.received != upload.size:
            raise UploadIncomplete(
                f"the server holds {upload.received:,} of {upload.size:,} bytes; send the rest"
            )
    elif upload.s3_upload_id:
        _check_parts(upload)
    else:
        _check_object(upload)


def _check_object(upload: Upload) -> None:
    stored = storage.object_size(key=upload.s3_key)
    if stored != upload.size:
        raise UploadIncomplete(f"the bucket holds {stored} bytes; expected {upload.size:,}")


def _assemble_s3(upload: Upload) -> None:
    """Complete the multipart upload once every part is there, sized as announced."""
    if upload.s3_upload_id:
        parts = _check_parts(upload)
        storage.multipart_complete(key=upload.s3_key, upload_id=upload.s3_upload_id, parts=parts)
        upload.s3_upload_id = ""
        Upload.objects.filter(pk=upload.pk).update(s3_upload_id="")
    _check_object(upload)


@contextlib.contextmanager
def _local_bundle(upload: Upload) -> Iterator[Path]:
    """A local path to the whole bundle, to validate. From S3 it is streamed into a temporary
    file first (read once; what is stored is copied inside the bucket, see _place)."""
    if upload.method == Upload.Method.CHUNKED:
        _check_complete(upload)
        yield storage.partial_path(upload.pk)
        return
    _assemble_s3(upload)
    with tempfile.NamedTemporaryFile(
        suffix=".zip", prefix="floorboard-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as local:
        storage.object_download(key=upload.s3_key, target=local)
        local.flush()
        yield Path(local.name)


def _place(upload: Upload, *, sha256: str, size: int) -> StoredBundle:
    """The upload's bytes under a new name in bundles/, by the store itself: a hard link on the
    filesystem, a copy inside the bucket on S3. The upload's own bytes stay until it is done."""
    name = bundle_stored_name(
        sha256=sha256, suffix=bundle_suffix(upload.benchmark, upload.filename) or ".zip"
    )
    if upload.method == Upload.Method.CHUNKED:
        storage.partial_place(upload.pk, name=name)
    else:
        storage.object_copy(source=upload.s3_key, target=storage.s3_key(name))
    return StoredBundle(name=name, sha256=sha256, size=size)


# What the user reads when finishing failed for a reason of the server's own (the details go to
# the log, never to the user).
FINISH_FAILED = (
    "The server could not finish checking this bundle. Its bytes are kept: finish again, "
    "or cancel the upload."
)
QUEUE_FAILED = (
    "The server could not hand this bundle to a worker just now. Its bytes are kept: finish "
    "again in a minute, or cancel the upload."
)


FINISHING = (Upload.Status.FINISHING, Upload.Status.VALIDATING)


def _validation_stale_before():
    """A finish queued or validating since before this died with its process (a killed worker
    never reopens its upload, a lost message never reaches one): the upload may be finished
    again or cancelled."""
    return timezone.now() - timedelta(seconds=settings.UPLOAD_VALIDATING_STALE_SECONDS)


def _claimable(upload: Upload):
    return Upload.objects.filter(pk=upload.pk).filter(
        Q(status=Upload.Status.UPLOADING)
        | Q(status__in=FINISHING, updated_at__lt=_validation_stale_before())
    )


def _reopen(upload: Upload, *, error: str, report: dict | None) -> None:
    """Back to uploading, so the user can finish again or cancel. Keeps the report when it can
    be stored, and the upload reopened even when it cannot."""
    for kept in (report, None) if report is not None else (None,):
        try:
            Upload.objects.filter(pk=upload.pk, status__in=FINISHING).update(
                status=Upload.Status.UPLOADING,
                error=error,
                report=kept,
                updated_at=timezone.now(),
            )
            break
        except Exception:
            logger.exception("could not record the failed finish of upload %s", upload.pk)
    upload.refresh_from_db()


def upload_finish_request(*, upload: Upload) -> Upload:
    """Hand a whole upload to a worker to validate and submit (upload_finish). What can be told
    at once is: bytes still missing (UploadIncomplete) or a team that could not submit now
    (LimitReached) leave the upload open with the reason. Otherwise it is marked finishing and
    queued once this commits; with eager Celery it is finished by the time this returns."""
    if not _claimable(upload).update(
        status=Upload.Status.FINISHING, error="", updated_at=timezone.now()
    ):
        upload.refresh_from_db()
        raise UploadClosed(f"the upload is {upload.status}; it cannot be finished again")
    upload.refresh_from_db()
    try:
        _check_complete(upload)
        refusal = team_limit_refusal(team=upload.team, adding_bytes=upload.size) or (
            account_limit_refusal(user=upload.user, adding_bytes=upload.size)
            if upload.user
            else None
        )
        if refusal is not None:
            raise LimitReached(refusal)
    except (UploadError, LimitReached) as exc:
        _reopen(upload, error=str(exc), report=upload.report)
        raise
    except BaseException:
        _reopen(upload, error=FINISH_FAILED, report=upload.report)
        raise
    transaction.on_commit(lambda: _queue_finish(upload))
    upload.refresh_from_db()
    return upload


def _queue_finish(upload: Upload) -> None:
    from leaderboard.uploads.tasks import finish_upload  # the task module imports this one

    try:
        finish_upload.delay(str(upload.pk))
    except KombuOperationalError:
        logger.warning("could not queue the finish of upload %s: broker unreachable", upload.pk)
        _reopen(upload, error=QUEUE_FAILED, report=upload.report)


def upload_finish(*, upload_id) -> Upload | None:
    """The worker's part of a finish. Validate the whole bundle; rejected: keep the report,
    delete the bytes, create nothing. The same when the uploader is no longer a member of the
    team (or no longer an owner, when the upload asked to publish): rejected with that reason.
    Accepted: put the bytes into bundles/ (no copy through
    this process), then, under the team's row lock, count its limits and create the
    submission. Whatever goes wrong leaves no stored bundle and no submission, and the upload
    open with the reason, to be finished again or cancelled (a reason of the server's own is
    logged and shown as FINISH_FAILED). None when the upload was not waiting for a worker
    (a message delivered twice)."""
    claimed = (
        Upload.objects.filter(pk=upload_id)
        .filter(
            Q(status=Upload.Status.FINISHING)
            | Q(status=Upload.Status.VALIDATING, updated_at__lt=_validation_stale_before())
        )
        .update(status=Upload.Status.VALIDATING, updated_at=timezone.now())
    )
    if not claimed:
        return None
    upload = Upload.objects.select_related("benchmark", "team", "user", "judge").get(pk=upload_id)
    report_json = None
    stored: StoredBundle | None = None
    taken = False
    try:
        with _local_bundle(upload) as path:
            report, contents = bundle_validate(
                benchmark=upload.benchmark,
                path=path,
                allow_partial=upload.allow_partial,
                options=upload.options,
            )
            report_json = report.as_dict()
            if report.ok:
                sha, size = file_sha256(path)
        submission = None
        # Membership may have changed while the upload waited: checked again before anything
        # is stored, and refused for good (the upload is rejected with the reason).
        refusal = (
            submission_create_refusal(
                user=upload.user, team=upload.team, publish=upload.publish, later=True
            )
            if report.ok
            else ""
        )
        if report.ok and not refusal:
            stored = _place(upload, sha256=sha, size=size)
            submission, _ = submission_create_within_limits(
                team=upload.team,
                benchmark=upload.benchmark,
                bundle_path=Path(upload.filename),
                system_name=upload.system_name,
                system_type=upload.system_type,
                judge=upload.judge,
                allow_partial=upload.allow_partial,
                submitted_by=upload.user,
                publish=upload.publish,
                idempotency_key=f"upload-{upload.pk}",
                validated=contents,
                stored=stored,
            )
            taken = submission.bundle.name == stored.name
        Upload.objects.filter(pk=upload.pk, status=Upload.Status.VALIDATING).update(
            status=Upload.Status.ACCEPTED if submission else Upload.Status.REJECTED,
            submission=submission,
            report=report_json,
            finished_at=timezone.now(),
            error=refusal,
            updated_at=timezone.now(),
        )
    except (UploadError, LimitReached) as exc:
        _forget(stored, taken)
        _reopen(upload, error=str(exc), report=report_json)
        return upload
    except Exception:
        logger.exception("finishing upload %s failed", upload.pk)
        _forget(stored, taken)
        _reopen(upload, error=FINISH_FAILED, report=None)
        return upload
    except BaseException:
        _forget(stored, taken)
        _reopen(upload, error=FINISH_FAILED, report=None)
        raise
    _forget(stored, taken)
    upload.refresh_from_db()
    # Accepted: the submission holds its own copy. Rejected: nothing of it is kept.
    try:
        _discard(upload)
    except Exception:
        logger.exception("could not delete the bytes of upload %s", upload.pk)
    return upload


def _forget(stored: StoredBundle | None, taken: bool) -> None:
    """A stored bundle no submission took goes again."""
    if stored is not None and not taken:
        bundle_discard_quietly(stored)


def upload_cancel(*, upload: Upload) -> Upload:
    if not _claimable(upload).update(
        status=Upload.Status.CANCELLED, finished_at=timezone.now(), updated_at=timezone.now()
    ):
        upload.refresh_from_db()
        raise UploadClosed(f"the upload is {upload.status}; there is nothing to cancel")
    upload.refresh_from_db()
    # Cancelled (and no longer counted against the user's open uploads) whatever storage says:
    # bytes it cannot take now are swept later (multipart_uploads_sweep, partial files).
    try:
        _discard(upload)
    except Exception:
        logger.exception("cancelled upload %s: its bytes stay until the sweep", upload.pk)
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


def multipart_uploads_sweep(*, older_than: timedelta) -> list[str]:
    """On S3: abort incomplete multipart uploads begun longer ago than ``older_than`` under
    every prefix the site writes (a store cut mid-copy or mid-put leaves them, and nothing else
    would), except those of browser uploads still open. Returns the keys aborted."""
    if not storage_is_s3():
        return []
    keep = set(
        Upload.objects.filter(
            method=Upload.Method.S3, status__in=[Upload.Status.UPLOADING, *FINISHING]
        )
        .exclude(s3_upload_id="")
        .values_list("s3_upload_id", flat=True)
    )
    return storage.multipart_uploads_abort_stale(
        initiated_before=timezone.now() - older_than, keep=keep
    )


_temp_sweeper: threading.Thread | None = None


def upload_temp_files_sweeper_start() -> threading.Thread:
    """Sweep FILE_UPLOAD_TEMP_DIR from this process too, at once and then every
    UPLOAD_TEMP_SWEEP_SECONDS, in a thread: a web container's request temp files live where it
    wrote them, which beat's sweep (on a worker container) never sees. One thread per process
    (config/wsgi.py starts it)."""
    global _temp_sweeper
    if _temp_sweeper is not None:
        return _temp_sweeper

    def sweep_forever():
        while True:
            try:
                upload_temp_files_sweep(
                    older_than=timedelta(seconds=settings.UPLOAD_TEMP_MAX_AGE_SECONDS)
                )
            except Exception:
                logger.exception("sweeping upload temp files failed; trying again later")
            time.sleep(settings.UPLOAD_TEMP_SWEEP_SECONDS)

    _temp_sweeper = threading.Thread(target=sweep_forever, name="upload-temp-sweeper", daemon=True)
    _temp_sweeper.start()
    return _temp_sweeper


def uploads_expire(*, older_than: timedelta) -> int:
    """Give up on uploads untouched for this long: delete their bytes. One whose finish died
    after its submission was created is marked accepted instead. Returns how many changed."""
    cutoff = timezone.now() - older_than
    changed = 0
    stale = Upload.objects.filter(
        status__in=[Upload.Status.UPLOADING, *FINISHING], updated_at__lt=cutoff
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
