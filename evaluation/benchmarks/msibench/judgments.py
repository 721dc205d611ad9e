"""The judge's requests and answers on the engine's terms: one slot per (base case, rubric id)
with the system and user messages exactly as judge.py renders them, fixed outcomes where no
call can change a number, and the parsing of an answer into the stored result. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from evaluation.benchmarks.base import JudgmentRequest, ParsedOutput

from .judge import JudgeTemplates, judge_pairs, parse_judge_output, render_system, render_user
from .outcomes import RUBRIC
from .upload import prediction_row

USER_PART = "user"
FIXED_LABELS = {
    "format_error": "format error (metadata.provider_error): every atom fails without a call",
    "empty_answer": "empty answer and no tool call: every scored atom fails without a call",
    "no_atoms": "the rubric has no atom: nothing to judge",
}


@lru_cache(maxsize=8)
def system_message(template: str) -> str:
    """The system message: the system template rendered with no variables (the same for every
    request, so rendered, and held, once)."""
    return render_system(JudgeTemplates(system=template, user="", system_sha256="", user_sha256=""))


def templates_of(prompt) -> JudgeTemplates:
    """The harness's two templates from the prompt version the engine holds (the system
    template as its text, the user template as its "user" part)."""
    return JudgeTemplates(
        system=prompt.template, user=prompt.parts[USER_PART], system_sha256="", user_sha256=""
    )


def slot_label(spec: Mapping, rubric_id: str, fixed: str | None = None) -> str:
    version = (spec.get("rubric_versions") or {}).get(rubric_id, "")
    label = rubric_id + (f" (version {version})" if version else "")
    if fixed:
        label += ": " + FIXED_LABELS.get(fixed, fixed)
    return label[:200]


def with_verdict(result: dict) -> dict:
    """A structured result with its summary verdict: every scored atom passed (None when the
    rubric has no scored atom)."""
    return {**result, "verdict": result["scored_passed"]}


def judgment_requests(spec: Mapping, data: Mapping | None, *, prompt) -> list[JudgmentRequest]:
    """Every rubric slot of a base case with a prediction (a case without one is unjudged and
    fails, §7.2; probes are never judged)."""
    prediction = prediction_row(data)
    if spec.get("kind") != "base" or prediction is None:
        return []
    templates = None
    requests = []
    for pair in judge_pairs(spec, prediction):
        if pair.fixed is not None:
            requests.append(
                JudgmentRequest(
                    RUBRIC,
                    slot=pair.rubric_id,
                    fixed=with_verdict(pair.fixed),
                    context=pair.context,
                    label=slot_label(spec, pair.rubric_id, pair.fixed["fixed"]),
                )
            )
            continue
        templates = templates or templates_of(prompt)
        system = system_message(templates.system)
        user = render_user(
            templates, spec=spec, prediction=prediction, rubric=spec["rubrics"][pair.rubric_id]
        )
        requests.append(
            JudgmentRequest(
                RUBRIC,
                slot=pair.rubric_id,
                prompt=user,
                system=system,
                context=pair.context,
                label=slot_label(spec, pair.rubric_id),
            )
        )
    return requests


def parse_output(raw_output: str, *, context: Mapping) -> ParsedOutput:
    """§6.5: an answer whose shape is wrong is unparseable (the engine asks again, then stores
    it as an outcome that fails every atom); otherwise the atoms aligned by position."""
    result = parse_judge_output(
        raw_output, atoms=list(context["atoms"]), empty_answer=bool(context.get("empty_answer"))
    )
    if not result["ok"]:
        return ParsedOutput(None, None, "", result["error"] or "unusable answer")
    return ParsedOutput(with_verdict(result), result["scored_passed"], result["rationale"] or "")
