"""An upload as the site receives it: the replies JSONL (``{"id", "response"}`` per line,
``model_response`` accepted), or a zip holding that one JSONL, optionally each reply's audio as
``<id>.<ext>`` (audio-output systems; played on the task page, never scored) and a
``manifest.json`` describing the system. Validation reports every problem of responses.py with
its file, line and field; ingest reads the stored upload again. Pure (no Django).

The declared output modality (SPEC §3: the paper reports text-output and audio-output systems
apart) is recorded in the manifest as ``output_modality``, and, unless the manifest names a
``system_type`` already, as the row group of the board (text-output or audio-output).
"""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from evaluation.audio import AudioLimits
from evaluation.benchmarks.base import IngestedTask, UploadContents, UploadLimits
from evaluation.bundles import (
    ValidationReport,
    member_opener,
    read_manifest,
    scan_zip,
    source_opener,
)
from evaluation.jsonbounds import unstorable_path

from .dataset import AUDIO_TYPES
from .responses import OUTPUT_MODALITIES, Submission, SubmissionError, parse_submission

SINGLE_FILE = "responses.jsonl"  # how a lone JSONL is named when its own name is not kept
MANIFEST = "manifest.json"
MISSING_SHOWN = 10
RESPONSE_AUDIO = "response"  # a reply's clip is stored as response.<ext>
# A reply's audio, for playback (our decision): at most ten minutes, two channels, 48 kHz.
AUDIO_LIMITS = AudioLimits(
    max_seconds=10 * 60, max_bytes=256 * 1024**2, max_channels=2, max_sample_rate=48_000
)


def row_group_of(modality: str) -> str:
    return f"{modality}-output"


@dataclass
class UploadFiles:
    # The replies file's name, and how to open it for reading (a line at a time).
    jsonl: tuple[str, Callable[[], contextlib.AbstractContextManager[IO[bytes]]]] | None = None
    audio: dict[str, zipfile.ZipInfo] = field(default_factory=dict)  # member name -> entry
    manifest: dict = field(default_factory=dict)
    archive: zipfile.ZipFile | None = None


def _is_zip(source) -> bool:
    try:
        return zipfile.is_zipfile(source)
    finally:
        if hasattr(source, "seek"):
            source.seek(0)


def _size(handle: IO[bytes]) -> int:
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(0)
    return size


def read_upload(
    source: Path | IO[bytes],
    report: ValidationReport,
    *,
    name: str,
    limits: UploadLimits,
) -> UploadFiles:
    """The replies file, the reply audio members and the manifest of an upload. A zip stays
    open in ``archive`` (the caller closes it). Every WAV's header was checked against
    AUDIO_LIMITS by the core before (the plug-in's audio_limits)."""
    found = UploadFiles()
    if not _is_zip(source):
        size = source.stat().st_size if isinstance(source, Path) else _size(source)
        if size > limits.max_bytes:
            report.add(f"{size:,} bytes exceeds the limit of {limits.max_bytes:,}", file=name)
            return found
        found.jsonl = (name, source_opener(source))
        return found
    archive, entries = scan_zip(
        source,
        report,
        is_task_folder=lambda part: False,
        max_uncompressed=limits.max_bytes,
        max_ratio=limits.max_ratio,
    )
    if archive is None:
        return found
    found.archive = archive
    if not report.ok:
        return found
    for entry in sorted(entries, key=lambda e: e.path):
        path = PurePosixPath(entry.path)
        suffix = path.suffix.lower().lstrip(".")
        if suffix == "jsonl":
            if found.jsonl is not None:
                report.add(
                    f"a second replies file (the first is {found.jsonl[0]}); give one",
                    file=entry.path,
                )
                continue
            found.jsonl = (entry.path, member_opener(archive, entry.info))
        elif suffix in AUDIO_TYPES:
            found.audio[entry.path] = entry.info
        elif entry.path == MANIFEST:
            found.manifest = read_manifest(archive, entry.info, report, file=MANIFEST)
        else:
            report.warn("neither the replies JSONL nor reply audio; ignored", file=entry.path)
    if found.jsonl is None:
        report.add("the zip holds no .jsonl replies file")
    return found


def single_file_name(path: Path) -> str:
    return path.name if path.suffix.lower() == ".jsonl" else SINGLE_FILE


def _parse(upload: UploadFiles, *, task_ids: Sequence[str], modality: str) -> Submission:
    name, opener = upload.jsonl
    with opener() as handle:
        return parse_submission(
            handle,
            task_ids=task_ids,
            output_modality=modality,
            audio_files=[PurePosixPath(member).name for member in upload.audio],
            file_name=name,
        )


def validate(
    path: Path,
    report: ValidationReport,
    *,
    tasks: Mapping[str, dict],
    allow_partial: bool,
    modality: str,
    limits: UploadLimits,
) -> UploadContents:
    """Every problem of the upload in ``report``; the tasks it answers and lacks."""
    upload = read_upload(path, report, name=single_file_name(path), limits=limits)
    try:
        return _validate(upload, report, tasks, allow_partial, modality)
    finally:
        if upload.archive is not None:
            upload.archive.close()


def _validate(upload, report, tasks, allow_partial, modality) -> UploadContents:
    manifest = dict(upload.manifest)
    declared = manifest.get("output_modality")
    if declared is not None and declared != modality:
        report.add(
            f"output_modality is {declared!r} here but {modality!r} was declared with the upload",
            file=MANIFEST,
        )
    if not report.ok or upload.jsonl is None:
        return UploadContents(manifest=manifest)
    names = [PurePosixPath(member).name for member in upload.audio]
    if len(set(names)) != len(names):
        report.add("two reply audio files share a name in different folders")
        return UploadContents(manifest=manifest)
    try:
        submission = _parse(upload, task_ids=list(tasks), modality=modality)
    except SubmissionError as exc:
        for problem in exc.problems:
            place = ", ".join(
                part for part in (problem.where, problem.field and f"field {problem.field}") if part
            )
            report.add(
                f"{place}: {problem.message}" if place else problem.message,
                file=problem.file or None,
            )
        return UploadContents(manifest=manifest)
    for task_id, reply in submission.responses.items():
        unstorable = unstorable_path({"response": reply})
        if unstorable:
            report.add(f"the reply to {task_id!r} holds {unstorable[1]}, which cannot be stored")
    if not submission.responses:
        report.add("no line answers a task of this benchmark")
    if submission.missing and not allow_partial:
        shown = ", ".join(submission.missing[:MISSING_SHOWN])
        more = len(submission.missing) - MISSING_SHOWN
        report.add(
            f"{len(submission.missing)} task(s) have no reply: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + ". Submit every task, or allow a partial upload: it is marked incomplete and a "
            "task without a reply counts as failed on every rubric item (SPEC edge case 1)"
        )
    manifest["output_modality"] = modality
    manifest.setdefault("system_type", row_group_of(modality))
    return UploadContents(
        manifest=manifest, present=set(submission.responses), missing=list(submission.missing)
    )


def ingest(
    handle: IO[bytes], *, tasks: Mapping[str, dict], limits: UploadLimits
) -> Iterator[IngestedTask]:
    """The stored upload, read again: one IngestedTask per answered task, its reply as data and
    its reply audio (if any) to be stored for playback. Validation accepted reply audio only
    from an audio-output submission, so audio members mean one."""
    report = ValidationReport()
    upload = read_upload(handle, report, name=SINGLE_FILE, limits=limits)
    try:
        if not report.ok or upload.jsonl is None:
            raise ValueError(f"stored upload no longer validates: {report.problems[:3]}")
        modality = "audio" if upload.audio else "text"
        submission = _parse(upload, task_ids=list(tasks), modality=modality)
        by_name = {PurePosixPath(member).name: info for member, info in upload.audio.items()}
        for task_id, reply in submission.responses.items():
            store = []
            audio = submission.response_audio.get(task_id)
            if audio is not None and upload.archive is not None:
                info = by_name[audio]
                extension = PurePosixPath(audio).suffix.lower()
                store.append(
                    (
                        f"{RESPONSE_AUDIO}{extension}",
                        member_opener(upload.archive, info),
                        info.file_size,
                    )
                )
            yield IngestedTask(task_id, data={"response": reply}, store=store)
    finally:
        if upload.archive is not None:
            upload.archive.close()


def modality_of(options: Mapping) -> str:
    value = options.get("output_modality")
    return value if value in OUTPUT_MODALITIES else OUTPUT_MODALITIES[0]
