"""An upload as the site receives it: one predictions JSONL, or a zip of JSONL files (the
harness writes base and hear cells in one run and speak cells in another), with an optional
``manifest.json`` at the zip's root describing the system. Validation reports every problem of
predictions.py with its file, line and field; ingest reads the stored upload again and yields
one task per predicted cell. Pure (no Django).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

from evaluation.benchmarks.base import IngestedTask, UploadContents, UploadLimits
from evaluation.bundles import (
    ValidationReport,
    member_opener,
    read_manifest,
    scan_zip,
    source_opener,
)
from evaluation.jsonbounds import unstorable_path

from .predictions import FIELDS, TURN_BASED, PredictionsError, PredictionSet, read_predictions

SINGLE_FILE = "predictions.jsonl"  # how a lone JSONL is named when its own name is not kept
MANIFEST = "manifest.json"
# Missing cells listed by name in a rejection; the rest are counted.
MISSING_SHOWN = 10


@dataclass
class UploadFiles:
    """The prediction files of an upload (name, and how to open it for reading a line at a
    time) and its manifest. A zip stays open in ``archive`` (the caller closes it)."""

    files: list[tuple[str, Callable[[], AbstractContextManager[IO[bytes]]]]] = field(
        default_factory=list
    )
    manifest: dict = field(default_factory=dict)
    archive: zipfile.ZipFile | None = None


def _is_zip(source) -> bool:
    try:
        return zipfile.is_zipfile(source)
    finally:
        if hasattr(source, "seek"):
            source.seek(0)


def read_upload(
    source: Path | IO[bytes], report: ValidationReport, *, name: str, limits: UploadLimits
) -> UploadFiles:
    """The JSONL files of an upload (a path, or a seekable binary file): the file itself, or
    every ``*.jsonl`` member of a zip in name order. Problems go to ``report``."""
    found = UploadFiles()
    if not _is_zip(source):
        size = source.stat().st_size if isinstance(source, Path) else _size(source)
        if size > limits.max_bytes:
            report.add(f"{size:,} bytes exceeds the limit of {limits.max_bytes:,}", file=name)
            return found
        found.files.append((name, source_opener(source)))
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
        if path.suffix.lower() == ".jsonl":
            found.files.append((entry.path, member_opener(archive, entry.info)))
        elif entry.path == MANIFEST:
            found.manifest = read_manifest(archive, entry.info, report, file=MANIFEST)
        else:
            report.warn("not a .jsonl prediction file; ignored", file=entry.path)
    if not found.files:
        report.add("the zip holds no .jsonl prediction file")
    return found


def _size(handle: IO[bytes]) -> int:
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(0)
    return size


def single_file_name(path: Path) -> str:
    """A lone JSONL keeps its name; anything else (a web upload's temporary file) is called
    predictions.jsonl in problems and on the drill-down."""
    return path.name if path.suffix.lower() == ".jsonl" else SINGLE_FILE


def validate(
    path: Path,
    report: ValidationReport,
    *,
    tasks: dict,
    allow_partial: bool,
    run_mode: str,
    limits: UploadLimits,
) -> tuple[UploadContents, PredictionSet | None]:
    """Every problem of the upload in ``report``; the cells it covers and lacks."""
    upload = read_upload(path, report, name=single_file_name(path), limits=limits)
    try:
        return _validate(upload, report, tasks, allow_partial, run_mode)
    finally:
        if upload.archive is not None:
            upload.archive.close()


def _validate(upload, report, tasks, allow_partial, run_mode):
    if not report.ok:
        return UploadContents(manifest=upload.manifest), None
    try:
        found = read_predictions(upload.files, specs=tasks, run_mode=run_mode)
    except PredictionsError as exc:
        for problem in exc.problems:
            where = f"line {problem.line}" if problem.line is not None else "file"
            what = f", field {problem.field}" if problem.field else ""
            report.add(f"{where}{what}: {problem.message}", file=problem.file or None)
        return UploadContents(manifest=upload.manifest), None
    for prediction in found.predictions.values():
        # Site tightening, as for NaN: no database column stores a NUL character.
        unstorable = unstorable_path(prediction.to_json())
        if unstorable:
            where, what = unstorable
            report.add(
                f"line {prediction.line}, field {where}: holds {what}, which cannot be stored",
                file=prediction.file,
            )
    if not report.ok:
        return UploadContents(manifest=upload.manifest), None
    if not found.predictions:
        report.add(
            "no line names a cell of this benchmark (cell ids are msi-<language>-<pattern>-...; "
            "a probe adds h or s)"
        )
    if found.unknown_cell_ids:
        shown = ", ".join(found.unknown_cell_ids[:MISSING_SHOWN])
        more = len(found.unknown_cell_ids) - MISSING_SHOWN
        report.warn(
            f"{len(found.unknown_cell_ids)} unknown cell id(s) ignored, as the harness ignores "
            f"them: {shown}" + (f" and {more} more" if more > 0 else "")
        )
    for warning in found.warnings:
        if not warning.startswith("unknown cell_id"):
            report.warn(warning)
    if found.missing_cell_ids and not allow_partial:
        shown = ", ".join(found.missing_cell_ids[:MISSING_SHOWN])
        more = len(found.missing_cell_ids) - MISSING_SHOWN
        report.add(
            f"{len(found.missing_cell_ids)} cell(s) of the languages covered "
            f"({', '.join(found.languages)}) have no prediction: {shown}"
            + (f" and {more} more" if more > 0 else "")
            + ". Submit every cell, or allow a partial upload: it is marked incomplete and a "
            "missing base case fails, as the harness scores it"
        )
    contents = UploadContents(
        manifest=upload.manifest,
        present=set(found.predictions),
        missing=list(found.missing_cell_ids),
    )
    return contents, found


def prediction_data(prediction) -> dict:
    """What a task result stores of its prediction: the normalised row and where it came from."""
    return {**prediction.to_json(), "source": {"file": prediction.file, "line": prediction.line}}


def prediction_row(data: dict | None) -> dict | None:
    """The normalised row of a stored prediction (None: no prediction)."""
    if not data:
        return None
    return {key: data.get(key) for key in FIELDS}


def ingest(handle: IO[bytes], *, tasks: dict, limits: UploadLimits):
    """The stored upload, read again: one IngestedTask per predicted cell of the benchmark."""
    report = ValidationReport()
    # A lone file's own name is not kept with the stored upload; zip members keep theirs.
    upload = read_upload(handle, report, name=SINGLE_FILE, limits=limits)
    try:
        if not report.ok:
            raise ValueError(f"stored upload no longer validates: {report.problems[:3]}")
        # The run mode only words warnings here; scoring reads it from the submission's facts.
        found = read_predictions(upload.files, specs=tasks, run_mode=TURN_BASED)
    finally:
        if upload.archive is not None:
            upload.archive.close()
    for cell_id, prediction in found.predictions.items():
        yield IngestedTask(cell_id, data=prediction_data(prediction))
