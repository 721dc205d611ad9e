"""The rubric judge (SPEC §4): one call per (task, rubric item), parsing and the attempt rule.

The prompt is never part of the project: ``read_judge_prompt`` takes it from the file the operator
names at import and keeps the text between the BEGIN/END marker lines.

Attempts. A stored attempt is ``(attempt, raw)``; ``raw`` is the judge's completion text, or None
when the call failed for good (timeouts, 429, 5xx that outlasted the engine's backoff retries).
Only answered attempts (raw is a string) count toward the limit of three: the first answered
attempt that parses decides; three answered attempts without a parseable one make the item not
met (an unparseable outcome, SPEC §6 rows 6-8). A failed call is not an answer: the item is
``failed`` - flagged and retryable - rather than silently not met (the benchmark's issue, which
here refines SPEC §6 row 17 where a null raw would be just another unparseable attempt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from hashlib import sha256
from pathlib import Path

DEFAULT_MODEL = "o4-mini"  # the dataset card's judge, openai/o4-mini
JUDGE_KIND = "rubric_item"
MAX_ANSWERED_ATTEMPTS = 3

TEMPLATE_BEGIN = "-----BEGIN TEMPLATE-----"
TEMPLATE_END = "-----END TEMPLATE-----"
HISTORY_TOKEN = "«conversation_history»"
RUBRIC_TOKEN = "«rubric_item»"
_TOKENS = re.compile(re.escape(HISTORY_TOKEN) + "|" + re.escape(RUBRIC_TOKEN))

# Item states. met / not_met / unparseable are scored outcomes; pending (answered fewer than three
# times, none parseable, no failure) and failed (a call that failed for good) need another call.
MET, NOT_MET, UNPARSEABLE, PENDING, FAILED = "met", "not_met", "unparseable", "pending", "failed"


class PromptError(ValueError):
    pass


@dataclass(frozen=True)
class JudgePrompt:
    template: str
    sha256: str  # of the template text (UTF-8): the prompt's version
    source: str  # the file it was read from


@dataclass(frozen=True)
class JudgmentRequest:
    """What the engine sends: one user message, no system message (SPEC §4)."""

    kind: str
    slot: int  # rubric_index
    system: str | None
    user: str


def extract_template(text: str) -> str:
    """The text between the marker lines, marker lines and the final line break excluded."""
    # Lines end at "\n" only: str.splitlines would also break at U+2028 and other separators.
    lines = text.split("\n")
    begins = [i for i, line in enumerate(lines) if line.rstrip("\r") == TEMPLATE_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\r") == TEMPLATE_END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] <= begins[0] + 1:
        raise PromptError(
            f"the prompt file must hold one {TEMPLATE_BEGIN} line followed by one "
            f"{TEMPLATE_END} line with the template between them"
        )
    return "\n".join(lines[begins[0] + 1 : ends[0]]).removesuffix("\r")


def read_judge_prompt(path: Path) -> JudgePrompt:
    path = Path(path)
    try:
        # newline="" keeps the file's own line breaks byte for byte.
        with path.open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    except OSError as exc:
        raise PromptError(f"{path}: cannot read the judge prompt ({exc.strerror})") from None
    template = extract_template(text)
    for token in (HISTORY_TOKEN, RUBRIC_TOKEN):
        if token not in template:
            raise PromptError(f"{path}: the template has no {token} placeholder")
    digest = sha256(template.encode("utf-8")).hexdigest()
    return JudgePrompt(template=template, sha256=digest, source=str(path))


def build_grading_conversation_history(
    *, user_turns: Sequence[str], assistant_turns: Sequence[str], response: str
) -> str:
    """The dataset card's helper: turns 1..L stripped, empty ones left out, the reply verbatim.

    user_turns holds turns 1..L, assistant_turns turns 1..L-1; the reply is the assistant entry
    after turn L even when empty (SPEC §4, edge cases 2, 14, 15).
    """
    last = len(user_turns)
    entries = []
    for k in range(1, last + 1):
        user = (user_turns[k - 1] or "").strip()
        if user:
            entries.append(f"User: {user}")
        if k < last:
            assistant = (assistant_turns[k - 1] if k - 1 < len(assistant_turns) else "") or ""
            assistant = assistant.strip()
            if assistant:
                entries.append(f"Assistant: {assistant}")
        else:
            entries.append(f"Assistant: {response}")
    return "\n\n".join(entries)


def fill_template(template: str, *, conversation_history: str, rubric_item: str) -> str:
    """One pass over the template; substituted text is never scanned again (SPEC edge case 16)."""
    values = {HISTORY_TOKEN: conversation_history, RUBRIC_TOKEN: rubric_item}
    return _TOKENS.sub(lambda match: values[match.group(0)], template)


def judge_message(template: str, *, spec: dict, response: str, rubric_index: int) -> str:
    history = build_grading_conversation_history(
        user_turns=spec["user_turns"], assistant_turns=spec["assistant_turns"], response=response
    )
    return fill_template(
        template, conversation_history=history, rubric_item=spec["rubric"][rubric_index]
    )


def judgment_requests(template: str, *, spec: dict, response: str) -> list[JudgmentRequest]:
    """One request per rubric item, in rubric order; none is decided without a call."""
    return [
        JudgmentRequest(
            JUDGE_KIND,
            index,
            None,
            judge_message(template, spec=spec, response=response, rubric_index=index),
        )
        for index in range(len(spec["rubric"]))
    ]


def request_body(message: str, *, model: str = DEFAULT_MODEL) -> dict:
    """Chat-completions body: one user message; no temperature (o4-mini takes only its default)."""
    return {"model": model, "messages": [{"role": "user", "content": message}]}


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedJudgment:
    criteria_met: bool | None  # None: unparseable
    explanation: str
    candidate: str | None  # "text", "fenced" or "braces": which candidate decided

    @property
    def parsed(self) -> bool:
        return self.criteria_met is not None


UNPARSED = ParsedJudgment(None, "", None)


def candidates(raw: str) -> list[tuple[str, str]]:
    """SPEC §4 order: the stripped text, the first fenced block, first '{' to last '}'."""
    found = [("text", raw.strip())]
    opening = raw.find("```")
    if opening >= 0:
        closing = raw.find("```", opening + 3)
        if closing >= 0:
            block = raw[opening + 3 : closing]
            first_line, newline, rest = block.partition("\n")
            # An info string such as "json" on the opening fence line is not content.
            if newline and re.fullmatch(r"[\w+.-]*\s*", first_line):
                block = rest
            found.append(("fenced", block))
    first, last = raw.find("{"), raw.rfind("}")
    if 0 <= first < last:
        found.append(("braces", raw[first : last + 1]))
    return found


def parse_judgment(raw: str | None) -> ParsedJudgment:
    """The first candidate that decodes to an object with a JSON boolean criteria_met decides.

    "true", 1, null, Python True, a missing key: unparseable (SPEC §4, edge case 6).
    """
    if not isinstance(raw, str):
        return UNPARSED
    for name, text in candidates(raw):
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("criteria_met"), bool):
            explanation = data.get("explanation")
            return ParsedJudgment(
                data["criteria_met"], explanation if isinstance(explanation, str) else "", name
            )
    return UNPARSED


def _reject_constant(token: str):
    raise ValueError(f"{token} is not JSON")


# ---------------------------------------------------------------------------------------------
# Attempts
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    attempt: int
    raw: str | None  # None: the call failed for good


@dataclass(frozen=True)
class ItemOutcome:
    """One rubric item's result from its stored attempts.

    state: met, not_met, unparseable (three answers, none parseable: not met), pending (another
    call is due) or failed (a failed call, retryable). attempt: the deciding attempt, else the
    last one seen (None when there is none). answered: answered attempts counted (at most 3).
    """

    state: str
    criteria_met: bool | None
    explanation: str
    attempt: int | None
    parsed: bool
    answered: int

    @property
    def met(self) -> bool:
        return self.state == MET

    @property
    def scored(self) -> bool:
        return self.state in (MET, NOT_MET, UNPARSEABLE)

    def as_dict(self) -> dict:
        return asdict(self)


def decide_item(attempts: Iterable[Attempt]) -> ItemOutcome:
    """The item's outcome: the first parseable of the first three answered attempts decides."""
    ordered = sorted(attempts, key=lambda a: a.attempt)
    answered = 0
    for attempt in ordered:
        if attempt.raw is None:
            continue
        answered += 1
        result = parse_judgment(attempt.raw)
        if result.parsed:
            state = MET if result.criteria_met else NOT_MET
            return ItemOutcome(
                state, result.criteria_met, result.explanation, attempt.attempt, True, answered
            )
        if answered == MAX_ANSWERED_ATTEMPTS:
            return ItemOutcome(UNPARSEABLE, None, "", attempt.attempt, False, answered)
    last = ordered[-1] if ordered else None
    if last is not None and last.raw is None:
        return ItemOutcome(FAILED, None, "", last.attempt, False, answered)
    return ItemOutcome(PENDING, None, "", last.attempt if last else None, False, answered)


def next_attempt_number(attempts: Sequence[Attempt]) -> int | None:
    """The attempt number of the call due next, or None when the item is decided."""
    if decide_item(attempts).scored:
        return None
    return max((a.attempt for a in attempts), default=-1) + 1
