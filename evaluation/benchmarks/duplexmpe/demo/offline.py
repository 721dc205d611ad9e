"""Offline stand-ins for the demo: no ASR service and no LLM.

- Transcripts: the synthetic systems record what they say and when (synthetic.py writes
  ``said/<run>.json``); the stand-in returns the utterances that overlap the requested spans.
  It only works for synthetic submissions and says so.
- Judge: a deterministic keyword heuristic, not an LLM. Answer: correct when every content
  word of the gold answer appears in the transcript. Acknowledgement: at most three words, all
  from a short list of backchannels ("mm-hm", "okay", "understood", ...); anything else is an
  intrusion. Its output follows the SPEC §7 JSON contract so it is parsed like any judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from ..metrics import ACK, ANSWER

NAME = "offline heuristic (not an LLM)"
BACKCHANNELS = {"mm", "hm", "mmhm", "mhm", "uh", "huh", "uhhuh", "okay", "ok", "right", "yes",
                "yeah", "sure", "understood", "got", "it", "i", "see", "alright"}  # fmt: skip
STOPWORDS = {"the", "a", "an", "in", "at", "of", "to", "is", "it", "on", "about", "and"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("-", ""))


def transcript_from_said(said_file: Path, spans_ms: Sequence[Sequence[int]]) -> str:
    """The words of the recorded utterances overlapping any span, in order."""
    said = json.loads(Path(said_file).read_text())
    texts = []
    for utterance in said:
        start, end = round(utterance["start"] * 1000), round(utterance["end"] * 1000)
        if any(start < b and end > a for a, b in spans_ms):
            texts.append(utterance["text"])
    return " ".join(texts)


def judge(kind: str, *, transcript: str, gold_answer: str = "") -> str:
    """The raw output of the offline judge for one item (a JSON object, SPEC §7 contract)."""
    words = _words(transcript)
    if kind == ANSWER:
        needed = [w for w in _words(gold_answer) if w not in STOPWORDS]
        missing = [w for w in needed if w not in words]
        return json.dumps({"correct": bool(needed) and not missing,
                           "reason": f"{NAME}: gold words missing: {missing}" if missing
                           else f"{NAME}: every gold content word is present"})  # fmt: skip
    if kind == ACK:
        brief = 0 < len(words) <= 3 and all(w in BACKCHANNELS for w in words)
        return json.dumps({"label": "acknowledgement" if brief else "intrusion",
                           "reason": f"{NAME}: {'only' if brief else 'not only'} a backchannel"})  # fmt: skip
    raise ValueError(f"unknown judge kind {kind!r}")
