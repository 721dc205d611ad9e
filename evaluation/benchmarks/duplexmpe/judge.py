"""The two Duplex-MPE judges (SPEC §7): answer correctness for a present T response, and
acknowledgement vs intrusion for speech in an N1-N3 window. The paper's prompts are not public;
ours live in prompts/*.txt, versioned by their SHA-256, and follow the §7 output contract.

Outcomes are the strings metrics.py counts:
answer: correct | incorrect | unparseable | missing | empty_transcript
ack: acknowledgement | intrusion | unparseable | missing | empty_transcript
An empty transcript is decided without a call (SPEC §6.3, §6.4, §8 rows 9-10).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from .metrics import ACK, ANSWER, ScoringError

PROMPTS = Path(__file__).resolve().parent / "prompts"
KINDS = (ANSWER, ACK)
ACK_LABELS = {"acknowledgement": "acknowledgement", "acknowledgment": "acknowledgement",
              "intrusion": "intrusion"}  # fmt: skip
UNPARSEABLE, MISSING, EMPTY = "unparseable", "missing", "empty_transcript"
_FIELDS = {ANSWER: ("request", "gold_answer", "transcript"), ACK: ("transcript",)}
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)


@cache
def template(kind: str) -> str:
    return (PROMPTS / f"{kind}.txt").read_text(encoding="utf-8")


def template_version(kind: str) -> str:
    """First 12 hex digits of the template's SHA-256: changes whenever the wording does."""
    return hashlib.sha256(template(kind).encode()).hexdigest()[:12]


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace {name} for the known names in one pass: braces inside a transcript or the JSON
    example of the template are left alone and never re-expanded."""
    names = "|".join(map(re.escape, values))
    return re.sub(r"\{(" + names + r")\}", lambda m: str(values[m.group(1)]), text)


def request(kind: str, *, transcript: str, request_text: str = "", gold_answer: str = "") -> dict:
    """The judge call for one item, or its fixed outcome when the transcript is empty:
    {"kind", "system": None, "user": str} or {"kind", "fixed_outcome": "empty_transcript"}."""
    if kind not in KINDS:
        raise ValueError(f"unknown judge kind {kind!r}")
    if not (transcript or "").strip():
        return {"kind": kind, "fixed_outcome": EMPTY}
    values = {"request": request_text, "gold_answer": gold_answer, "transcript": transcript.strip()}
    user = fill(template(kind), {k: values[k] for k in _FIELDS[kind]})
    return {"kind": kind, "system": None, "user": user, "template_version": template_version(kind)}


def _candidates(raw: str) -> list[str]:
    """Stripped text, the first fenced block, then the first '{' to the last '}'."""
    out = [raw.strip()]
    fence = _FENCE.search(raw)
    if fence:
        out.append(fence.group(1).strip())
    first, last = raw.find("{"), raw.rfind("}")
    if 0 <= first < last:
        out.append(raw[first : last + 1])
    return out


def parse(kind: str, raw: str | None) -> dict | None:
    """The structured verdict, or None when the output is unparseable. Answer: a JSON boolean
    ``correct`` (not "true", not 1). Ack: ``label`` acknowledgement / acknowledgment /
    intrusion in any case, normalised to the British spelling."""
    if raw is None:
        return None
    for candidate in _candidates(raw):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
        if kind == ANSWER and isinstance(data.get("correct"), bool):
            return {"correct": data["correct"], "reason": reason}
        if kind == ACK and isinstance(data.get("label"), str):
            label = ACK_LABELS.get(data["label"].strip().lower())
            if label:
                return {"label": label, "reason": reason}
    return None


def outcome(kind: str, *, transcript: str | None, attempts: Sequence[str | None]) -> str:
    """One item's outcome from its transcript and the raw outputs of its attempts, oldest
    first: the first parseable attempt decides; none parseable is ``unparseable`` if any call
    answered, ``missing`` if none did (or there was no attempt)."""
    if transcript is not None and not transcript.strip():
        return EMPTY
    for raw in attempts:
        verdict = parse(kind, raw)
        if verdict is not None:
            if kind == ANSWER:
                return "correct" if verdict["correct"] else "incorrect"
            return verdict["label"]
    return UNPARSEABLE if any(raw is not None for raw in attempts) else MISSING


def verdicts_from_judgments(records: Iterable[Mapping]) -> dict[tuple[str, str, int, str], str]:
    """SPEC §3 judgments JSONL records -> outcomes by (scenario, condition, turn, kind); a
    repeated judgment is rejected (SPEC §8 row 20)."""
    verdicts: dict[tuple[str, str, int, str], str] = {}
    for record in records:
        key = (record["scenario_id"], record["condition"], int(record["turn_index"]),
               record["kind"])  # fmt: skip
        if key[3] not in KINDS:
            raise ScoringError(f"judgment {key}: kind must be answer or ack")
        if key in verdicts:
            raise ScoringError(f"duplicate judgment for {key[0]} ({key[1]}) turn {key[2]} {key[3]}")
        verdicts[key] = outcome(key[3], transcript=record.get("transcript"),
                                attempts=[record.get("raw")])  # fmt: skip
    return verdicts
