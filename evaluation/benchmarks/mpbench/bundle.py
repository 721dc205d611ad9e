"""What an MP-Bench result bundle must contain: the harness's task folders and transcripts."""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass, field

from evaluation.benchmarks.base import SpanCount
from evaluation.bundles import ZIP_READ_ERRORS, Entry, ValidationReport, iter_task_entries
from evaluation.jsonbounds import JsonRefused, loads_bounded, unstorable_text

from .detection import (
    TRANSCRIPT_NAMES,
    TRANSCRIPT_PAIRS,
    choose_pair,
    evidence_json,
    evidence_of,
    transcript_of,
)
from .limits import (
    MAX_CONVERSATION_SECONDS,
    MAX_JSON_DEPTH,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_VALUES,
    MAX_TRANSCRIPT_BYTES,
    MAX_TRANSCRIPT_VALUES,
)

TASK_FOLDER_PREFIX = "scenario_"
AUDIO_SUFFIX = ".wav"


def is_task_folder(name: str) -> bool:
    return name.startswith(TASK_FOLDER_PREFIX)


def is_audio(relative: str) -> bool:
    return relative.lower().endswith(AUDIO_SUFFIX)


def accepts_file(relative: str) -> bool:
    """The files of a task folder that are kept: the harness's transcripts and WAV audio."""
    return relative in TRANSCRIPT_NAMES or is_audio(relative)


@dataclass
class BundleContents:
    """The accepted files per task (relative name -> zip entry), the root manifest, and each
    task's detection evidence (detection.evidence_json) from the transcripts as validation
    parsed them (complete only for an upload with no problem)."""

    tasks: dict[str, dict[str, Entry]] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    evidence: dict[str, list] = field(default_factory=dict)


_NUMBERS = (int, float)


def _number(value) -> bool:
    # Parsed JSON holds exactly int or float (true and false are bool): the type is enough,
    # and cheaper than isinstance for the hundreds of thousands of stamps of a large upload.
    return type(value) in _NUMBERS and math.isfinite(value)


def _looked_over(chunks: list) -> tuple[list, bool]:
    """One pass over a transcript's chunks, with no call per chunk, since a transcript has one
    per word: the text of each object chunk, and whether no timestamp needs a word (the loop in
    check_transcript says which and why). A chained comparison is False for NaN, and
    infinities fall outside [0, the longest conversation]."""
    texts = []
    fine = True
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        texts.append(chunk.get("text", ""))
        stamp = chunk.get("timestamp")
        if not fine or not stamp or not isinstance(stamp, list) or len(stamp) != 2:
            continue
        start, end = stamp
        fine = (
            type(start) in _NUMBERS
            and type(end) in _NUMBERS
            and 0 <= start <= end <= MAX_CONVERSATION_SECONDS
        )
    return texts, fine


def check_transcript(data, report: ValidationReport, *, task: str, file: str) -> None:
    """Reject what the harness could not compare; leave what it merely ignores."""
    if not isinstance(data, dict):
        report.add("top level must be a JSON object with 'text' and 'chunks'", task=task, file=file)
        return
    if "text" in data and not isinstance(data["text"], str):
        report.add("'text' must be a string", task=task, file=file)
    elif isinstance(data.get("text"), str) and (what := unstorable_text(data["text"])):
        report.add(f"'text' holds {what}, which cannot be stored", task=task, file=file)
    chunks = data.get("chunks", [])
    if not isinstance(chunks, list):
        report.add("'chunks' must be a list", task=task, file=file)
        return
    texts, stamps_fine = _looked_over(chunks)
    try:
        joined = "".join(texts)
    except TypeError:  # a text that is not a string is looked at as it prints
        joined = "".join(map(str, texts))
    texts_fine = not unstorable_text(joined)
    if texts_fine and stamps_fine:
        return
    # Each chunk is looked at on its own only when something is there.
    dicts = [(index, chunk) for index, chunk in enumerate(chunks) if isinstance(chunk, dict)]
    if not texts_fine:
        for index, chunk in dicts:
            what = unstorable_text(str(chunk.get("text", "")))
            if what:
                report.add(
                    f"chunk {index}: 'text' holds {what}, which cannot be stored",
                    task=task,
                    file=file,
                )

    if stamps_fine:
        return

    def where(index: int, chunk: dict) -> str:
        return f"chunk {index} ({str(chunk.get('text', ''))[:30]!r})"

    for index, chunk in dicts:
        stamp = chunk.get("timestamp")
        # A falsy timestamp or one without exactly two elements is ignored by the scoring rules.
        if not stamp or not isinstance(stamp, list) or len(stamp) != 2:
            continue
        start, end = stamp
        if not (_number(start) and _number(end)):
            report.add(
                f"{where(index, chunk)} has a non-numeric timestamp {stamp!r}", task=task, file=file
            )
        elif start < 0 or end < 0:
            report.add(
                f"{where(index, chunk)} has a negative timestamp {stamp!r}", task=task, file=file
            )
        elif start > end:
            report.add(
                f"{where(index, chunk)} has a reversed timestamp {stamp!r} (start after end)",
                task=task,
                file=file,
            )
        elif end > MAX_CONVERSATION_SECONDS:
            report.add(
                f"{where(index, chunk)} has a timestamp {stamp!r} beyond "
                f"{MAX_CONVERSATION_SECONDS:,} s ({MAX_CONVERSATION_SECONDS // 3600} h); "
                "no MP-Bench conversation is that long",
                task=task,
                file=file,
            )


def _read_json(
    archive: zipfile.ZipFile,
    entry: Entry,
    limit: int,
    report: ValidationReport,
    task: str | None,
    *,
    max_values: int,
):
    if entry.info.file_size > limit:
        report.add(
            f"file is {entry.info.file_size:,} bytes; the limit is {limit:,}",
            task=task,
            file=entry.relative,
        )
        return None
    if entry.info.file_size == 0:
        return None  # empty files are allowed: the rules treat them as absent
    try:
        with archive.open(entry.info) as handle:
            raw = handle.read(limit + 1)
    except ZIP_READ_ERRORS:
        report.add("cannot be read from the zip (damaged data)", task=task, file=entry.relative)
        return None
    try:
        return loads_bounded(raw, max_depth=MAX_JSON_DEPTH, max_values=max_values)
    except JsonRefused as exc:
        report.add(f"not accepted as JSON: it {exc}", task=task, file=entry.relative)
    except json.JSONDecodeError as exc:
        report.add(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            task=task,
            file=entry.relative,
        )
    except UnicodeDecodeError:
        report.add("not valid JSON (not UTF-8 text)", task=task, file=entry.relative)
    except ValueError:
        report.add("not valid JSON", task=task, file=entry.relative)
    return None


def validate_contents(
    archive: zipfile.ZipFile,
    entries: list[Entry],
    report: ValidationReport,
    *,
    task_ids: set[str],
    allow_partial: bool,
) -> BundleContents:
    contents = BundleContents()
    for entry in entries:
        if entry.task is not None:
            continue
        if entry.path == "manifest.json":
            manifest = _read_json(
                archive, entry, MAX_MANIFEST_BYTES, report, None, max_values=MAX_MANIFEST_VALUES
            )
            if manifest is not None and not isinstance(manifest, dict):
                report.add("manifest must be a JSON object", file="manifest.json")
            elif manifest is not None:
                contents.manifest = manifest
        else:
            report.warn("outside any scenario_* task folder; ignored", file=entry.path)

    for task, task_entries in iter_task_entries(entries):
        parents = sorted({entry.parent for entry in task_entries})
        if task not in task_ids:
            report.add("unknown task folder: not a task of this benchmark", task=task)
            continue
        if len(parents) > 1:
            places = ", ".join(f"'{p or '(root)'}'" for p in parents)
            report.add(f"task folder appears more than once (under {places})", task=task)
            continue
        accepted: dict[str, Entry] = {}
        parsed: dict[str, object] = {}
        for entry in task_entries:
            if entry.relative in TRANSCRIPT_NAMES:
                data = _read_json(
                    archive,
                    entry,
                    MAX_TRANSCRIPT_BYTES,
                    report,
                    task,
                    max_values=MAX_TRANSCRIPT_VALUES,
                )
                if data is not None:
                    chunks = data.get("chunks") if isinstance(data, dict) else None
                    # The core's bound (the plug-in's max_spans_per_run): a transcript over it
                    # is refused for that alone, its chunks neither looked over nor detected.
                    if not isinstance(chunks, list) or report.count_spans(
                        SpanCount(task, len(chunks), "word chunks", file=entry.relative)
                    ):
                        check_transcript(data, report, task=task, file=entry.relative)
                    parsed[entry.relative] = data
                accepted[entry.relative] = entry
            elif is_audio(entry.relative):
                # Its header was checked against the plug-in's audio_limits by the core.
                accepted[entry.relative] = entry
            else:
                report.warn(
                    "not a transcript or WAV file the harness reads; ignored",
                    task=task,
                    file=entry.relative,
                )
        contents.tasks[task] = accepted
        _warn_if_scored_silent(accepted, report, task)
        if report.ok:  # a refused upload is never detected
            contents.evidence[task] = evidence_json(
                evidence_of(
                    _size_of(accepted), lambda name, parsed=parsed: transcript_of(parsed[name])
                )
            )

    contents.missing = sorted(task_ids - contents.tasks.keys())
    if not contents.tasks and report.ok:
        report.add("no scenario_* task folders found in the bundle")
    elif contents.missing and not allow_partial:
        for task in contents.missing:
            report.add(
                "task folder missing; to score the other tasks anyway, accept an incomplete "
                "bundle (the submit page's checkbox, --allow-partial on the command line, "
                "allow_partial=true in the API)",
                task=task,
            )
    return contents


# The output side of each transcript pair: a response the rules cannot pair with an input.
OUTPUT_NAMES = tuple(dict.fromkeys(output for _, output in TRANSCRIPT_PAIRS))


def _size_of(accepted: dict[str, Entry]):
    """A task's file sizes by name, as detection looks them up (None for a file not there)."""

    def size(name: str) -> int | None:
        entry = accepted.get(name)
        return entry.info.file_size if entry is not None else None

    return size


def _warn_if_scored_silent(accepted: dict[str, Entry], report: ValidationReport, task: str):
    """The harness scores a task whose response has no input transcript beside it as silent
    (no pair of files), which is kept; the submitter is told, so a missing file is noticed."""
    size = _size_of(accepted)
    if choose_pair(size, TRANSCRIPT_PAIRS) is not None:
        return
    answered = [name for name in OUTPUT_NAMES if size(name)]
    if answered:
        report.warn(
            "scored as silent: no input transcript beside the response (the harness needs "
            "both files of a pair, e.g. all_stitched.json with response.json)",
            task=task,
            file=answered[0],
        )
