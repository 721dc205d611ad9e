"""The scenario manifest: what the scheduler plays in each run (SPEC §1). No data is public, so
the format is ours:

A directory holding ``manifest.jsonl`` (one run = one scenario under one condition per line) and
the clip files it names, paths relative to the directory:

    {"scenario_id": "s0001", "condition": "explicit", "pair_id": "s0001",
     "speakers": [{"id": "A", "voice": "ryan"}, {"id": "B", "voice": "aiden"}, ...],
     "gold_answer": "It closes at nine.",
     "preamble": {"text": "...", "clip": "clips/s0001__explicit/preamble.wav", "duration": 31.9},
     "turns": [{"index": 0, "speaker": "A", "label": "N2", "text": "...",
                "clip": "clips/s0001__explicit/00.wav", "duration": 2.345}, ...]}

``pair_id`` defaults to ``scenario_id``. Durations are in seconds (compared at 1 ms). Every
problem is reported with the line, the scenario and condition, and the turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import segments as seg
from .metrics import CONDITIONS, LABELS

MANIFEST_FILE = "manifest.jsonl"
SPEAKER_COUNTS = (3, 4)  # humans per scenario [P §3.2]


@dataclass(frozen=True)
class ManifestTurn:
    index: int
    speaker: str
    label: str
    text: str
    clip: str
    duration_ms: int


@dataclass(frozen=True)
class Scenario:
    """One run's script: a scenario under one condition."""

    scenario_id: str
    condition: str
    pair_id: str
    speakers: dict[str, str]  # speaker id -> voice
    gold_answer: str
    preamble_text: str
    preamble_clip: str
    preamble_ms: int
    turns: tuple[ManifestTurn, ...]

    @property
    def key(self) -> tuple[str, str]:
        return self.scenario_id, self.condition

    @property
    def name(self) -> str:
        return f"scenario {self.scenario_id} ({self.condition})"

    def t_turn(self) -> ManifestTurn:
        return next(t for t in self.turns if t.label == "T")

    def as_dict(self) -> dict:
        """The task spec stored per run: every field of the manifest line, durations in s."""
        return {
            "scenario_id": self.scenario_id,
            "condition": self.condition,
            "pair_id": self.pair_id,
            "speakers": [{"id": k, "voice": v} for k, v in self.speakers.items()],
            "gold_answer": self.gold_answer,
            "preamble": {
                "text": self.preamble_text,
                "clip": self.preamble_clip,
                "duration": self.preamble_ms / 1000,
            },  # fmt: skip
            "turns": [
                {
                    "index": t.index,
                    "speaker": t.speaker,
                    "label": t.label,
                    "text": t.text,
                    "clip": t.clip,
                    "duration": t.duration_ms / 1000,
                }  # fmt: skip
                for t in self.turns
            ],
        }


class ManifestError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _text(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _duration(value) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    ms = seg.to_ms(value)
    return ms if ms > 0 else None


def label_problems(labels: list[str]) -> list[tuple[int | None, str]]:
    """SPEC §1/§3 label rules as (turn position or None, message)."""
    problems: list[tuple[int | None, str]] = []
    t_positions = [i for i, label in enumerate(labels) if label == "T"]
    if len(t_positions) != 1:
        problems.append((None, f"has {len(t_positions)} T turns, expected exactly 1"))
    for i in t_positions:
        if i == 0:
            problems.append((i, "T is the first turn"))
        if i == len(labels) - 1:
            problems.append((i, "T is the last turn"))
    for i, label in enumerate(labels):
        if label == "N4Q" and (i + 1 >= len(labels) or labels[i + 1] != "N4R"):
            problems.append((i, "N4Q is not immediately followed by N4R"))
        if label == "N4R" and (i == 0 or labels[i - 1] != "N4Q"):
            problems.append((i, "N4R does not immediately follow an N4Q"))
    return problems


def parse_scenario(data, *, where: str = "") -> tuple[Scenario | None, list[str]]:
    """One manifest line -> (scenario, problems). ``where`` prefixes every message (the line)."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        return None, [f"{prefix}not a JSON object"]
    sid, condition = data.get("scenario_id"), data.get("condition")
    name = f"scenario {sid} ({condition})"
    problems = []

    def problem(message: str, turn: int | None = None) -> None:
        problems.append(f"{prefix}{name}{f' turn {turn}' if turn is not None else ''}: {message}")

    if not _text(sid):
        problem("scenario_id must be a non-empty string")
    if condition not in CONDITIONS:
        problem(f"condition must be one of {', '.join(CONDITIONS)}")
    pair_id = data.get("pair_id", sid)
    if pair_id is not None and not _text(pair_id):
        problem("pair_id must be a non-empty string when given")
    if not _text(data.get("gold_answer")):
        problem("gold_answer must be a non-empty string")
    speakers: dict[str, str] = {}
    raw_speakers = data.get("speakers")
    if not isinstance(raw_speakers, list):
        problem("speakers must be a list of {id, voice}")
    else:
        for s in raw_speakers:
            if not (isinstance(s, Mapping) and _text(s.get("id")) and _text(s.get("voice"))):
                problem(f"speaker {s!r} needs a non-empty id and voice")
            elif s["id"] in speakers:
                problem(f"speaker {s['id']} is listed twice")
            else:
                speakers[s["id"]] = s["voice"]
        if len(speakers) not in SPEAKER_COUNTS:
            problem(f"has {len(speakers)} speakers, expected 3 or 4")
    preamble = data.get("preamble")
    preamble_ms = None
    if not isinstance(preamble, Mapping) or not _text(preamble.get("clip")):
        problem("preamble must be an object with text, clip and duration")
        preamble = {}
    else:
        preamble_ms = _duration(preamble.get("duration"))
        if preamble_ms is None:
            problem("preamble duration must be a positive number of seconds")
    turns: list[ManifestTurn] = []
    raw_turns = data.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        problem("turns must be a non-empty list")
        raw_turns = []
    for position, t in enumerate(raw_turns):
        if not isinstance(t, Mapping):
            problem("not a JSON object", position)
            continue
        if t.get("index") != position:
            problem(f"index is {t.get('index')!r}, expected {position} (turns in order)", position)
        if t.get("label") not in LABELS:
            problem(f"label {t.get('label')!r} is not one of {', '.join(LABELS)}", position)
        if speakers and t.get("speaker") not in speakers:
            problem(f"speaker {t.get('speaker')!r} is not in the speakers list", position)
        if not _text(t.get("text")):
            problem("text must be a non-empty string", position)
        if not _text(t.get("clip")):
            problem("clip must be a non-empty path", position)
        duration = _duration(t.get("duration"))
        if duration is None:
            problem("duration must be a positive number of seconds", position)
        turns.append(
            ManifestTurn(
                position,
                str(t.get("speaker")),
                str(t.get("label")),
                str(t.get("text")),
                str(t.get("clip")),
                duration or 0,
            )  # fmt: skip
        )
    for position, message in label_problems([t.label for t in turns]) if turns else []:
        problem(message, position)
    if problems:
        return None, problems
    return Scenario(sid, condition, pair_id or sid, speakers, data["gold_answer"],
                    str(preamble.get("text", "")), preamble["clip"], preamble_ms,
                    tuple(turns)), []  # fmt: skip


def parse_manifest(lines: Iterable[str], *, file: str = MANIFEST_FILE) -> list[Scenario]:
    """Every scenario of a manifest, or ManifestError listing every problem found."""
    scenarios, problems, seen = [], [], {}
    pair_conditions: dict[str, set[str]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{file} line {number}"
        try:
            data = json.loads(line)
        except ValueError as error:
            problems.append(f"{where}: not JSON ({error})")
            continue
        scenario, found = parse_scenario(data, where=where)
        problems += found
        if scenario is None:
            continue
        if scenario.key in seen:
            problems.append(f"{where}: {scenario.name} repeats line {seen[scenario.key]}")
            continue
        seen[scenario.key] = number
        conditions = pair_conditions.setdefault(scenario.pair_id, set())
        if scenario.condition in conditions:
            problems.append(f"{where}: pair {scenario.pair_id} has two {scenario.condition} runs")
        conditions.add(scenario.condition)
        scenarios.append(scenario)
    if problems:
        raise ManifestError(problems)
    return scenarios


def read_manifest(directory: Path) -> list[Scenario]:
    """The manifest of a benchmark source directory; clip files named must exist."""
    path = Path(directory) / MANIFEST_FILE
    with path.open(encoding="utf-8") as handle:
        scenarios = parse_manifest(handle)
    missing = [
        f"{s.name} {'preamble' if turn is None else f'turn {turn}'}: clip {clip} not found"
        for s in scenarios
        for turn, clip in [(None, s.preamble_clip), *((t.index, t.clip) for t in s.turns)]
        if not (Path(directory) / clip).is_file()
    ]
    if missing:
        raise ManifestError(missing)
    return scenarios


def write_manifest(directory: Path, scenarios: Iterable[Scenario]) -> Path:
    path = Path(directory) / MANIFEST_FILE
    with path.open("w", encoding="utf-8") as handle:
        for scenario in scenarios:
            handle.write(json.dumps(scenario.as_dict(), ensure_ascii=False) + "\n")
    return path
