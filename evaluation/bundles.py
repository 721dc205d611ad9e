"""Result bundles: safe reading of uploaded zips, independent of any benchmark.

Every problem is reported with the task and file it concerns; nothing is extracted here. The
benchmark plug-in decides what a task folder must contain (see benchmarks/<name>/bundle.py).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from evaluation.audio import WAV_HEAD_BYTES, AudioLimits, NotAWav, wav_format, wav_problem
from evaluation.benchmarks.base import SpanCount
from evaluation.jsonbounds import JsonRefused, loads_bounded, non_finite_path, unstorable_path
from evaluation.links import web_url_problem

# What reading a damaged or unusual entry can raise (bad CRC, truncated deflate data, a
# compression method Python lacks); reported in our words, never passed on.
ZIP_READ_ERRORS = (
    zipfile.BadZipFile,
    OSError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)
# Files are stored under their names: no file system takes a name component over 255 bytes,
# and S3 keys (submissions/<id>/<task>/<path>) end at 1,024.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 768
# Entries that archivers add on their own; never part of a result bundle.
IGNORED_PREFIXES = ("__MACOSX/",)
IGNORED_NAMES = {".DS_Store", "Thumbs.db"}
# Below this size a high compression ratio is normal (padding, whitespace).
RATIO_CHECK_MIN_BYTES = 1024 * 1024
# Digital silence compresses past 1000:1: an agent that never spoke leaves such WAVs. A WAV is
# exempt from the ratio test when its header is PCM audio the benchmark takes (see AudioLimits)
# and the file holds no more than the header declares, plus this much for trailing chunks.
RATIO_EXEMPT_SUFFIXES = (".wav",)
WAV_TRAILER_BYTES = 1024 * 1024


# A report keeps this many problems (and warnings) per file and per bundle; the rest are
# counted and summed up as "and N more", so a bundle of bad chunks cannot make it huge.
REPORT_MAX_PER_FILE = 20
REPORT_MAX_TOTAL = 500
# Messages, task and file names are cut to this many characters in a report.
REPORT_MAX_TEXT = 300


def _cut(text: str | None) -> str | None:
    """Short, and storable (a NUL or an unpaired surrogate in a file name is shown escaped)."""
    if text is None:
        return None
    if len(text) > REPORT_MAX_TEXT:
        text = text[: REPORT_MAX_TEXT - 1] + "…"
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class Problem:
    message: str
    task: str | None = None
    file: str | None = None

    def __str__(self) -> str:
        where = " / ".join(part for part in (self.task, self.file) if part)
        return f"{where}: {self.message}" if where else self.message


class _Capped:
    """Every item counted, the first `per_file` of each (task, file) and `total` overall kept."""

    def __init__(self, per_file: int, total: int):
        self.per_file, self.total = per_file, total
        self.kept: list[Problem] = []
        self.count = 0
        self._seen: dict[tuple, int] = {}
        self._kept_in: dict[tuple, int] = {}

    def add(self, problem: Problem) -> None:
        self.count += 1
        where = (problem.task, problem.file)
        self._seen[where] = self._seen.get(where, 0) + 1
        if self._seen[where] <= self.per_file and len(self.kept) < self.total:
            self.kept.append(problem)
            self._kept_in[where] = self._kept_in.get(where, 0) + 1

    @property
    def omitted(self) -> int:
        return self.count - len(self.kept)

    def listed(self, noun: str) -> list[Problem]:
        """The kept items, then one "and N more" line per file that has some left out, then one
        for the files none of whose items were kept."""
        lines = list(self.kept)
        rest = self.omitted
        for (task, file), kept in self._kept_in.items():
            more = self._seen[(task, file)] - kept
            if more:
                lines.append(Problem(f"and {more:,} more {noun}(s) in this file", task, file))
                rest -= more
        if rest:
            lines.append(Problem(f"and {rest:,} more {noun}(s) elsewhere, not listed"))
        return lines


class ValidationReport:
    """Problems (the bundle is refused) and warnings (it is not), each counted in full but kept
    only up to `max_per_file` per file and `max_total` per bundle. ``max_spans_per_run``: the
    plug-in's declared bound on a run's timed spans, which the core's validation sets
    (bundle_validate); every count a plug-in reports (count_spans) is kept in ``spans``."""

    def __init__(
        self,
        *,
        max_per_file: int = REPORT_MAX_PER_FILE,
        max_total: int = REPORT_MAX_TOTAL,
        max_spans_per_run: int | None = None,
    ):
        self._problems = _Capped(max_per_file, max_total)
        self._warnings = _Capped(max_per_file, max_total)
        self.max_spans_per_run = max_spans_per_run
        self.spans: list[SpanCount] = []

    def count_spans(self, span: SpanCount) -> bool:
        """The timed spans one sequence of a run holds, as the plug-in parsed them: over the
        plug-in's bound, a problem naming the run, its file, the count and the bound, and False
        (the plug-in need do no more with them). Checked here, once for every plug-in, as soon
        as they are counted, so that nothing is built from a run that is refused."""
        self.spans.append(span)
        limit = self.max_spans_per_run
        if limit is None or span.count <= limit:
            return True
        where = f"{span.where}: " if span.where else ""
        self.add(
            f"{where}holds {span.count:,} {span.what}; a run of this benchmark holds at most "
            f"{limit:,}",
            task=span.task,
            file=span.file,
        )
        return False

    @property
    def ok(self) -> bool:
        return self._problems.count == 0

    @property
    def problems(self) -> list[Problem]:
        """The kept problems (problem_count says how many there are in all)."""
        return self._problems.kept

    @property
    def warnings(self) -> list[Problem]:
        return self._warnings.kept

    @property
    def problem_count(self) -> int:
        return self._problems.count

    @property
    def warning_count(self) -> int:
        return self._warnings.count

    def add(self, message: str, *, task: str | None = None, file: str | None = None) -> None:
        self._problems.add(Problem(_cut(message), _cut(task), _cut(file)))

    def warn(self, message: str, *, task: str | None = None, file: str | None = None) -> None:
        self._warnings.add(Problem(_cut(message), _cut(task), _cut(file)))

    def lines(self) -> list[str]:
        return [str(p) for p in self._problems.listed("problem")]

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "problem_count": self._problems.count,
            "problems_omitted": self._problems.omitted,
            "problems": [asdict(p) for p in self._problems.listed("problem")],
            "warning_count": self._warnings.count,
            "warnings_omitted": self._warnings.omitted,
            "warnings": [asdict(p) for p in self._warnings.listed("warning")],
        }


class BundleRejected(Exception):
    def __init__(self, report: ValidationReport):
        self.report = report
        super().__init__(
            f"bundle rejected: {report.problem_count:,} problem(s)\n"
            + "\n".join(f"  - {line}" for line in report.lines())
        )


@dataclass(frozen=True)
class Entry:
    """A regular file in the bundle, with its path split around the task folder."""

    info: zipfile.ZipInfo
    path: str
    parent: str  # everything above the task folder ("" at the root)
    task: str | None  # the task folder's name, or None outside any
    relative: str  # path inside the task folder (or the full path outside any)


def _is_link(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return stat.S_ISLNK(mode)


def path_parts(name: str) -> list[str]:
    """A relative zip path's parts, as PurePosixPath(name).parts gives them (empty and "."
    parts dropped), without building a path object per entry."""
    return [part for part in name.split("/") if part and part != "."]


def _unsafe_path_reason(name: str) -> str | None:
    if "\\" in name:
        return "uses backslashes in its path"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "has an absolute path"
    parts = path_parts(name)
    if ".." in parts:
        return "has '..' in its path"
    if len(name.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        return f"has a path over {MAX_PATH_BYTES} bytes"
    longest = max(
        (len(part.encode("utf-8", "surrogateescape")) for part in parts),
        default=0,
    )
    if longest > MAX_NAME_BYTES:
        return f"has a name of {longest} bytes in its path; at most {MAX_NAME_BYTES} per name"
    return None


def wav_member_problem(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: AudioLimits
) -> str | None:
    """What is wrong with a WAV member, read from its header alone: not PCM audio, beyond the
    benchmark's audio limits, or larger than the audio its header declares; None when it is
    fine (and so may be exempt from the compression-ratio test)."""
    try:
        with archive.open(info) as handle:
            head = handle.read(WAV_HEAD_BYTES)
    except ZIP_READ_ERRORS:
        return "it cannot be read"
    try:
        fmt = wav_format(head)
    except NotAWav as exc:
        return str(exc)
    problem = wav_problem(fmt, limits)
    if problem:
        return f"the WAV {problem}"
    if info.file_size > fmt.data_offset + fmt.data_bytes + WAV_TRAILER_BYTES:
        return "the file is larger than the audio its header declares"
    return None


# A line of a JSONL file may hold this many bytes: one record of any benchmark is far smaller.
JSONL_LINE_MAX_BYTES = 4 * 1024 * 1024


class LineTooLong(ValueError):
    """A line of a text file longer than its bound; ``str()`` names the line."""


def text_lines(handle, *, line_max_bytes: int = JSONL_LINE_MAX_BYTES) -> Iterator[bytes]:
    """A binary stream's lines, each ending with b"\\n" (the last may not), read one at a time:
    a file of any size is never held whole. A line longer than ``line_max_bytes`` raises
    LineTooLong naming it (counted by b"\\n")."""
    number = 0
    while True:
        line = handle.readline(line_max_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) > line_max_bytes and not (
            len(line) == line_max_bytes + 1 and line.endswith(b"\n")
        ):
            raise LineTooLong(f"line {number}: longer than {line_max_bytes:,} bytes")
        yield line


# The end of a zip: its last record, and the zip64 records a large archive puts before it.
_END = b"PK\x05\x06"
_END_SIZE = 22
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_COMMENT_MAX = 0xFFFF


def zip_entry_count(path) -> int | None:
    """How many entries a zip says it holds, read from its end records alone (the last 64 KiB
    or so), before any directory is read into memory; None when the end is not a zip's."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        start = max(0, size - _END_SIZE - _COMMENT_MAX - 20)
        handle.seek(start)
        tail = handle.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        return None
    count = int.from_bytes(tail[at + 10 : at + 12], "little")
    locator = at - 20
    if locator >= 0 and tail[locator : locator + 4] == _END64_LOCATOR:
        # Zip64: the true count is in the zip64 end record the locator points to.
        offset = int.from_bytes(tail[locator + 8 : locator + 16], "little")
        if offset + 56 > size:
            return None
        with open(path, "rb") as handle:
            handle.seek(offset)
            record = handle.read(56)
        if record[:4] != _END64:
            return None
        count = int.from_bytes(record[32:40], "little")
    return count


def unpacked_bytes(path) -> int:
    """What an upload unpacks to besides itself: its zip members' sizes; 0 for a single file
    (a JSONL, say), which is stored as it is."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        return 0
    with zipfile.ZipFile(path) as archive:
        return sum(info.file_size for info in archive.infolist() if not info.is_dir())


def audio_members_check(path, limits: AudioLimits, report: ValidationReport) -> bool:
    """Every WAV member of a zip upload checked from its header alone against the benchmark's
    audio limits (wav_member_problem), each problem reported on its file; True when all are
    fine (a single-file upload has none). The core runs it before a plug-in reads the upload,
    so no plug-in can forget it, and scan_zip may then exempt WAVs from the compression-ratio
    test: silence under a valid header deflates about 1000:1."""
    if not zipfile.is_zipfile(path):
        return True
    try:
        archive = zipfile.ZipFile(path)
    except ZIP_READ_ERRORS:
        return True  # scan_zip reports it
    fine = True
    with archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or not name.lower().endswith(RATIO_EXEMPT_SUFFIXES):
                continue
            if (
                _unsafe_path_reason(name)
                or _is_link(info)
                or info.flag_bits & 0x1
                or name.startswith(IGNORED_PREFIXES)
            ):
                continue  # scan_zip refuses or skips it, and says so
            problem = wav_member_problem(archive, info, limits)
            if problem:
                report.add(f"not accepted as audio: {problem}", file=info.filename)
                fine = False
    return fine


def scan_zip(
    path,
    report: ValidationReport,
    *,
    is_task_folder,
    max_uncompressed: int,
    max_ratio: float,
) -> tuple[zipfile.ZipFile | None, list[Entry]]:
    """Open the zip (a path or a seekable file) and list its safe regular files, reporting every
    unsafe entry. A WAV escapes the compression-ratio test: every one was checked against the
    benchmark's audio limits before (audio_members_check)."""
    try:
        archive = zipfile.ZipFile(path)
    except ZIP_READ_ERRORS:
        report.add("not a readable zip archive (no zip directory found, or it is damaged)")
        return None, []
    entries: list[Entry] = []
    seen: set[str] = set()
    total_uncompressed = ratio_uncompressed = ratio_compressed = 0
    for info in archive.infolist():
        name = info.filename
        if name in seen:
            report.add("zip holds this path twice", file=name)
            continue
        seen.add(name)
        reason = _unsafe_path_reason(name)
        if reason:
            report.add(f"zip entry {reason}; refusing to extract it", file=name)
            continue
        if _is_link(info):
            report.add("zip entry is a symbolic link; links are not allowed", file=name)
            continue
        if info.is_dir() or name.startswith(IGNORED_PREFIXES):
            continue
        if info.flag_bits & 0x1:
            report.add("zip entry is encrypted", file=name)
            continue
        total_uncompressed += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if not name.lower().endswith(RATIO_EXEMPT_SUFFIXES):
            if info.file_size >= RATIO_CHECK_MIN_BYTES and ratio > max_ratio:
                report.add(
                    f"compression ratio {ratio:.0f}:1 exceeds the limit of {max_ratio:.0f}:1",
                    file=name,
                )
                continue
            ratio_uncompressed += info.file_size
            ratio_compressed += info.compress_size
        parts = path_parts(name)
        if not parts or parts[-1] in IGNORED_NAMES:
            continue
        index = next((i for i, part in enumerate(parts[:-1]) if is_task_folder(part)), None)
        if index is None:
            entries.append(Entry(info, name, "", None, name))
        else:
            entries.append(
                Entry(
                    info,
                    name,
                    "/".join(parts[:index]),
                    parts[index],
                    "/".join(parts[index + 1 :]),
                )
            )
    _report_file_folder_clashes(entries, report)
    if total_uncompressed > max_uncompressed:
        report.add(
            f"uncompressed size {total_uncompressed:,} bytes exceeds the limit of "
            f"{max_uncompressed:,} bytes"
        )
    if ratio_uncompressed >= RATIO_CHECK_MIN_BYTES and ratio_uncompressed > max_ratio * max(
        ratio_compressed, 1
    ):
        report.add(
            f"overall compression ratio {ratio_uncompressed / max(ratio_compressed, 1):.0f}:1 "
            f"exceeds the limit of {max_ratio:.0f}:1"
        )
    return archive, entries


def _report_file_folder_clashes(entries: list[Entry], report: ValidationReport) -> None:
    """x.wav beside x.wav/y.wav cannot both be stored: one name would be a file and a folder."""
    files = {entry.path for entry in entries}
    folders = {
        "/".join(parts[:i])
        for entry in entries
        for parts in [path_parts(entry.path)]
        for i in range(1, len(parts))
    }
    for clash in sorted(files & folders):
        report.add("is a file, and a folder of the same name holds other files", file=clash)


def source_opener(source: Path | IO[bytes]) -> Callable[[], AbstractContextManager[IO[bytes]]]:
    """How to open an upload that is a single file, for reading a line at a time: a path anew,
    a stream from its start (left open for its owner to close)."""
    if isinstance(source, Path):
        return lambda: open(source, "rb")

    def rewound():
        source.seek(0)
        return contextlib.nullcontext(source)

    return rewound


def member_opener(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo
) -> Callable[[], AbstractContextManager[IO[bytes]]]:
    """How to open one member of an open zip for reading."""
    return lambda: archive.open(info)


# A system manifest: a few fields, some of them text.
MANIFEST_MAX_BYTES = 1024 * 1024
MANIFEST_MAX_DEPTH = 16


def read_manifest(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, report: ValidationReport, *, file: str
) -> dict:
    """A zip's system manifest as an object, or {} with the problem reported: too large, not
    UTF-8 JSON, nested deeper than a manifest is, or not an object."""
    if info.file_size > MANIFEST_MAX_BYTES:
        report.add(f"larger than {MANIFEST_MAX_BYTES:,} bytes", file=file)
        return {}
    try:
        with archive.open(info) as handle:
            raw = handle.read(MANIFEST_MAX_BYTES + 1)
    except ZIP_READ_ERRORS:
        report.add("cannot be read from the zip (damaged data)", file=file)
        return {}
    try:
        manifest = loads_bounded(raw, max_depth=MANIFEST_MAX_DEPTH)
    except JsonRefused as exc:
        report.add(f"not accepted as JSON: it {exc}", file=file)
        return {}
    except (UnicodeDecodeError, ValueError) as exc:
        report.add(f"not valid JSON: {exc}", file=file)
        return {}
    if not isinstance(manifest, dict):
        report.add("must hold a JSON object describing the system", file=file)
        return {}
    return manifest


def manifest_check(
    manifest: dict,
    report: ValidationReport,
    *,
    choices: dict[str, list[str]],
    max_lengths: dict[str, int],
    web_urls: tuple[str, ...] = (),
) -> None:
    """The root manifest's fields that become columns: each of `choices` must be one of its
    values, each of `max_lengths` a string that fits, each of `web_urls` an http(s) address
    (pages link to them: evaluation/links.py); and nothing a database refuses anywhere (NaN or
    Infinity, NUL characters)."""
    where = non_finite_path(manifest)
    if where:
        report.add(
            f"field '{where}' is NaN or Infinity, which JSON has no place for; "
            "use a number or null",
            file="manifest.json",
        )
    found = unstorable_path(manifest)
    if found:
        report.add(
            f"field '{found[0]}' holds {found[1]}, which cannot be stored", file="manifest.json"
        )
    for name, allowed in choices.items():
        value = manifest.get(name)
        if value not in (None, "") and value not in allowed:
            report.add(
                f"field '{name}' is {str(value)[:50]!r}; it must be one of {', '.join(allowed)}",
                file="manifest.json",
            )
    for name, limit in max_lengths.items():
        value = manifest.get(name)
        if value is not None and not isinstance(value, str):
            report.add(f"field '{name}' must be a string", file="manifest.json")
        elif value is not None and len(value) > limit:
            report.add(
                f"field '{name}' has {len(value):,} characters; at most {limit}",
                file="manifest.json",
            )
    for name in web_urls:
        value = manifest.get(name)
        problem = web_url_problem(name, value) if isinstance(value, str) else None
        if problem:
            report.add(problem, file="manifest.json")


def zip_directory(directory: Path) -> Path:
    """Zip a result directory into a temporary file, streaming each file. The caller deletes it.

    Links are stored as links so that validation reports them instead of following them.
    """
    handle, name = tempfile.mkstemp(suffix=".zip", prefix="floorboard-bundle-")
    os.close(handle)
    target = Path(name)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for root, dirs, files in os.walk(directory, followlinks=False):
            root_path = Path(root)
            for entry_name in sorted(dirs + files):
                path = root_path / entry_name
                arcname = path.relative_to(directory).as_posix()
                if path.is_symlink():
                    info = zipfile.ZipInfo(arcname)
                    info.external_attr = (stat.S_IFLNK | 0o777) << 16
                    archive.writestr(info, os.readlink(path))
                elif path.is_file():
                    with (
                        open(path, "rb") as source,
                        archive.open(arcname, "w", force_zip64=True) as sink,
                    ):
                        shutil.copyfileobj(source, sink, 1024 * 1024)
    return target


def iter_task_entries(entries: list[Entry]) -> Iterator[tuple[str, list[Entry]]]:
    by_task: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.task is not None:
            by_task.setdefault(entry.task, []).append(entry)
    yield from sorted(by_task.items())
