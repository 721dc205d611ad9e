"""The upload (SPEC §2): a zip holding, per run (scenario x condition, named ``<scenario>__<condition>``),

    audio/<run>.wav          the model's output channel, PCM WAV, sample 0 = stream time 0
    schedule/<run>.json      the official scheduler's log (schedule.py has the format)
    transcripts/<run>.json   optional: the submitter's own ASR of the output channel,
                             {"asr": "<what produced it>", "chunks": [{"start", "end", "text"}]}

or, the low-trust alternative (SPEC §2, §3), the logs with the submitter's own measurements:

    schedule/<run>.json
    segments.jsonl           {"scenario_id", "condition", "segments": [[start, end], ...]} per run
    judgments.jsonl          {"scenario_id", "condition", "turn_index", "kind", "transcript", "raw"}

and an optional ``manifest.json`` describing the system. Everything may sit under one common
folder. Each log is checked against the benchmark's manifest (SPEC §2a; the wait after T is
checked once our VAD has run); a run missing from the upload is rejected, never scored as
silence. Bundles are large (4,000 runs of ~100 s): only the zip's directory, the logs and each
WAV's header are read here, and ingest streams each run's audio to storage on its own.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from evaluation.audio import (
    WAV_HEAD_BYTES,
    WAVE_FORMAT_PCM,
    AudioLimits,
    NotAWav,
    wav_format,
    wav_problem,
)
from evaluation.benchmarks.base import IngestedTask, SpanCount, UploadContents, UploadLimits
from evaluation.bundles import (
    ZIP_READ_ERRORS,
    Entry,
    LineTooLong,
    ValidationReport,
    scan_zip,
    text_lines,
)
from evaluation.jsonbounds import JsonRefused, loads_bounded, non_finite_path

from . import judge as judges
from . import schedule
from . import segments as seg
from .manifest import Scenario, parse_scenario
from .metrics import ACK, ANSWER, SILENCE_LABELS

AUDIO, SCHEDULE, TRANSCRIPTS = "audio", "schedule", "transcripts"
FOLDERS = (AUDIO, SCHEDULE, TRANSCRIPTS)
SEGMENTS_FILE, JUDGMENTS_FILE, SYSTEM_FILE = "segments.jsonl", "judgments.jsonl", "manifest.json"
OUTPUT = "output.wav"  # the stored name of a run's output channel
MODE_AUDIO, MODE_UNVERIFIED = "audio", "unverified"
JSON_MAX_BYTES = 2 * 1024 * 1024  # one log, transcript or system manifest
JSONL_MAX_BYTES = 64 * 1024 * 1024  # segments or judgments of 4,000 runs: a few MB
MAX_JSON_DEPTH = 16  # a log nests four levels, a transcript three
MAX_JSON_VALUES = 500_000
# Speech episodes (low-trust segments) or transcript chunks of one run: a run lasts a few
# minutes, with tens of episodes and hundreds of words. More is not a run (our decision); it
# would only make the run's page draw them. The plug-in's max_spans_per_run: the core's report
# refuses a run holding more (validate counts each run's spans into it).
MAX_SPANS_PER_RUN = 5_000
# A run is ~100 s [X: 99.8 s mean]; the longest waits (60 s after T) keep it within minutes.
# Any channel count and rate a model writes is read (downmixed, resampled), within these.
AUDIO_LIMITS = AudioLimits(
    max_seconds=30 * 60, max_bytes=1024**3, max_channels=2, max_sample_rate=48_000
)


def run_id(scenario_id, condition) -> str:
    return f"{scenario_id}__{condition}"


@dataclass
class Layout:
    """Where each part of the upload is, by run."""

    audio: dict[str, Entry] = field(default_factory=dict)
    logs: dict[str, Entry] = field(default_factory=dict)
    transcripts: dict[str, Entry] = field(default_factory=dict)
    root: dict[str, Entry] = field(default_factory=dict)

    @property
    def mode(self) -> str | None:
        if SEGMENTS_FILE in self.root or JUDGMENTS_FILE in self.root:
            return MODE_UNVERIFIED
        return MODE_AUDIO if self.audio else None


def _layout(entries: list[Entry], report: ValidationReport) -> Layout:
    layout = Layout()
    parents = {entry.parent for entry in entries if entry.task is not None}
    if len(parents) > 1:
        report.add(f"the runs sit under more than one folder: {', '.join(sorted(parents))}")
    prefix = next(iter(parents)) if len(parents) == 1 else ""
    for entry in entries:
        if entry.task is None:
            name = entry.path[len(prefix) + 1 :] if prefix and entry.path.startswith(prefix) else ""
            name = name or entry.path
            if name in (SEGMENTS_FILE, JUDGMENTS_FILE, SYSTEM_FILE):
                layout.root[name] = entry
            else:
                report.warn("not part of the upload format; ignored", file=entry.path)
            continue
        path = PurePosixPath(entry.relative)
        suffix = ".wav" if entry.task == AUDIO else ".json"
        if len(path.parts) != 1 or path.suffix.lower() != suffix:
            report.add(f"expected {entry.task}/<run>{suffix}", file=entry.path)
            continue
        {AUDIO: layout.audio, SCHEDULE: layout.logs, TRANSCRIPTS: layout.transcripts}[entry.task][
            path.stem
        ] = entry
    return layout


def loads(raw: bytes):
    """A user's JSON, with nesting and size bounded first and NaN or Infinity refused (they
    are not JSON numbers, and no time can be one). ValueError says what is wrong."""
    try:
        data = loads_bounded(raw, max_depth=MAX_JSON_DEPTH, max_values=MAX_JSON_VALUES)
    except JsonRefused as error:
        raise ValueError(str(error)) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"not JSON ({error})") from None
    where = non_finite_path(data)
    if where:
        raise ValueError(f"holds a number that is not finite at {where}")
    return data


# What _read_json gives for a member it could not read (its problem is reported): a JSON
# `null` reads as None, and is checked like any other value.
UNREAD = object()


def _read_json(archive: zipfile.ZipFile, entry: Entry, report: ValidationReport, run=None):
    if entry.info.file_size > JSON_MAX_BYTES:
        report.add(f"larger than {JSON_MAX_BYTES:,} bytes", task=run, file=entry.path)
        return UNREAD
    try:
        return loads(archive.read(entry.info))
    except ValueError as error:
        report.add(str(error), task=run, file=entry.path)
        return UNREAD
    except ZIP_READ_ERRORS:
        report.add("cannot be read from the zip", task=run, file=entry.path)
        return UNREAD


def _jsonl(archive: zipfile.ZipFile, entry: Entry, report: ValidationReport) -> Iterator:
    """(line number, record) of a JSONL member, read line by line."""
    if entry.info.file_size > JSONL_MAX_BYTES:
        report.add(f"larger than {JSONL_MAX_BYTES:,} bytes", file=entry.path)
        return
    with archive.open(entry.info) as handle:
        try:
            for number, line in enumerate(text_lines(handle), 1):
                if not line.strip():
                    continue
                try:
                    record = loads(line)
                except ValueError as error:
                    report.add(f"line {number}: {error}", file=entry.path)
                    continue
                if not isinstance(record, dict):
                    report.add(f"line {number}: not a JSON object", file=entry.path)
                    continue
                yield number, record
        except LineTooLong as error:
            report.add(str(error), file=entry.path)


def wav_duration(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> float:
    """Seconds of a WAV member from its header alone (only its first bytes are decompressed);
    ValueError says why it is not integer PCM audio within AUDIO_LIMITS. Integer PCM is what
    the site's players and waveforms read."""
    with archive.open(info) as member:
        head = member.read(WAV_HEAD_BYTES)
    fmt = wav_format(head)
    problem = wav_problem(fmt, AUDIO_LIMITS)
    if problem:
        raise ValueError(f"the WAV {problem}")
    if fmt.format_tag != WAVE_FORMAT_PCM:
        raise ValueError("the WAV holds floating-point samples; write integer PCM (16-bit)")
    return fmt.seconds


def transcript_problems(data) -> list[str]:
    """The submitter's ASR file: {"asr": str, "chunks": [{"start", "end", "text"}]}."""
    if not isinstance(data, Mapping) or not isinstance(data.get("chunks"), list):
        return ['must be {"asr": "<what produced it>", "chunks": [{"start", "end", "text"}]}']
    problems = []
    if not isinstance(data.get("asr", ""), str):
        problems.append("asr must be a string naming what produced the transcript")
    for n, chunk in enumerate(data["chunks"]):
        ok = isinstance(chunk, Mapping) and isinstance(chunk.get("text"), str)
        times = [chunk.get("start"), chunk.get("end")] if ok else []
        if not ok or not all(isinstance(t, int | float) and not isinstance(t, bool) for t in times):
            problems.append(f"chunk {n} needs numeric start and end and a text")
        elif seg.to_ms(times[1]) < seg.to_ms(times[0]):
            problems.append(f"chunk {n} ends before it starts")
    return problems


def _segments(raw, where: str, report: ValidationReport, run: str):
    """Segments in seconds as given, after checking each is [start, end] with start < end."""
    if not isinstance(raw, list):
        report.add(f"{where}: segments must be a list of [start, end]", task=run)
        return None
    good = True
    for n, pair in enumerate(raw):
        numbers = (
            isinstance(pair, list | tuple) and len(pair) == 2 and all(seg.is_time(t) for t in pair)
        )
        if not numbers:
            report.add(
                f"{where}: segment {n} is not [start, end] in seconds (each within "
                f"{seg.MAX_SECONDS:,} s)",
                task=run,
            )
            good = False
        elif seg.to_ms(pair[0]) >= seg.to_ms(pair[1]):  # SPEC §8 row 20
            report.add(f"{where}: segment {n} {pair} does not end after it starts", task=run)
            good = False
    return [list(pair) for pair in raw] if good else None


@dataclass
class _Submitted:
    """The low-trust files, by run."""

    segments: dict[str, list] = field(default_factory=dict)
    judgments: dict[str, list[dict]] = field(default_factory=dict)


def _read_submitted(
    archive, layout: Layout, report: ValidationReport, scenarios: Mapping[str, Scenario]
) -> _Submitted:
    found = _Submitted()
    entry = layout.root.get(SEGMENTS_FILE)
    if entry is None:
        report.add(f"the low-trust upload needs {SEGMENTS_FILE} beside {JUDGMENTS_FILE}")
    else:
        for number, record in _jsonl(archive, entry, report):
            run = run_id(record.get("scenario_id"), record.get("condition"))
            where = f"{SEGMENTS_FILE} line {number}"
            if run not in scenarios:
                report.add(f"{where}: no run {run} in this benchmark", task=run)
            elif run in found.segments:
                report.add(f"{where}: run {run} is listed twice", task=run)  # SPEC §8 row 20
            else:
                raw = record.get("segments")
                if isinstance(raw, list) and not report.count_spans(
                    SpanCount(run, len(raw), "segments", where=where)
                ):
                    continue  # over the core's bound: refused, its segments never read
                segments = _segments(raw, where, report, run)
                if segments is not None:
                    found.segments[run] = segments
    entry = layout.root.get(JUDGMENTS_FILE)
    if entry is None:
        report.add(f"the low-trust upload needs {JUDGMENTS_FILE} beside {SEGMENTS_FILE}")
        return found
    seen: set[tuple] = set()
    for number, record in _jsonl(archive, entry, report):
        run = run_id(record.get("scenario_id"), record.get("condition"))
        where = f"{JUDGMENTS_FILE} line {number}"
        turn, kind = record.get("turn_index"), record.get("kind")
        if run not in scenarios:
            report.add(f"{where}: no run {run} in this benchmark", task=run)
            continue
        turns = {t.index: t for t in scenarios[run].turns}
        if isinstance(turn, bool) or not isinstance(turn, int) or turn not in turns:
            report.add(f"{where}: run {run} has no turn {turn!r}", task=run)
            continue
        wanted = {ANSWER: ("T",), ACK: SILENCE_LABELS}.get(kind)
        if wanted is None:
            report.add(f"{where}: run {run} turn {turn}: kind must be answer or ack", task=run)
            continue
        if turns[turn].label not in wanted:
            report.add(
                f"{where}: run {run} turn {turn} is {turns[turn].label}; a {kind} judgment "
                f"belongs to a {' / '.join(wanted)} turn",
                task=run,
            )
            continue
        if (run, turn, kind) in seen:  # SPEC §8 row 20
            report.add(f"{where}: run {run} turn {turn}: a second {kind} judgment", task=run)
            continue
        seen.add((run, turn, kind))
        text, raw = record.get("transcript"), record.get("raw")
        if not isinstance(text, str) or not (raw is None or isinstance(raw, str)):
            report.add(
                f"{where}: run {run} turn {turn}: transcript must be a string and raw the judge's "
                "text (or null for a failed call)",
                task=run,
            )
            continue
        found.judgments.setdefault(run, []).append(
            {"turn_index": turn, "kind": kind, "transcript": text, "raw": raw}
        )
    return found


def _scenarios(tasks: Mapping[str, dict]) -> dict[str, Scenario]:
    found = {}
    for task_id, spec in tasks.items():
        scenario, problems = parse_scenario(spec)
        if scenario is None:
            raise ValueError(f"task {task_id} no longer parses: {problems[:3]}")
        found[task_id] = scenario
    return found


def validate(
    path, report: ValidationReport, *, tasks: Mapping[str, dict], allow_partial: bool, limits
) -> UploadContents:
    """Every problem of the upload, by run and file; nothing is stored."""
    archive, entries = scan_zip(
        path,
        report,
        is_task_folder=lambda part: part in FOLDERS,
        max_uncompressed=limits.max_bytes,
        max_ratio=limits.max_ratio,
    )
    if archive is None:
        return UploadContents()
    with archive:
        layout = _layout(entries, report)
        scenarios = _scenarios(tasks)
        manifest = {}
        if SYSTEM_FILE in layout.root:
            manifest = _read_json(archive, layout.root[SYSTEM_FILE], report)
            if manifest is not UNREAD and not isinstance(manifest, dict):
                report.add("must be a JSON object describing the system", file=SYSTEM_FILE)
            manifest = manifest if isinstance(manifest, dict) else {}
        mode = layout.mode
        if mode is None:
            report.add(
                f"no run found: expected {AUDIO}/<run>.wav and {SCHEDULE}/<run>.json per run, "
                f"or {SCHEDULE}/<run>.json with {SEGMENTS_FILE} and {JUDGMENTS_FILE}"
            )
            return UploadContents(manifest=manifest)
        submitted = _Submitted()
        if mode == MODE_UNVERIFIED:
            if layout.audio or layout.transcripts:
                report.add(
                    f"holds both audio and {SEGMENTS_FILE}/{JUDGMENTS_FILE}: upload the audio "
                    "(scored here) or the low-trust files, not both"
                )
            submitted = _read_submitted(archive, layout, report, scenarios)
        present = _check_runs(archive, layout, report, scenarios, mode, submitted)
    # A run with files but problems is reported for those, not as missing as well.
    given = set(layout.logs) | set(layout.audio) | set(submitted.segments)
    missing = sorted(set(tasks) - given)
    if missing and not allow_partial:
        for run in missing:  # a missing run is never scored as silence (SPEC §8 row 20)
            report.add("this run is missing from the upload", task=run)
    return UploadContents(manifest=manifest, present=present, missing=missing)


def _check_runs(archive, layout, report, scenarios, mode, submitted) -> set[str]:
    """Check each run's files; the runs that are complete."""
    runs = set(layout.logs) | set(layout.audio) | set(layout.transcripts) | set(submitted.segments)
    present = set()
    for run in sorted(runs):
        scenario = scenarios.get(run)
        if scenario is None:
            where = layout.logs.get(run) or layout.audio.get(run) or layout.transcripts.get(run)
            report.add("no run of this name in the benchmark", task=run,
                       file=where.path if where else SEGMENTS_FILE)  # fmt: skip
            continue
        if run not in layout.logs:
            report.add(f"no {SCHEDULE}/{run}.json (the scheduler's log)", task=run)
            continue
        duration = None
        if mode == MODE_AUDIO:
            if run not in layout.audio:
                report.add(f"no {AUDIO}/{run}.wav (the output channel)", task=run)
                continue
            entry = layout.audio[run]
            try:
                duration = wav_duration(archive, entry.info)
            except (NotAWav, ValueError) as error:
                report.add(f"not a PCM WAV file: {error}", task=run, file=entry.path)
                continue
            except ZIP_READ_ERRORS:
                report.add("cannot be read from the zip", task=run, file=entry.path)
                continue
        elif run not in submitted.segments:
            report.add(f"run missing from {SEGMENTS_FILE}", task=run)
            continue
        if run in layout.transcripts:
            where = layout.transcripts[run].path
            data = _read_json(archive, layout.transcripts[run], report, run)
            chunks = data.get("chunks") if isinstance(data, Mapping) else None
            # Over the core's bound its chunks are not looked at: the run is refused for it.
            within = not isinstance(chunks, list) or report.count_spans(
                SpanCount(run, len(chunks), "chunks", file=where)
            )
            for problem in transcript_problems(data) if data is not UNREAD and within else []:
                report.add(problem, task=run, file=where)
        entry = layout.logs[run]
        data = _read_json(archive, entry, report, run)
        if data is UNREAD:
            continue
        log, problems = schedule.parse_log(data)
        if log is not None:
            segments = None
            if mode == MODE_UNVERIFIED:  # their segments: the wait after T is checked too
                segments = seg.normalise(seg.segments_to_ms(submitted.segments[run]))
            problems = schedule.validate_log(
                log, scenario, segments=segments, audio_duration_s=duration
            )
        for problem in problems:
            report.add(problem, task=run, file=entry.path)
        if not problems:
            present.add(run)
    return present


def ingest(handle: IO[bytes], *, tasks: Mapping[str, dict], limits: UploadLimits):
    """One IngestedTask per run, in run order: the output channel streamed to its own object,
    the log (and the submitter's transcript or low-trust measurements) as the task's data."""
    report = ValidationReport()
    archive, entries = scan_zip(
        handle,
        report,
        is_task_folder=lambda part: part in FOLDERS,
        max_uncompressed=limits.max_bytes,
        max_ratio=limits.max_ratio,
    )
    if archive is None:
        raise ValueError(f"stored upload no longer opens: {report.problems[:3]}")
    with archive:
        layout = _layout(entries, report)
        mode = layout.mode
        submitted = _Submitted()
        if mode == MODE_UNVERIFIED:
            submitted = _read_submitted(archive, layout, report, _scenarios(tasks))
        if not report.ok:
            raise ValueError(f"stored upload no longer validates: {report.problems[:3]}")
        for run in sorted(set(layout.logs) & set(tasks)):
            data = {"mode": mode, "log": loads(archive.read(layout.logs[run].info))}
            ingested = IngestedTask(run, data=data)
            if mode == MODE_AUDIO:
                info = layout.audio[run].info
                ingested.store.append((OUTPUT, _opener(archive, info), info.file_size))
                if run in layout.transcripts:
                    data["transcript"] = loads(archive.read(layout.transcripts[run].info))
            else:
                data["segments"] = submitted.segments.get(run, [])
                data["judgments"] = submitted.judgments.get(run, [])
            yield ingested


def _opener(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    return lambda: archive.open(info)


def submitted_outcome(kind: str, record: Mapping | None) -> str:
    """The outcome of a low-trust judgment record as the judge module reads it."""
    if record is None:
        return judges.MISSING
    return judges.outcome(kind, transcript=record.get("transcript"), attempts=[record.get("raw")])
