"""Offline judge for demos and tests: a deterministic word-overlap heuristic, NOT an LLM.

It reads the reply and one rubric item and answers in the judge's own JSON format, so the rest of
the pipeline (parsing, attempts, aggregation) runs unchanged without network access. Its verdicts
are crude and its explanations say so; they must never be presented as the benchmark's judge.

Rule. The item's key words are its words of three letters or more, less stop words and the verbs
rubrics are written with ("mentions", "states", ...); phrases in quotes must appear verbatim.
A positive item is met when every quoted phrase and at least half of the key words appear in the
reply. A negative item ("does not", "avoids", "excludes", ...) is met when no quoted phrase and
fewer than half of the key words appear. Words are compared lower-cased with a plural "s" removed.
"""

from __future__ import annotations

import json
import re

LABEL = "Offline heuristic (word overlap), not an LLM judgment"

_STOP_WORDS = (
    "the and for with that this from into onto than then them they their there these those "
    "any all each every some its it's are was were been being has have had will would can could "
    "should must shall may might not but yet also about over under after before when while what "
    "which who whom whose where why how you your yours our ours his her hers him she he one two "
    "more most less least very just only such other same own both either neither"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
_RUBRIC_VERBS = (
    "response respond responds reply replies answer answers model assistant user user's mention "
    "mentions mentioned state states stated say says said include includes including suggest "
    "suggests recommend recommends provide provides provided give gives use uses used ask asks "
    "acknowledge acknowledges confirm confirms list lists correctly accurately explicitly "
    "clearly exactly word words phrase term terms does doesn't don't avoid avoids avoiding "
    "exclude excludes excluding never without refrain refrains omit omits"
)
RUBRIC_VERBS = frozenset(_RUBRIC_VERBS.split())
NEGATIONS = re.compile(
    r"\b(does not|doesn't|do not|don't|did not|avoids?|excludes?|never|without|refrains?|omits?|"
    r"no longer)\b",
    re.IGNORECASE,
)
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|'([^']{2,})'")
WORD = re.compile(r"[a-z0-9][a-z0-9']*")


def _normal(word: str) -> str:
    word = word.lower().removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def key_words(rubric_item: str) -> list[str]:
    words = []
    for word in WORD.findall(rubric_item.lower()):
        if len(word) >= 3 and word not in STOP_WORDS and word not in RUBRIC_VERBS:
            normal = _normal(word)
            if normal not in words:
                words.append(normal)
    return words


def offline_verdict(*, response: str, rubric_item: str) -> tuple[bool, str]:
    """(criteria met, explanation) for one rubric item; deterministic."""
    negative = bool(NEGATIONS.search(rubric_item))
    quoted = [next(g for g in m.groups() if g) for m in QUOTED.finditer(rubric_item)]
    reply_lower = response.lower()
    reply_words = {_normal(w) for w in WORD.findall(reply_lower)}
    keys = key_words(rubric_item)
    found = [w for w in keys if w in reply_words]
    phrases_found = [p for p in quoted if p.lower() in reply_lower]
    enough = 2 * len(found) >= len(keys) if keys else False
    if negative:
        met = not phrases_found and not enough
    else:
        met = len(phrases_found) == len(quoted) and (enough or (not keys and bool(quoted)))
    detail = f"{len(found)} of {len(keys)} key words of the rubric item appear in the reply"
    if found:
        detail += f" ({', '.join(found)})"
    if quoted:
        detail += f"; {len(phrases_found)} of {len(quoted)} quoted phrases appear"
    kind = "negative item, met when they are absent" if negative else "met when they are present"
    return met, f"{LABEL}: {detail}; {kind}."


def offline_raw_output(*, response: str, rubric_item: str) -> str:
    """The verdict as the judge is asked to answer: a JSON object in a fenced markdown block."""
    met, explanation = offline_verdict(response=response, rubric_item=rubric_item)
    body = json.dumps({"explanation": explanation, "criteria_met": met}, ensure_ascii=False)
    return f"```json\n{body}\n```"
