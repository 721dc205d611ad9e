"""The offline judge: a deterministic keyword heuristic that answers in the judge's JSON format.
It is NOT a language model and says so in every rationale; the demo uses it so that a board can
be scored without a network. Pure, standard library only.

For each rubric atom, the criterion's content words are compared with the prediction's answer
text and tool calls (words are lower-cased ASCII runs compared on their first five letters, so
"keeps" meets "keep"; Mandarin is compared character by character). A criterion phrased as a
prohibition ("must not", "never", 不得, 不要, ...) passes unless at least half of its content
words appear; any other criterion passes when at least half of them appear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

LABEL = "offline heuristic (keyword overlap, not an LLM)"
THRESHOLD = 0.5
_PROHIBITION = re.compile(
    r"\b(must not|should not|does not|do not|never|avoid|without)\b|不得|不要|不能|不应|避免|禁止",
    re.IGNORECASE,
)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "answer",
        "assistant",
        "response",
        "reply",
        "and",
        "or",
        "of",
        "to",
        "for",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "that",
        "this",
        "it",
        "its",
        "is",
        "are",
        "be",
        "was",
        "were",
        "must",
        "should",
        "not",
        "does",
        "do",
        "never",
        "avoid",
        "without",
        "only",
        "can",
        "could",
        "may",
        "will",
        "would",
        "any",
        "all",
        "each",
        "either",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "how",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "you",
        "your",
        "we",
        "our",
        "i",
        "me",
        "my",
        "reveal",
        "mention",
        "say",
        "state",
        "explicitly",
        "prediction",
        "criterion",
    ]
)
_STOPCHARS = frozenset("回答的了把给被和与或在是不得要能应该请只有可以这那个一也都就吗呢吧")


def _content_units(text: str) -> list[str]:
    """Lower-cased ASCII words cut to five letters (stop words dropped), and each other
    alphanumeric character alone (stop characters dropped)."""
    units = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        lowered = word.lower()
        if lowered not in _STOPWORDS:
            units.append(lowered[:5])
    for char in text:
        if not char.isascii() and char.isalnum() and char not in _STOPCHARS:
            units.append(char)
    return units


def _evidence(prediction: Mapping) -> set[str]:
    calls = json.dumps(prediction.get("tool_calls") or [], ensure_ascii=False)
    return set(_content_units(f"{prediction.get('answer_text') or ''} {calls}"))


def atom_decision(criterion: str, evidence: set[str]) -> tuple[bool, str]:
    words = _content_units(_PROHIBITION.sub(" ", criterion))
    if not words:
        return True, f"{LABEL}: the criterion has no content words"
    found = sum(1 for word in words if word in evidence)
    share = found / len(words)
    if _PROHIBITION.search(criterion):
        passed = share < THRESHOLD
        return passed, f"{LABEL}: prohibition; {found}/{len(words)} of its words appear"
    passed = share >= THRESHOLD
    return passed, f"{LABEL}: {found}/{len(words)} of the criterion's words appear"


def offline_output(rubric: Mapping, prediction: Mapping) -> str:
    """The raw answer (a JSON object string) for one rubric row and one prediction
    (``Prediction.to_json()`` form), one decision per atom in order."""
    evidence = _evidence(prediction)
    results = []
    for atom in rubric.get("atomic_criteria") or []:
        passed, why = atom_decision(str(atom.get("criterion", "")), evidence)
        results.append({"passed": passed, "rationale": why})
    return json.dumps({"rationale": LABEL, "atomic_results": results}, ensure_ascii=False)
