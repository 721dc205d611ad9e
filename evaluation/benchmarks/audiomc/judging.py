"""The judge's requests and answers on the engine's terms: one slot per (task, rubric item),
slot = the item's 0-based index, the filled template as the single user message (no system
message, SPEC §4), and an answer parsed by judge.parse_judgment. Pure.

Attempts are the engine's: the kind allows three answered calls, the first parseable one
decides, three unparseable answers are a scored outcome (not met); transport errors are retried
with backoff first, and a call that still fails leaves the judgment failed and retryable.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluation.benchmarks.base import JudgmentRequest, ParsedOutput

from .judge import JUDGE_KIND, judge_message, parse_judgment

UNPARSEABLE_ERROR = "no JSON object with a boolean criteria_met in the answer"


def reply_of(data: Mapping | None) -> str | None:
    """The submitted reply ("" for an empty or null one); None when the task has no line."""
    if not data or "response" not in data:
        return None
    reply = data.get("response")
    return reply if isinstance(reply, str) else ""


def slot_label(spec: Mapping, index: int) -> str:
    return f"rubric item {index}: {spec['rubric'][index]}"[:200]


def judgment_requests(spec: Mapping, data: Mapping | None, *, prompt) -> list[JudgmentRequest]:
    """Every rubric item of a task with a reply, in rubric order; a task without one is not
    judged (it scores 0, SPEC edge case 1). An empty reply is judged like any other (case 2)."""
    reply = reply_of(data)
    if reply is None:
        return []
    spec = dict(spec)
    return [
        JudgmentRequest(
            JUDGE_KIND,
            slot=str(index),
            prompt=judge_message(prompt.template, spec=spec, response=reply, rubric_index=index),
            label=slot_label(spec, index),
        )
        for index in range(len(spec["rubric"]))
    ]


def parse_output(raw_output: str) -> ParsedOutput:
    parsed = parse_judgment(raw_output)
    if not parsed.parsed:
        return ParsedOutput(None, None, "", UNPARSEABLE_ERROR)
    output = {
        "criteria_met": parsed.criteria_met,
        "explanation": parsed.explanation,
        "candidate": parsed.candidate,
    }
    return ParsedOutput(output, parsed.criteria_met, parsed.explanation)
