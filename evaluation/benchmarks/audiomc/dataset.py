"""Read a local export of the Audio MultiChallenge dataset (SPEC §1): parquet or JSONL.

An export is a directory (or one file) as the usual dataset tools write it: the parquet shards
(``data/test-00000-of-00001.parquet``) or JSON lines with the same field names. When a directory
holds parquet files they are read (they carry the audio); otherwise its ``*.jsonl`` files are.

Per record: ``id``; ``axis``; ``user_turn_{k}_transcript`` and ``user_turn_{k}_audio``;
``assistant_turn_{k}_transcript``; ``rubric`` (JSON-encoded list, or a list) or ``rubrics`` (a
list, as some copies lay it out); optional ``audio_cue``. Absent and null fields are empty.

Field rules, all checked, every problem reported with file, row (parquet, counted from 1) or
line (JSONL) and field; any problem rejects the whole dataset (SPEC §6 row 5):
- ``id`` a non-empty string, unique over all files;
- ``axis`` one of the four axes;
- the rubric a non-empty list of non-empty strings; ``rubric_index`` is the 0-based position;
- L, the last user turn with a non-empty (stripped) transcript, in 3..8;
- assistant turns 1..L-1 present, except that one of them may be absent (the real data has one
  such task; its entry is omitted from the judge's history, SPEC edge case 14); none after L-1.

Tasks come back as (task_id, spec) with a JSON-serialisable spec; audio is streamed separately by
``iter_user_audio`` one (task, user turn) blob at a time, parquet read batch by batch, so an
importer can store every clip without holding the audio of the whole dataset in memory.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

AXES = ("INFERENCE_MEMORY", "INSTRUCTION_RETENTION", "SELF_COHERENCE", "VOICE_EDITING")
MIN_LAST_TURN, MAX_LAST_TURN = 3, 8

USER_TRANSCRIPT = re.compile(r"^user_turn_(\d+)_transcript$")
USER_AUDIO = re.compile(r"^user_turn_(\d+)_audio$")
ASSISTANT_TRANSCRIPT = re.compile(r"^assistant_turn_(\d+)_transcript$")

TASK_BATCH_ROWS = 1024

# Container signatures -> (extension, content type). The bytes are stored as given, never decoded.
AUDIO_TYPES = {
    "wav": "audio/wav",
    "flac": "audio/flac",
    "mp3": "audio/mpeg",
    "aac": "audio/aac",
    "ogg": "audio/ogg",
    "m4a": "audio/mp4",
    "opus": "audio/ogg",
    "webm": "audio/webm",
}


@dataclass(frozen=True)
class Problem:
    file: str
    where: str  # "row 12" (parquet) or "line 12" (JSONL), or "" for the file as a whole
    field: str
    message: str

    def __str__(self) -> str:
        place = f"{self.file} {self.where}".strip()
        return (
            f"{place}, field {self.field}: {self.message}"
            if self.field
            else f"{place}: {self.message}"
        )


class DatasetError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__(f"dataset rejected: {shown}{more}")


@dataclass(frozen=True)
class Task:
    """One conversation. spec keys: axis, last_user_turn (L), user_turns (L transcripts, raw),
    assistant_turns (L-1 transcripts, raw, "" where absent), rubric (list of str), and
    audio_cue (bool) only when the dataset gives one."""

    task_id: str
    spec: dict


@dataclass(frozen=True)
class Dataset:
    tasks: list[Task]
    files: list[str]  # relative to the export root, in reading order
    format: str  # "parquet" or "jsonl"


@dataclass(frozen=True)
class AudioBlob:
    task_id: str
    turn: int  # user turn k, 1-based
    data: bytes
    extension: str  # "wav", "flac", "mp3", ... or "bin" when the container is not recognised
    content_type: str
    source_path: str | None  # the path recorded in the export, if any


def dataset_files(path: Path) -> tuple[Path, list[Path], str]:
    """(root, files, format). A directory: its parquet files, else its JSONL files, sorted."""
    path = Path(path)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix not in (".parquet", ".jsonl"):
            raise DatasetError([Problem(path.name, "", "", "not a .parquet or .jsonl file")])
        return path.parent, [path], suffix[1:]
    if not path.is_dir():
        raise DatasetError([Problem(str(path), "", "", "no such file or directory")])
    for suffix in ("parquet", "jsonl"):
        files = sorted(p for p in path.rglob(f"*.{suffix}") if p.is_file())
        if files:
            return path, files, suffix
    raise DatasetError([Problem(str(path), "", "", "holds no .parquet or .jsonl files")])


def read_dataset(path: Path) -> Dataset:
    """Every task of the export, validated; raises DatasetError listing every problem."""
    root, files, fmt = dataset_files(path)
    problems: list[Problem] = []
    tasks: list[Task] = []
    first_seen: dict[str, str] = {}
    for file in files:
        name = _relative(file, root)
        for where, record in _records(file, name, fmt, problems):
            task_id = record.get("id")
            if isinstance(task_id, str) and task_id in first_seen:
                problems.append(
                    Problem(
                        name,
                        where,
                        "id",
                        f"duplicate id {task_id!r} (first at {first_seen[task_id]})",
                    )
                )
                continue
            if isinstance(task_id, str):
                first_seen[task_id] = f"{name} {where}"
            task = _task(record, name, where, problems)
            if task is not None:
                tasks.append(task)
    if not tasks and not problems:
        problems.append(Problem(_relative(files[0], root), "", "", "holds no tasks"))
    if problems:
        raise DatasetError(problems)
    return Dataset(tasks=tasks, files=[_relative(f, root) for f in files], format=fmt)


def iter_user_audio(path: Path) -> Iterator[AudioBlob]:
    """The user-turn clips of the export, one at a time, for turns 1..L of each task.

    Call after read_dataset accepted the export. Parquet is read one row group and one audio
    column at a time, so memory holds one turn's clips of one row group; clips come row group by
    row group, turn by turn within it. JSONL is read line by line. Null audio and a
    transcripts-only export yield nothing. An audio value that cannot be read raises
    DatasetError naming file, row (or line) and field.
    """
    root, files, fmt = dataset_files(path)
    for file in files:
        name = _relative(file, root)
        values = _parquet_audio(file, name) if fmt == "parquet" else _jsonl_audio(file, name)
        for where, task_id, turn, key, value in values:
            blob = _audio_blob(value, file.parent, root)
            if isinstance(blob, str):
                raise DatasetError([Problem(name, where, key, blob)])
            data, source_path = blob
            extension = sniff_audio(data) or _suffix(source_path) or "bin"
            content_type = AUDIO_TYPES.get(extension, "application/octet-stream")
            yield AudioBlob(str(task_id), turn, data, extension, content_type, source_path)


AudioValue = tuple[str, object, int, str, object]  # where, task id, turn, field, audio value


def _parquet_audio(file: Path, name: str) -> Iterator[AudioValue]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(file)
    names = parquet.schema_arrow.names
    audio = sorted((int(m.group(1)), n) for n in names if (m := USER_AUDIO.match(n)))
    if not audio:
        return
    text = [n for n in names if n == "id" or USER_TRANSCRIPT.match(n)]
    first_row = 0
    for group in range(parquet.num_row_groups):
        rows = parquet.read_row_group(group, columns=text, use_threads=False).to_pylist()
        lasts = [_last_user_turn(row) for row in rows]
        for turn, column_name in audio:
            if all(turn > last for last in lasts):
                continue  # the model never hears turns after L: not even read
            column = parquet.read_row_group(group, columns=[column_name], use_threads=False)
            values = (value for chunk in column.column(0).chunks for value in chunk)
            for offset, (row, last, value) in enumerate(zip(rows, lasts, values, strict=True)):
                if turn <= last and value.is_valid:
                    where = f"row {first_row + offset + 1}"
                    yield where, row.get("id"), turn, column_name, value.as_py()
            del column
        first_row += len(rows)


def _jsonl_audio(file: Path, name: str) -> Iterator[AudioValue]:
    problems: list[Problem] = []
    for where, record in _jsonl_records(file, name, problems, with_audio=True):
        last = _last_user_turn(record)
        for key in sorted(record, key=_turn_number):
            match = USER_AUDIO.match(key)
            if match and record[key] is not None and int(match.group(1)) <= last:
                yield where, record.get("id"), int(match.group(1)), key, record[key]
    if problems:
        raise DatasetError(problems)


def parse_record(record: dict, *, file: str = "record", where: str = "") -> Task:
    """One record as a task, under the same field rules as read_dataset (no id uniqueness)."""
    problems: list[Problem] = []
    task = _task(record, file, where, problems)
    if task is None:
        raise DatasetError(problems)
    return task


def sniff_audio(data: bytes) -> str | None:
    """The container by its first bytes: wav, flac, aac, mp3, ogg, m4a; None when unknown."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"fLaC":
        return "flac"
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xF6 == 0xF0:
        return "aac"  # ADTS: a 12-bit sync word and layer bits 00
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"  # an ID3 tag, or an MPEG audio frame's 11-bit sync word
    if data[:4] == b"OggS":
        return "ogg"
    if data[4:8] == b"ftyp":
        return "m4a"
    return None


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


def _relative(file: Path, root: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return file.name


def _records(
    file: Path, name: str, fmt: str, problems: list[Problem]
) -> Iterator[tuple[str, dict]]:
    if fmt == "parquet":
        yield from _parquet_records(file, name, problems)
    else:
        yield from _jsonl_records(file, name, problems, with_audio=False)


def _parquet_records(file: Path, name: str, problems: list[Problem]) -> Iterator[tuple[str, dict]]:
    import pyarrow.parquet as pq  # the standard parquet reader; only parquet exports need it

    try:
        parquet = pq.ParquetFile(file)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        problems.append(Problem(name, "", "", f"not a readable parquet file ({exc})"))
        return
    # Audio columns are never read when only the tasks are wanted.
    wanted = [n for n in parquet.schema_arrow.names if not USER_AUDIO.match(n)]
    row = 0
    for batch in parquet.iter_batches(batch_size=TASK_BATCH_ROWS, columns=wanted):
        for record in batch.to_pylist():
            row += 1
            yield f"row {row}", record


def _jsonl_records(
    file: Path, name: str, problems: list[Problem], *, with_audio: bool
) -> Iterator[tuple[str, dict]]:
    with file.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                record = json.loads(line, parse_constant=_reject_constant)
            except ValueError as exc:
                problems.append(Problem(name, where, "", f"not valid JSON ({exc})"))
                continue
            if not isinstance(record, dict):
                problems.append(Problem(name, where, "", "not a JSON object"))
                continue
            if not with_audio:
                record = {k: v for k, v in record.items() if not USER_AUDIO.match(k)}
            yield where, record


def _reject_constant(token: str):
    raise ValueError(f"{token} is not JSON")


def _turn_number(key: str) -> tuple[int, str]:
    digits = re.search(r"_(\d+)_", key)
    return (int(digits.group(1)) if digits else 0, key)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _last_user_turn(record: dict) -> int:
    """L: the largest k whose user transcript is non-empty after strip (0 when none is)."""
    last = 0
    for key, value in record.items():
        match = USER_TRANSCRIPT.match(key)
        if match and _text(value).strip():
            last = max(last, int(match.group(1)))
    return last


def _task(record: dict, name: str, where: str, problems: list[Problem]) -> Task | None:
    before = len(problems)

    def problem(field: str, message: str) -> None:
        problems.append(Problem(name, where, field, message))

    task_id = record.get("id")
    if not isinstance(task_id, str) or not task_id.strip():
        problem("id", "must be a non-empty string")
    axis = record.get("axis")
    if axis not in AXES:
        problem("axis", f"{axis!r} is not one of {', '.join(AXES)}")

    for key, value in record.items():
        if (USER_TRANSCRIPT.match(key) or ASSISTANT_TRANSCRIPT.match(key)) and not (
            value is None or isinstance(value, str)
        ):
            problem(key, f"must be a string or null, not {type(value).__name__}")

    last = _last_user_turn(record)
    if not MIN_LAST_TURN <= last <= MAX_LAST_TURN:
        field = f"user_turn_{last}_transcript" if last else "user_turn_1_transcript"
        problem(
            field,
            f"the last non-empty user turn is {last}; it must be in "
            f"{MIN_LAST_TURN}..{MAX_LAST_TURN}",
        )

    assistant = {}
    for key, value in record.items():
        match = ASSISTANT_TRANSCRIPT.match(key)
        if match and _text(value).strip():
            assistant[int(match.group(1))] = value
    if last:
        late = sorted(k for k in assistant if k >= last)
        for k in late:
            problem(
                f"assistant_turn_{k}_transcript",
                f"an assistant turn after user turn {last}, the last one, is not allowed",
            )
        absent = [k for k in range(1, last) if k not in assistant]
        if len(absent) > 1:
            listed = ", ".join(f"assistant_turn_{k}_transcript" for k in absent)
            problem(
                listed,
                f"{len(absent)} assistant turns before user turn {last} are empty; "
                "at most one may be",
            )

    rubric = _rubric(record, problem)

    audio_cue = record.get("audio_cue")
    if audio_cue is not None and not isinstance(audio_cue, bool):
        problem("audio_cue", "must be true, false or null")

    if len(problems) > before:
        return None
    spec = {
        "axis": axis,
        "last_user_turn": last,
        "user_turns": [_text(record.get(f"user_turn_{k}_transcript")) for k in range(1, last + 1)],
        "assistant_turns": [_text(assistant.get(k)) for k in range(1, last)],
        "rubric": rubric,
    }
    if audio_cue is not None:
        spec["audio_cue"] = audio_cue
    return Task(task_id=task_id, spec=spec)


def _rubric(record: dict, problem) -> list[str] | None:
    values = {}
    for field in ("rubric", "rubrics"):
        value = record.get(field)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = json.loads(value, parse_constant=_reject_constant)
            except ValueError as exc:
                problem(field, f"not a JSON-encoded list ({exc})")
                return None
        if not isinstance(value, list):
            problem(field, f"must be a list of strings, not {type(value).__name__}")
            return None
        values[field] = value
    if not values:
        problem("rubric", "missing")
        return None
    if len(values) == 2 and values["rubric"] != values["rubrics"]:
        problem("rubrics", "differs from rubric; give one of them")
        return None
    field, items = next(iter(values.items()))
    if not items:
        problem(field, "is empty; a task needs at least one rubric item")
        return None
    ok = True
    for index, item in enumerate(items):
        if not isinstance(item, str):
            problem(f"{field}[{index}]", f"must be a string, not {type(item).__name__}")
            ok = False
        elif not item.strip():
            problem(f"{field}[{index}]", "is empty")
            ok = False
    return items if ok else None


# ---------------------------------------------------------------------------------------------
# Audio values
# ---------------------------------------------------------------------------------------------


def _suffix(path: str | None) -> str | None:
    if not path:
        return None
    suffix = PurePosixPath(path.replace("\\", "/")).suffix.lower().lstrip(".")
    return suffix if suffix in AUDIO_TYPES else None


def _audio_blob(value, folder: Path, root: Path) -> tuple[bytes, str | None] | str:
    """(bytes, recorded path) from one audio value, or a message saying why it cannot be read.

    Accepted: the {bytes, path} struct the dataset tools write (bytes raw, or base64 in JSON),
    raw bytes, and a path (or {path} with null bytes) to a file beside the export.
    """
    source_path = None
    data = value
    if isinstance(value, dict):
        if "array" in value:
            return "decoded audio arrays are not accepted; export the audio column undecoded"
        source_path = value.get("path") if isinstance(value.get("path"), str) else None
        data = value.get("bytes")
        if data is None:
            if source_path is None:
                return "audio has neither bytes nor a path"
            return _audio_file(source_path, folder, root)
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data), source_path
    if isinstance(data, list) and all(isinstance(b, int) and 0 <= b < 256 for b in data):
        return bytes(data), source_path
    if isinstance(data, str):
        if isinstance(value, dict):
            try:
                return base64.b64decode(data, validate=True), source_path
            except (binascii.Error, ValueError):
                return "audio bytes given as text must be base64"
        return _audio_file(data, folder, root)
    return f"unreadable audio value of type {type(value).__name__}"


def _audio_file(path: str, folder: Path, root: Path) -> tuple[bytes, str] | str:
    # Only files inside the export are read: a recorded path is data, not a licence to roam.
    inside = root.resolve()
    for base in (folder, root):
        candidate = (base / path).resolve()
        if candidate.is_file() and candidate.is_relative_to(inside):
            return candidate.read_bytes(), path
    return f"audio has no bytes and its path {path!r} is not a file inside the export"
