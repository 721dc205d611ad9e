"""Where a task's files are read from: members of the stored upload, or their own objects in
storage; and the stream hash every upload and clip is checked with."""

from __future__ import annotations

import hashlib
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from django.core.files.storage import default_storage

from evaluation.benchmarks.base import TaskFiles, TaskInput
from evaluation.models import Submission, TaskResult
from evaluation.stored import open_stored_seekable, open_stored_stream

HASH_BLOCK = 1024 * 1024


def stream_sha256(handle: IO[bytes]) -> tuple[str, int]:
    """(hex SHA-256, size) of a binary stream, read in blocks."""
    digest, size = hashlib.sha256(), 0
    while block := handle.read(HASH_BLOCK):
        digest.update(block)
        size += len(block)
    return digest.hexdigest(), size


def file_sha256(path) -> tuple[str, int]:
    with open(path, "rb") as handle:
        return stream_sha256(handle)


def stored_sha256(key: str) -> str:
    with default_storage.open(key, "rb") as handle:
        return stream_sha256(handle)[0]


class StoredFiles(TaskFiles):
    """A task result's files: transcripts and the like as members of the stored upload (one
    archive opened per submission and shared), audio as objects of their own."""

    def __init__(self, files: dict, archive: zipfile.ZipFile | None):
        self.files = files
        self.archive = archive

    def names(self) -> list[str]:
        return sorted(self.files)

    def size(self, name: str) -> int | None:
        info = self.files.get(name)
        return info.get("size") if info else None

    def open(self, name: str) -> IO[bytes]:
        info = self.files[name]
        if "entry" in info:
            if self.archive is None:
                raise FileNotFoundError(f"{name}: the upload is not open")
            return self.archive.open(info["entry"])
        return open_stored_stream(info["key"])

    def read(self, name: str) -> bytes:
        with self.open(name) as handle:
            return handle.read()


# The upload a task holds open while it works through several stages in turn (upload_held).
_held = threading.local()


@contextmanager
def upload_held(submission: Submission) -> Iterator[None]:
    """Within this, open_upload of this submission yields one archive, opened once: a task
    that runs ingest's first step, the spending plan and linking in turn reads the upload's
    zip directory once, not once per stage."""
    before = getattr(_held, "upload", None)
    with open_upload(submission) as archive:
        _held.upload = (submission.bundle.name, archive) if archive is not None else before
        try:
            yield
        finally:
            _held.upload = before


@contextmanager
def open_upload(submission: Submission) -> Iterator[zipfile.ZipFile | None]:
    """The stored upload as a zip archive when it is one (None otherwise or when absent)."""
    if not submission.bundle:
        yield None
        return
    held = getattr(_held, "upload", None)
    if held is not None and held[0] == submission.bundle.name:
        yield held[1]  # closed by upload_held
        return
    # On S3 by range reads: a zip's directory and the members asked for, not the whole upload.
    with open_stored_seekable(submission.bundle.name) as handle:
        try:
            archive = zipfile.ZipFile(handle)
        except zipfile.BadZipFile:
            yield None
            return
        with archive:
            yield archive


def task_assets(row: TaskResult) -> dict[str, str]:
    """Every stored audio file of the task by name: the benchmark's, then the submission's."""
    assets = {name: info["key"] for name, info in (row.task.assets or {}).items() if "key" in info}
    assets.update({name: info["key"] for name, info in row.files.items() if "key" in info})
    return assets


def task_reads_upload(row: TaskResult) -> bool:
    """Whether any of the task's files is read from inside the stored upload (a transcript
    kept as a member of it); without one, its TaskInput needs no open upload."""
    return any("entry" in info for info in (row.files or {}).values())


# What task_input reads of a task result and its task: the columns a query for task inputs
# loads (with select_related("task")).
TASK_INPUT_COLUMNS = ("task__task_id", "task__spec", "task__assets", "data", "detection", "files")


def task_input(row: TaskResult, archive: zipfile.ZipFile | None = None) -> TaskInput:
    """A task result as the plug-in sees it (the row's task must be loaded)."""
    return TaskInput(
        task_id=row.task.task_id,
        spec=row.task.spec,
        data=row.data,
        detection=row.detection,
        files=StoredFiles(row.files, archive) if row.files else None,
        assets=task_assets(row),
    )
