"""The upload: one JSON line per task, ``{"id": str, "response": str}`` (SPEC §3).

``model_response`` is accepted in place of ``response``; ``null`` is the empty reply, which is
still judged on every rubric item (SPEC §6 row 2). Other keys are ignored. The reply is kept
verbatim: it is not stripped (SPEC §6 row 15).

Rejected, each problem reported with file, line and field, all of them at once:
- a line that is not JSON, or JSON that is not an object, or uses NaN/Infinity (not JSON);
- ``id`` missing or not a string; no reply key, or a reply that is neither a string nor null;
  both keys given with different values;
- a duplicate id (SPEC §6 row 3), with the line of its first occurrence;
- an id the dataset does not have. SPEC §6 row 4 would ignore such lines; the benchmark's issue
  asks for rejection, and a stray id is far more often a wrong dataset revision or a typo than
  something the submitter wants dropped silently, so the upload is rejected with the line.

Dataset ids without a line are returned in ``missing``: those tasks score pass 0 and m 0 and
the result is marked incomplete (SPEC §6 row 1).

Every submission declares its output modality, ``text`` or ``audio`` (the paper reports the two
apart, SPEC §3). An audio-output submission may bring its reply audio as files named
``<id>.<ext>`` for playback; scoring always reads the text (a transcript of that audio).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

from evaluation.bundles import LineTooLong, text_lines
from evaluation.jsonbounds import loads_bounded

from .dataset import AUDIO_TYPES, Problem

OUTPUT_MODALITIES = ("text", "audio")
REPLY_KEYS = ("response", "model_response")


class SubmissionError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__(f"submission rejected: {shown}{more}")


@dataclass(frozen=True)
class Submission:
    output_modality: str
    responses: dict[str, str]  # task id -> reply, in file order
    missing: list[str]  # dataset ids without a line, in dataset order
    response_audio: dict[str, str] = field(default_factory=dict)  # task id -> uploaded file name

    @property
    def complete(self) -> bool:
        return not self.missing


# Past this many problems a file is read no further (the report says so).
PROBLEMS_MAX = 1000
# A line is a flat object; one nested deeper than this is refused, not parsed.
MAX_DEPTH = 64


def _lines(data, file_name: str) -> Iterator[tuple[int, str]]:
    """(number, line) of the file: text split at "\\n" only, as JSON lines end; bytes or a
    binary stream decoded a line at a time (a leading byte-order mark dropped), never whole.
    SubmissionError: not UTF-8, or a line longer than the site takes."""
    if isinstance(data, str):
        yield from enumerate(data.removeprefix("\ufeff").split("\n"), start=1)
        return
    handle = io.BytesIO(data) if isinstance(data, bytes) else data
    number = 0
    try:
        for number, raw in enumerate(text_lines(handle), start=1):
            raw = raw.removesuffix(b"\n")
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            yield number, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"line {number}"
        raise SubmissionError([Problem(file_name, where, "", f"not UTF-8 text ({exc})")]) from None
    except LineTooLong as exc:
        raise SubmissionError([Problem(file_name, "", "", str(exc))]) from None


def parse_submission(
    data: bytes | str | IO[bytes],
    *,
    task_ids: Sequence[str],
    output_modality: str,
    audio_files: Iterable[str] = (),
    file_name: str = "responses.jsonl",
) -> Submission:
    """The accepted submission, or SubmissionError listing every problem. ``data``: the file's
    text or bytes, or a binary stream read a line at a time."""
    problems: list[Problem] = []

    def problem(where: str, field_name: str, message: str, file: str = file_name) -> None:
        problems.append(Problem(file, where, field_name, message))

    if output_modality not in OUTPUT_MODALITIES:
        problem("", "output_modality", f"{output_modality!r} is not one of text, audio")

    known = set(task_ids)
    responses: dict[str, str] = {}
    first_line: dict[str, int] = {}
    # splitlines would also break on \x0b, \x1c, U+2028 ...; JSON lines end only with \n.
    for number, line in _lines(data, file_name):
        if len(problems) >= PROBLEMS_MAX:
            problem(f"line {number}", "", f"not read: {PROBLEMS_MAX} problems came before")
            break
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            record = loads_bounded(line, max_depth=MAX_DEPTH, parse_constant=_reject_constant)
        except ValueError as exc:  # JsonRefused included
            problem(where, "", f"not valid JSON ({exc})")
            continue
        if not isinstance(record, dict):
            problem(where, "", f"not a JSON object but {type(record).__name__}")
            continue
        task_id = record.get("id")
        if not isinstance(task_id, str):
            problem(where, "id", "missing" if task_id is None else "must be a string")
            continue
        reply = _reply(record, lambda f, m, w=where: problem(w, f, m))
        if task_id in first_line:
            problem(where, "id", f"duplicate id {task_id!r} (first on line {first_line[task_id]})")
            continue
        first_line[task_id] = number
        if task_id not in known:
            problem(where, "id", f"{task_id!r} is not a task of the dataset")
            continue
        if reply is not None:
            responses[task_id] = reply

    audio = _response_audio(audio_files, output_modality, known, first_line, problem)
    if problems:
        raise SubmissionError(problems)
    missing = [task_id for task_id in task_ids if task_id not in responses]
    return Submission(
        output_modality=output_modality,
        responses=responses,
        missing=missing,
        response_audio=audio,
    )


def _reject_constant(token: str):
    raise ValueError(f"{token} is not JSON")


def _reply(record: dict, problem) -> str | None:
    """The reply text ("" for null), or None after reporting why there is none."""
    given = {key: record[key] for key in REPLY_KEYS if key in record}
    if not given:
        problem("response", "missing (give response or model_response; null for an empty reply)")
        return None
    for key, value in given.items():
        if value is not None and not isinstance(value, str):
            problem(key, f"must be a string or null, not {type(value).__name__}")
            return None
    values = {value or "" for value in given.values()}
    if len(values) > 1:
        problem("model_response", "differs from response; give one of them")
        return None
    return values.pop()


def _response_audio(
    names: Iterable[str], modality: str, known: set[str], lines: dict[str, int], problem
) -> dict[str, str]:
    audio: dict[str, str] = {}
    for name in names:
        path = PurePosixPath(name.replace("\\", "/"))
        task_id, extension = path.stem, path.suffix.lower().lstrip(".")
        if modality != "audio":
            problem("", "", "reply audio is accepted only for an audio-output submission", name)
        elif extension not in AUDIO_TYPES:
            problem("", "", f"not an audio file ({', '.join(sorted(AUDIO_TYPES))})", name)
        elif task_id not in known:
            problem("", "", f"{task_id!r} is not a task of the dataset", name)
        elif task_id not in lines:
            problem("", "", f"no response line for {task_id!r}", name)
        elif task_id in audio:
            problem("", "", f"a second audio file for {task_id!r} (first {audio[task_id]})", name)
        else:
            audio[task_id] = name
    return audio
