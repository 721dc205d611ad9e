"""Reading an MSI-Bench release directory (SPEC §1) into scored cells (§2). Pure.

Layout::

    data/<lang>/<pattern>/<scene>/<case_id>/case.json, lines/NN.wav
    index/cases.jsonl  index/rubrics.jsonl  probes/speak_probe.jsonl  probes/hear_probe.jsonl

The harness adapter (``tools/build_suite_from_release.py``) reads only the index and probe files;
it aborts on a case id that does not match ``msi-\\w+-(\\w+)-``, an unknown pattern, a duplicate
rubric id inside one (language, pattern) entry, a hear probe whose line is not the end of its
prefix, or a case without a speak probe. Those are errors here too, with every other record the
harness would crash on or could not score; each problem names the file, line and case. Things
the harness silently tolerates (a rubric or probe row for an unknown case, a repeated probe row,
a rubric id a case refers to that its entry lacks) are warnings.

Every case yields three cells: the base case ``<case_id>`` (judged, validator), the hear-time
probe ``<case_id>h`` when the release has one (PRR) and the speak-time probe ``<case_id>s`` (BIR).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .jsontext import JsonTextError, decode_utf8, iter_jsonl_lines, loads_strict
from .validator import check_spec, required_call_count

CASES_FILE = "index/cases.jsonl"
RUBRICS_FILE = "index/rubrics.jsonl"
SPEAK_FILE = "probes/speak_probe.jsonl"
HEAR_FILE = "probes/hear_probe.jsonl"

# The harness's case-id rule (paper_table_rows.py:CASE_ID_RE, used with re.match).
CASE_ID_RE = re.compile(r"msi-\w+-(\w+)-")
# Hear probes that count in PRR (paper_table_rows.py:collect).
PRR_CELL_RE = re.compile(r"msi-\w+-(disc|retr)-")

PATTERN_CODES = ("auth", "disc", "prior", "seq", "scope", "retr")
PATTERN_LABELS = {
    "auth": "Auth",
    "disc": "Discl",
    "prior": "Prior",
    "seq": "Seq",
    "scope": "Scope",
    "retr": "Retr",
}
# Paper pattern name -> (case-id code, internal id shown to the judge).
PATTERNS = {
    "speaker_authority_constraint": ("auth", "authority_gated_override"),
    "selective_disclosure": ("disc", "disclosure_clause_in_instruction"),
    "constraint_prioritization": ("prior", "hard_vs_soft_constraint"),
    "sequential_constraint_integration": ("seq", "constraint_attribution_under_interleaving"),
    "scope_tracking": ("scope", "distributed_parameters"),
    "background_speech_retrieval": ("retr", "eavesdropping"),
}

BASE, HEAR, SPEAK = "base", "hear", "speak"
HEAR_SUFFIX, SPEAK_SUFFIX = "h", "s"


@dataclass(frozen=True)
class ReleaseProblem:
    file: str
    message: str
    line: int | None = None
    case_id: str | None = None

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line is not None else "")
        if self.case_id:
            where += f" ({self.case_id})"
        return f"{where}: {self.message}"


class ReleaseError(ValueError):
    """The release cannot be scored; ``problems`` lists every reason found."""

    def __init__(self, problems: list[ReleaseProblem]):
        self.problems = problems
        shown = "\n".join(str(problem) for problem in problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s) in the release:\n{shown}{more}")


@dataclass(frozen=True)
class Task:
    task_id: str
    spec: dict


@dataclass
class Release:
    root: Path
    tasks: list[Task]
    # rubric id -> rubric row, built entry by entry in sorted "<language>_<pattern>" order with
    # later rows overwriting: the map the harness's table script counts unjudged atoms from (§7.2).
    rubric_map: dict[str, dict]
    warnings: list[str] = field(default_factory=list)

    @property
    def languages(self) -> list[str]:
        return sorted({task.spec["language"] for task in self.tasks})

    def specs(self) -> dict[str, dict]:
        return {task.task_id: task.spec for task in self.tasks}


# --- speak-probe stimulus (§7.8; shown in the drill-down, never scored) ---------------------------


def speak_truncate_fraction(source_cell_id: str) -> float:
    """The fraction of the gold answer the turn-based barge-in stimulus keeps."""
    digest = hashlib.md5(f"speak_truncate:{source_cell_id}".encode()).hexdigest()
    return 0.1 + 0.4 * int(digest[:8], 16) / 0x100000000


def barge_in_prefix(answer: str, fraction: float) -> str:
    """The assistant's cut-off utterance: whole words when the answer has at least six (Python's
    banker's ``round``), characters otherwise, then " <STOPPED>"."""
    text = answer.strip()
    words = text.split()
    if len(words) >= 6:
        keep = min(max(round(len(words) * fraction), 3), len(words) - 1)
        return " ".join(words[:keep]) + " <STOPPED>"
    keep = min(max(round(len(text) * fraction), 4), len(text) - 1)
    return text[:keep].rstrip() + " <STOPPED>"


# --- reading ----------------------------------------------------------------------------------


class _Collector:
    def __init__(self) -> None:
        self.problems: list[ReleaseProblem] = []
        self.warnings: list[str] = []

    def error(self, file: str, message: str, *, line: int | None = None, case_id=None) -> None:
        self.problems.append(ReleaseProblem(file, message, line, _text_or_none(case_id)))

    def warn(self, file: str, message: str, *, line: int | None = None, case_id=None) -> None:
        self.warnings.append(str(ReleaseProblem(file, message, line, _text_or_none(case_id))))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _read_rows(root: Path, name: str, out: _Collector) -> list[tuple[int, dict]]:
    path = root / name
    if not path.is_file():
        out.error(name, "file is missing")
        return []
    try:
        text = decode_utf8(path.read_bytes())
    except JsonTextError as exc:
        out.error(name, str(exc))
        return []
    rows = []
    for number, line in iter_jsonl_lines(text):
        try:
            row = loads_strict(line)
        except JsonTextError as exc:
            out.error(name, str(exc), line=number)
            continue
        if not isinstance(row, dict):
            out.error(name, "a line must hold a JSON object", line=number)
            continue
        rows.append((number, row))
    return rows


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


@dataclass
class _Case:
    line: int
    row: dict
    case_id: str
    code: str
    case_dir: str
    turns: list[dict]
    tool_validation: dict | None
    refs: list[str]


def _check_case(
    root: Path, number: int, row: dict, out: _Collector, *, check_audio: bool
) -> _Case | None:
    """One cases.jsonl row; None when it cannot be scored (the reasons are recorded)."""
    before = len(out.problems)
    case_id = row.get("case_id")

    def err(message: str) -> None:
        out.error(CASES_FILE, message, line=number, case_id=case_id)

    code = ""
    if not isinstance(case_id, str):
        err("case_id must be a string")
    else:
        match = CASE_ID_RE.match(case_id)
        if match is None:
            err("case_id does not match msi-<language>-<pattern>-... (re.match msi-\\w+-(\\w+)-)")
        else:
            code = match.group(1)
            if code not in PATTERN_CODES:
                err(f"case_id pattern code {code!r} is none of {', '.join(PATTERN_CODES)}")
    for key in ("language", "scene"):
        if not _nonempty_str(row.get(key)):
            err(f"{key} must be a non-empty string")
    pattern = row.get("pattern")
    if pattern not in PATTERNS:
        err(f"pattern {pattern!r} is none of the six paper patterns ({', '.join(PATTERNS)})")
    elif code in PATTERN_CODES and PATTERNS[pattern][0] != code:
        err(f"case_id code {code!r} does not belong to pattern {pattern!r}")
    case_dir = row.get("path")
    if not _nonempty_str(case_dir):
        err("path (the case directory, relative to the release) must be a non-empty string")
        case_dir = ""
    elif not (root / case_dir).is_dir():
        err(f"case directory {case_dir} does not exist")
    else:
        _check_case_json(root, case_dir, case_id, err)

    expected_dir = f"data/{row.get('language')}/{pattern}/{row.get('scene')}/{case_id}"
    if case_dir and case_dir.rstrip("/") != expected_dir:
        out.warn(CASES_FILE, f"path {case_dir} is not {expected_dir}", line=number, case_id=case_id)
    turns = _check_turns(root, case_dir, row.get("turns"), err, out, number, case_id, check_audio)

    ev = row.get("eval")
    tool_validation, refs = None, []
    if not isinstance(ev, dict):
        err("eval must be an object")
    else:
        if not _nonempty_str(ev.get("expected_action")):
            err("eval.expected_action must be a non-empty string")
        tool_validation, spec_problems = check_spec(
            ev.get("tool_validation"), where="eval.tool_validation"
        )
        for problem in spec_problems:
            err(problem)
        refs = _rubric_refs(ev, err)
        answer = ev.get("standard_answer")
        if answer is not None and not isinstance(answer, str):
            err("eval.standard_answer must be a string or null")
    if len(out.problems) > before:
        return None
    return _Case(number, row, case_id, code, case_dir, turns, tool_validation, refs)


def _check_case_json(root: Path, case_dir: str, case_id: Any, err) -> None:
    path = root / case_dir / "case.json"
    if not path.is_file():
        err(f"{case_dir}/case.json is missing")
        return
    try:
        data = loads_strict(decode_utf8(path.read_bytes()))
    except JsonTextError as exc:
        err(f"{case_dir}/case.json: {exc}")
        return
    if not isinstance(data, dict) or data.get("case_id") != case_id:
        err(f"{case_dir}/case.json does not describe case {case_id!r}")


def _check_turns(root, case_dir, turns, err, out, number, case_id, check_audio) -> list[dict]:
    if not isinstance(turns, list) or not turns:
        err("turns must be a non-empty list")
        return []
    checked = []
    for index, turn in enumerate(turns, start=1):
        where = f"turns[{index - 1}]"
        if not isinstance(turn, dict):
            err(f"{where} must be an object")
            continue
        role = turn.get("role")
        if not _nonempty_str(role):
            err(f"{where}.role must be a non-empty string")
            continue
        assistant = role == "assistant"
        speaker = turn.get("speaker")
        if not assistant and not isinstance(speaker, str):
            err(f"{where}.speaker must be a string")
        if "addressed_to" not in turn:
            err(f"{where}.addressed_to is required (a string, a list or null)")
        if not isinstance(turn.get("text"), str):
            err(f"{where}.text must be a string")
        audio = turn.get("audio")
        audio_path = None
        if assistant:
            if audio:
                out.warn(
                    CASES_FILE,
                    f"{where}: an assistant turn carries audio; the harness then shifts the "
                    "speak-probe stimulus audio by one line",
                    line=number,
                    case_id=case_id,
                )
        elif not _nonempty_str(audio):
            # The speak-probe builder binds one clip to every human line (turnbased fields).
            err(f"{where}.audio must name the line's clip (lines/NN.wav)")
        if _nonempty_str(audio) and case_dir:
            audio_path = str(PurePosixPath(case_dir) / audio)
            if check_audio and not (root / audio_path).is_file():
                err(f"{where}.audio {audio_path} does not exist")
        checked.append(
            {
                "line": index,
                "role": role,
                "speaker": speaker if isinstance(speaker, str) else None,
                "addressed_to": turn.get("addressed_to"),
                "text": turn.get("text"),
                "audio": audio_path,
            }
        )
    return checked


def _rubric_refs(ev: dict, err) -> list[str]:
    """eval.rubric_ids then eval.answer_judge_inputs[].rubric_id (scoring/smoke.py rules)."""
    refs: list[str] = []
    ids = ev.get("rubric_ids")
    if ids is not None:
        if not isinstance(ids, list) or not all(_nonempty_str(item) for item in ids):
            err("eval.rubric_ids must be a list of non-empty strings or null")
        else:
            refs += ids
    inputs = ev.get("answer_judge_inputs")
    if inputs is not None:
        if not isinstance(inputs, list) or not all(isinstance(item, dict) for item in inputs):
            err("eval.answer_judge_inputs must be a list of objects or null")
        else:
            for index, item in enumerate(inputs):
                rid = item.get("rubric_id")
                if rid is None:
                    continue
                if not _nonempty_str(rid):
                    err(f"eval.answer_judge_inputs[{index}].rubric_id must be a non-empty string")
                else:
                    refs.append(rid)
    return refs


def _check_rubric(number: int, row: dict, out: _Collector) -> bool:
    before = len(out.problems)
    case_id = row.get("case_id")
    rubric_id = row.get("rubric_id")

    def err(message: str) -> None:
        label = f"rubric {rubric_id!r}: " if _nonempty_str(rubric_id) else ""
        out.error(RUBRICS_FILE, label + message, line=number, case_id=case_id)

    if not _nonempty_str(case_id):
        err("case_id must be a non-empty string")
    if not _nonempty_str(rubric_id):
        err("rubric_id must be a non-empty string")
    atoms = row.get("atomic_criteria", [])
    if not isinstance(atoms, list):
        err("atomic_criteria must be a list")
        atoms = []
    for index, atom in enumerate(atoms):
        where = f"atomic_criteria[{index}]"
        if not isinstance(atom, dict):
            err(f"{where} must be an object")
            continue
        if not _nonempty_str(atom.get("criterion")):
            err(f"{where}.criterion must be a non-empty string")
        if "dimension" in atom and not _nonempty_str(atom["dimension"]):
            err(f"{where}.dimension must be a non-empty string when present")
        raw_index = atom.get("criterion_index", index)
        if not isinstance(raw_index, int) or raw_index < 0:
            err(f"{where}.criterion_index must be a non-negative integer")
    return len(out.problems) == before


def _check_hear(number, row, case: _Case, out: _Collector) -> dict | None:
    def err(message: str) -> None:
        out.error(HEAR_FILE, message, line=number, case_id=case.case_id)

    n_lines = row.get("n_lines")
    probe_line = row.get("probe_line")
    if isinstance(n_lines, bool) or not isinstance(n_lines, int):
        err("n_lines must be an integer")
        return None
    if not 1 <= n_lines <= len(case.turns):
        err(f"n_lines {n_lines} is outside 1..{len(case.turns)} (the case's lines)")
        return None
    if (
        not isinstance(probe_line, dict)
        or not isinstance(probe_line.get("speaker"), str)
        or not isinstance(probe_line.get("text"), str)
    ):
        err("probe_line must be an object with string speaker and text")
        return None
    last = case.turns[n_lines - 1]
    visible_speaker = "assistant" if last["role"] == "assistant" else last["speaker"]
    if (visible_speaker, last["text"]) != (probe_line["speaker"], probe_line["text"]):
        err(
            f"probe_line is not line {n_lines} of the case (the end of the first n_lines "
            f"visible lines is {visible_speaker!r}: {last['text']!r})"
        )
        return None
    return {
        "n_lines": n_lines,
        "probe_line": {"speaker": probe_line["speaker"], "text": probe_line["text"]},
    }


def _check_speak(root, number, row, case_id, out: _Collector, *, check_audio: bool) -> bool:
    before = len(out.problems)

    def err(message: str) -> None:
        out.error(SPEAK_FILE, message, line=number, case_id=case_id)

    for key in ("source_cell_id", "expansion_type", "audio"):
        if not _nonempty_str(row.get(key)):
            err(f"{key} must be a non-empty string")
    for key in ("live_event", "anchor", "expected_live_behavior"):
        if not isinstance(row.get(key), dict):
            err(f"{key} must be an object")
    audio = row.get("audio")
    if check_audio and _nonempty_str(audio) and not (root / audio).is_file():
        err(f"audio {audio} does not exist")
    return len(out.problems) == before


def _probe_rows(rows, file: str, cases: dict, listed: set, out: _Collector) -> dict[str, tuple]:
    """case id -> (line, row); the last row of a case wins, as in the harness's dict."""
    by_case: dict[str, tuple[int, dict]] = {}
    for number, row in rows:
        case_id = row.get("case_id")
        if not _nonempty_str(case_id):
            out.error(file, "case_id must be a non-empty string", line=number)
            continue
        if case_id not in cases:
            if case_id not in listed:
                out.warn(
                    file, "no such case in index/cases.jsonl; ignored", line=number, case_id=case_id
                )
            continue
        if case_id in by_case:
            out.warn(
                file,
                f"repeats the row of line {by_case[case_id][0]}; the later row is used",
                line=number,
                case_id=case_id,
            )
        by_case[case_id] = (number, row)
    return by_case


def _atom_count(rubric: dict) -> int:
    return len(rubric.get("atomic_criteria") or [])


def read_release(directory: Path, *, check_audio: bool = True) -> Release:
    """The release's scored cells; raises ReleaseError listing every problem."""
    root = Path(directory)
    out = _Collector()
    case_rows = _read_rows(root, CASES_FILE, out)
    rubric_rows = _read_rows(root, RUBRICS_FILE, out)
    speak_rows = _read_rows(root, SPEAK_FILE, out)
    hear_rows = _read_rows(root, HEAR_FILE, out)

    cases: dict[str, _Case] = {}
    listed = {row["case_id"] for _, row in case_rows if isinstance(row.get("case_id"), str)}
    for number, row in case_rows:
        case = _check_case(root, number, row, out, check_audio=check_audio)
        if case is None:
            continue
        if case.case_id in cases:
            out.error(
                CASES_FILE,
                f"case_id repeats line {cases[case.case_id].line}",
                line=number,
                case_id=case.case_id,
            )
            continue
        cases[case.case_id] = case

    rubrics_by_case: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    for number, row in rubric_rows:
        if not _check_rubric(number, row, out):
            continue
        if row["case_id"] not in cases:
            if row["case_id"] not in listed:
                out.warn(
                    RUBRICS_FILE,
                    "no such case; the row is in no entry",
                    line=number,
                    case_id=row["case_id"],
                )
            continue
        rubrics_by_case[row["case_id"]].append((number, row))

    # Entries: one per (language, pattern), in sorted name order, rubric rows in case order.
    entries: dict[str, list[_Case]] = defaultdict(list)
    for case in cases.values():
        entries[f"{case.row['language']}_{case.row['pattern']}"].append(case)
    entry_rubrics: dict[str, dict[str, dict]] = {}
    rubric_map: dict[str, dict] = {}
    for entry in sorted(entries):
        by_id: dict[str, tuple[int, dict]] = {}
        for case in entries[entry]:
            for number, row in rubrics_by_case[case.case_id]:
                rid = row["rubric_id"]
                if rid in by_id:
                    out.error(
                        RUBRICS_FILE,
                        f"rubric_id {rid!r} repeats line {by_id[rid][0]} inside entry {entry} "
                        "(ids must be unique per language and pattern)",
                        line=number,
                        case_id=case.case_id,
                    )
                    continue
                by_id[rid] = (number, row)
        entry_rubrics[entry] = {rid: row for rid, (_, row) in by_id.items()}
        for rid, (_, row) in by_id.items():
            rubric_map[rid] = row

    speak = _probe_rows(speak_rows, SPEAK_FILE, cases, listed, out)
    hear = _probe_rows(hear_rows, HEAR_FILE, cases, listed, out)

    tasks: list[Task] = []
    for case in cases.values():
        entry = f"{case.row['language']}_{case.row['pattern']}"
        base = _base_spec(case, entry, entry_rubrics[entry], rubric_map, out)
        tasks.append(Task(case.case_id, base))
        if case.case_id in hear:
            number, row = hear[case.case_id]
            checked = _check_hear(number, row, case, out)
            if checked is not None:
                tasks.append(Task(case.case_id + HEAR_SUFFIX, _hear_spec(base, checked)))
        if case.case_id not in speak:
            out.error(SPEAK_FILE, "the case has no speak probe row", case_id=case.case_id)
            continue
        number, row = speak[case.case_id]
        if _check_speak(root, number, row, case.case_id, out, check_audio=check_audio):
            tasks.append(Task(case.case_id + SPEAK_SUFFIX, _speak_spec(base, row)))

    if out.problems:
        raise ReleaseError(out.problems)
    return Release(root=root, tasks=tasks, rubric_map=rubric_map, warnings=out.warnings)


def _common(case: _Case) -> dict:
    row = case.row
    pattern = row["pattern"]
    return {
        "case_id": case.case_id,
        "language": row["language"],
        "pattern": pattern,
        "pattern_code": case.code,
        "pattern_label": PATTERN_LABELS[case.code],
        "logic_pattern": PATTERNS[pattern][1],
        "scene": row["scene"],
        "path": case.case_dir,
    }


def _base_spec(case: _Case, entry: str, entry_rubrics: dict, rubric_map: dict, out) -> dict:
    ev = case.row["eval"]
    refs = sorted(set(case.refs))
    found = [rid for rid in refs if rid in entry_rubrics]
    missing = [rid for rid in refs if rid not in entry_rubrics]
    for rid in missing:
        out.warn(
            CASES_FILE,
            f"rubric {rid!r} is not in entry {entry}; the harness judges the case without it",
            line=case.line,
            case_id=case.case_id,
        )
    rubric_ids = ev.get("rubric_ids")
    calls = required_call_count(case.tool_validation)
    # §7.2: an unjudged case fails with the atoms of eval.rubric_ids (duplicates counted, from the
    # release-wide map, ignored dimensions included) plus one when calls are required.
    fallback = sum(_atom_count(rubric_map[rid]) for rid in rubric_ids or [] if rid in rubric_map)
    fallback += int(calls > 0)
    spec = {
        "kind": BASE,
        "cell_id": case.case_id,
        **_common(case),
        "entry": entry,
        "turns": case.turns,
        "expected_action": ev["expected_action"],
        "standard_answer": ev.get("standard_answer"),
        "tool_validation": case.tool_validation,
        "required_call_count": calls,
        "rubric_ids": list(rubric_ids) if isinstance(rubric_ids, list) else None,
        "answer_judge_input_ids": [
            item["rubric_id"]
            for item in ev.get("answer_judge_inputs") or []
            if item.get("rubric_id") is not None
        ],
        "judge_rubric_ids": found,
        "missing_rubric_ids": missing,
        "rubrics": {rid: _rubric_copy(entry_rubrics[rid]) for rid in found},
        "fallback_atoms": fallback,
    }
    for key in ("participants", "scene_context"):
        if key in case.row:
            spec[key] = case.row[key]
    return spec


def _rubric_copy(row: dict) -> dict:
    return {key: value for key, value in row.items() if key != "case_id"}


def _probe_base(base: dict, kind: str, suffix: str) -> dict:
    keep = (
        "case_id",
        "language",
        "pattern",
        "pattern_code",
        "pattern_label",
        "logic_pattern",
        "scene",
        "path",
        "entry",
    )
    return {"kind": kind, "cell_id": base["case_id"] + suffix, **{k: base[k] for k in keep}}


def _hear_spec(base: dict, checked: dict) -> dict:
    spec = _probe_base(base, HEAR, HEAR_SUFFIX)
    spec.update(checked)
    spec["turns"] = base["turns"][: checked["n_lines"]]
    spec["counts_in_prr"] = PRR_CELL_RE.match(spec["cell_id"]) is not None
    return spec


def _speak_spec(base: dict, row: dict) -> dict:
    spec = _probe_base(base, SPEAK, SPEAK_SUFFIX)
    fraction = speak_truncate_fraction(row["source_cell_id"])
    answer = base.get("standard_answer")
    spec.update(
        {
            "turns": base["turns"],
            "source_cell_id": row["source_cell_id"],
            "live_event": row["live_event"],
            "anchor": row["anchor"],
            "expansion_type": row["expansion_type"],
            "expected_live_behavior": row["expected_live_behavior"],
            "audio": row["audio"],
            "truncate_fraction": fraction,
            "barge_in_prefix": barge_in_prefix(answer, fraction)
            if isinstance(answer, str) and answer.strip()
            else None,
            # Release rows never carry gold calls (logic_expected_tool_calls), so BIR's tool test
            # compares against none; a release that adds them would feed them here (§10).
            "gold_tool_calls": [],
        }
    )
    return spec
