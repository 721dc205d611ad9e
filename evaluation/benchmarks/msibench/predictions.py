"""The upload: a predictions JSONL read exactly as the harness reads it (SPEC §3). Pure.

The harness validates each non-blank line (``str.splitlines()``, blank after ``str.strip()``
skipped) with a strict pydantic model (``extra="forbid"``) and raises on the first bad line, so
any problem rejects the whole file; here every problem is reported, each with its file, line and
field. Field rules are pydantic's lax mode as the harness runs it: ``confidence`` accepts a bool,
an integer or a numeric string (pydantic's grammar: surrounding whitespace, ``1_000``, ``.5``)
and becomes a float; ``arguments`` defaults to ``{}`` but ``null`` is invalid; any other key of a
row or a call is invalid. The site also rejects NaN, Infinity and numbers that overflow a float
anywhere in a line, and escaped lone surrogates and over-deep nesting, which pydantic's parser
refuses (see jsontext.py).

A submission may be one file or several (base/hear cells and speak cells, as the harness writes
them); they are combined, and a cell id in two places rejects the upload like a duplicate in one
file. Unknown cell ids are ignored (listed as warnings); missing cells are listed.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import IO, Any

from .jsontext import JsonTextError, iter_jsonl_lines, iter_jsonl_stream, loads_strict

TURN_BASED, FULL_DUPLEX = "turn-based", "full-duplex"
RUN_MODES = (TURN_BASED, FULL_DUPLEX)
ACTIONS = ("respond", "silent")
FIELDS = ("cell_id", "predicted_action", "answer_text", "tool_calls", "confidence", "metadata")
CALL_FIELDS = ("name", "arguments")

# Whitespace Rust's str::trim removes (Unicode White_Space): Python's isspace() minus \x1c-\x1f.
_TRIM = "".join(chr(c) for c in range(0x3001) if chr(c).isspace() and not 0x1C <= c <= 0x1F)
# Rust's f64 grammar (what pydantic parses a numeric string with), ASCII only.
_RUST_FLOAT = re.compile(
    r"[+-]?(?:inf|infinity|nan|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?)",
    re.IGNORECASE | re.ASCII,
)


class PredictionsError(ValueError):
    """The upload is rejected as a whole; ``problems`` lists every reason."""

    def __init__(self, problems: list[PredictionProblem]):
        self.problems = problems
        shown = "\n".join(str(problem) for problem in problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s) in the upload:\n{shown}{more}")


@dataclass(frozen=True)
class PredictionProblem:
    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line is not None else "")
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


@dataclass(frozen=True)
class Prediction:
    """One validated row, normalised as the harness's ``model_dump(mode="json")``."""

    cell_id: str
    predicted_action: str
    answer_text: str | None = None
    tool_calls: list[dict] = field(default_factory=list)
    confidence: float | None = None
    metadata: dict | None = None
    file: str = ""
    line: int = 0

    @property
    def format_error(self) -> bool:
        """``metadata.provider_error`` is an object (even ``{}``): every atom fails (§9.8)."""
        return isinstance(self.metadata, dict) and isinstance(
            self.metadata.get("provider_error"), dict
        )

    @property
    def is_empty(self) -> bool:
        """No answer text after ``str.strip()`` and no tool call (the empty-answer guard, §6.6)."""
        return not (self.answer_text or "").strip() and not self.tool_calls

    def to_json(self) -> dict:
        return {
            "cell_id": self.cell_id,
            "predicted_action": self.predicted_action,
            "answer_text": self.answer_text,
            "tool_calls": [dict(call) for call in self.tool_calls],
            "confidence": self.confidence,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Prediction:
        """From ``to_json`` output (already validated)."""
        return cls(
            cell_id=data["cell_id"],
            predicted_action=data["predicted_action"],
            answer_text=data.get("answer_text"),
            tool_calls=[dict(call) for call in data.get("tool_calls") or []],
            confidence=data.get("confidence"),
            metadata=data.get("metadata"),
        )


def float_from_text(text: str) -> float | None:
    """A numeric string as pydantic's lax float reads it, or None: trimmed Rust f64 syntax, else
    (untrimmed) with single underscores between characters removed."""
    trimmed = text.strip(_TRIM)
    if _RUST_FLOAT.fullmatch(trimmed):
        return float(trimmed)
    if "_" in text and not text.startswith("_") and not text.endswith("_") and "__" not in text:
        stripped = text.replace("_", "")
        if _RUST_FLOAT.fullmatch(stripped):
            return float(stripped)
    return None


def _check_confidence(value: Any) -> tuple[float | None, str | None]:
    if value is None:
        return None, None
    if isinstance(value, bool | int):
        return float(value), None
    if isinstance(value, float):
        return value, None
    if isinstance(value, str):
        number = float_from_text(value)
        if number is None:
            return None, "must be a number (or a numeric string), got an unparseable string"
        if not math.isfinite(number):
            return None, "must be a finite number"
        return number, None
    return None, "must be a number or null"


def _check_row(row: Any, problem) -> Prediction | None:
    """One parsed line; ``problem(field, message)`` records what is wrong."""
    if not isinstance(row, dict):
        problem("", "a line must hold a JSON object")
        return None
    ok = True
    for key in row:
        if key not in FIELDS:
            problem(key, "unknown field")
            ok = False
    cell_id = row.get("cell_id")
    if "cell_id" not in row:
        problem("cell_id", "required")
        ok = False
    elif not isinstance(cell_id, str):
        problem("cell_id", "must be a string")
        ok = False
    action = row.get("predicted_action")
    if "predicted_action" not in row:
        problem("predicted_action", "required")
        ok = False
    elif action not in ACTIONS:
        problem("predicted_action", 'must be "respond" or "silent" (case-sensitive)')
        ok = False
    answer = row.get("answer_text")
    if answer is not None and not isinstance(answer, str):
        problem("answer_text", "must be a string or null")
        ok = False
    calls = row.get("tool_calls", [])
    checked_calls: list[dict] = []
    if not isinstance(calls, list):
        problem("tool_calls", "must be a list (null is not allowed)")
        ok = False
    else:
        for index, call in enumerate(calls):
            checked = _check_call(call, f"tool_calls[{index}]", problem)
            if checked is None:
                ok = False
            else:
                checked_calls.append(checked)
    confidence, why = _check_confidence(row.get("confidence"))
    if why:
        problem("confidence", why)
        ok = False
    metadata = row.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        problem("metadata", "must be an object or null")
        ok = False
    if not ok:
        return None
    return Prediction(
        cell_id=cell_id,
        predicted_action=action,
        answer_text=answer,
        tool_calls=checked_calls,
        confidence=confidence,
        metadata=metadata,
    )


def _check_call(call: Any, where: str, problem) -> dict | None:
    if not isinstance(call, dict):
        problem(where, "a tool call must be an object {name, arguments}")
        return None
    ok = True
    for key in call:
        if key not in CALL_FIELDS:
            problem(f"{where}.{key}", "unknown field (a call holds only name and arguments)")
            ok = False
    if "name" not in call:
        problem(f"{where}.name", "required")
        ok = False
    elif not isinstance(call["name"], str):
        problem(f"{where}.name", "must be a string")
        ok = False
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        problem(f"{where}.arguments", "must be an object (null is not allowed; omit it for {})")
        ok = False
    return {"name": call["name"], "arguments": arguments} if ok else None


# Past this many problems a file is read no further (the last problem says so).
PROBLEMS_MAX = 1000


def parse_predictions(
    data: bytes | str | IO[bytes], *, source: str
) -> tuple[list[Prediction], list]:
    """(predictions, problems) of one file: its text or bytes, or a seekable binary stream,
    read a line at a time. Duplicate cell ids within the file are problems."""
    if isinstance(data, bytes):
        data = io.BytesIO(data)
    # The harness keeps a BOM as U+FEFF, which breaks the first line's JSON.
    if isinstance(data, str):
        bom = data.startswith("\ufeff")
    else:
        bom = data.read(3) == b"\xef\xbb\xbf"
        data.seek(0)
    if bom:
        return [], [PredictionProblem(source, 1, "", "file starts with a UTF-8 byte-order mark")]
    lines = iter_jsonl_lines(data) if isinstance(data, str) else iter_jsonl_stream(data)
    try:
        return _parse_lines(lines, source=source)
    except JsonTextError as exc:
        # Not UTF-8 (or a line too long): the harness's read aborts, so nothing of it counts.
        return [], [PredictionProblem(source, None, "", str(exc))]


def _parse_lines(lines, *, source: str) -> tuple[list[Prediction], list]:
    problems: list[PredictionProblem] = []
    predictions: list[Prediction] = []
    seen: dict[str, int] = {}
    for number, line in lines:
        if len(problems) >= PROBLEMS_MAX:
            problems.append(
                PredictionProblem(source, number, "", f"not read: {PROBLEMS_MAX} problems before")
            )
            break

        def problem(field_name: str, message: str, number: int = number) -> None:
            problems.append(PredictionProblem(source, number, field_name, message))

        try:
            row = loads_strict(line)
        except JsonTextError as exc:
            problem("", str(exc))
            continue
        prediction = _check_row(row, problem)
        if prediction is None:
            continue
        if prediction.cell_id in seen:
            problem(
                "cell_id",
                f"duplicate cell_id {prediction.cell_id!r} (first on line "
                f"{seen[prediction.cell_id]})",
            )
            continue
        seen[prediction.cell_id] = number
        predictions.append(_located(prediction, source, number))
    return predictions, problems


def _located(prediction: Prediction, file: str, line: int) -> Prediction:
    return Prediction(
        cell_id=prediction.cell_id,
        predicted_action=prediction.predicted_action,
        answer_text=prediction.answer_text,
        tool_calls=prediction.tool_calls,
        confidence=prediction.confidence,
        metadata=prediction.metadata,
        file=file,
        line=line,
    )


@dataclass
class PredictionSet:
    """A validated upload against a release: predictions by cell id, the languages it covers
    (those with at least one prediction for a known cell), and what it lacks or adds."""

    run_mode: str
    predictions: dict[str, Prediction]
    languages: list[str]
    missing_cell_ids: list[str]
    unknown_cell_ids: list[str]
    warnings: list[str] = field(default_factory=list)

    def get(self, cell_id: str) -> Prediction | None:
        return self.predictions.get(cell_id)


def read_predictions(
    files: Sequence[tuple[str, bytes | str | Callable[[], AbstractContextManager[IO[bytes]]]]],
    *,
    specs: Mapping[str, Mapping],
    run_mode: str,
) -> PredictionSet:
    """Validate and combine the upload's files (name, content) against the release's cells
    (cell id -> spec with "language" and "kind"). Raises PredictionsError on any problem."""
    if run_mode not in RUN_MODES:
        raise ValueError(f"run mode must be one of {RUN_MODES}, got {run_mode!r}")
    if not files:
        raise PredictionsError([PredictionProblem("", None, "", "no prediction file")])
    problems: list[PredictionProblem] = []
    combined: dict[str, Prediction] = {}
    for name, content in files:
        if callable(content):  # an opener: the file is read from a stream
            with content() as handle:
                predictions, file_problems = parse_predictions(handle, source=name)
        else:
            predictions, file_problems = parse_predictions(content, source=name)
        problems += file_problems
        for prediction in predictions:
            earlier = combined.get(prediction.cell_id)
            if earlier is not None:
                problems.append(
                    PredictionProblem(
                        name,
                        prediction.line,
                        "cell_id",
                        f"duplicate cell_id {prediction.cell_id!r} (also {earlier.file} line "
                        f"{earlier.line})",
                    )
                )
                continue
            combined[prediction.cell_id] = prediction
    if problems:
        raise PredictionsError(problems)
    unknown = sorted(cell_id for cell_id in combined if cell_id not in specs)
    known = {cell_id: p for cell_id, p in combined.items() if cell_id in specs}
    languages = sorted({specs[cell_id]["language"] for cell_id in known})
    missing = sorted(
        cell_id
        for cell_id, spec in specs.items()
        if spec["language"] in languages and cell_id not in known
    )
    warnings = [f"unknown cell_id {cell_id!r} is ignored" for cell_id in unknown]
    warnings += _live_probe_warnings(known.values(), specs, run_mode)
    return PredictionSet(
        run_mode=run_mode,
        predictions=known,
        languages=languages,
        missing_cell_ids=missing,
        unknown_cell_ids=unknown,
        warnings=warnings,
    )


LIVE_FLAGS = ("live_probe_executed", "interrupted", "followed_bystander")


def _live_probe_warnings(
    predictions: Iterable[Prediction], specs: Mapping[str, Mapping], run_mode: str
) -> list[str]:
    """Live-probe metadata the harness would silently ignore (never a rejection)."""
    warnings = []
    for prediction in predictions:
        metadata = prediction.metadata or {}
        live = metadata.get("live_probe")
        has_live = "live_probe" in metadata or any(flag in metadata for flag in LIVE_FLAGS)
        where = f"{prediction.file} line {prediction.line} ({prediction.cell_id})"
        if not has_live:
            continue
        if specs[prediction.cell_id].get("kind") != "speak" or run_mode != FULL_DUPLEX:
            warnings.append(
                f"{where}: live-probe metadata is read only on speak cells of a "
                "full-duplex run; ignored"
            )
            continue
        if "live_probe" in metadata and not isinstance(live, dict):
            warnings.append(f"{where}: metadata.live_probe is not an object; ignored")
            continue
        live = live or {}
        if "predicted_action" in live and not isinstance(live["predicted_action"], str):
            warnings.append(
                f"{where}: live_probe.predicted_action is not a string; the row's action is used"
            )
        calls = live.get("tool_calls")
        if "tool_calls" in live and not isinstance(calls, list):
            warnings.append(
                f"{where}: live_probe.tool_calls is not a list; the row's calls are used"
            )
        elif isinstance(calls, list) and any(not isinstance(call, dict) for call in calls):
            warnings.append(
                f"{where}: live_probe.tool_calls items that are not objects are ignored"
            )
    return warnings
