"""MP-Bench judge kinds and Table 3 aggregation, as the official harness computes them. Pure."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

UNDERSTANDING = "understanding"
SPEAKER_NAME = "speaker_name"
DISCUSSION = "discussion"
TURNBASED = "turnbased"
KINDS = (UNDERSTANDING, SPEAKER_NAME, DISCUSSION, TURNBASED)
FAMILIES = (UNDERSTANDING, DISCUSSION, TURNBASED)

VERDICT_KEYS = {
    UNDERSTANDING: "correct",
    SPEAKER_NAME: "correct",
    DISCUSSION: "consistent",
    TURNBASED: "consistent",
}
# The paper's chance levels, shown beside the numbers: three human speakers; balanced speak/silent.
CHANCE_PCT = {"spk_name_acc": 33.3, "turnbased.tt_acc": 50.0}


@dataclass(frozen=True)
class TaskSpec:
    task_id: str
    family: str
    should_speak: bool
    metatranscript: str
    question_text: str
    answer_text: str
    is_speaker_name: bool

    @classmethod
    def from_spec(cls, task_id: str, spec: Mapping) -> TaskSpec:
        """A task's rules from its stored spec (the task file's fields)."""
        return cls(
            task_id=task_id,
            family=spec.get("family", ""),
            should_speak=bool(spec.get("should_speak")),
            metatranscript=spec.get("metatranscript", ""),
            question_text=spec.get("question_text", ""),
            answer_text=spec.get("answer_text", ""),
            is_speaker_name=bool(spec.get("is_speaker_name")),
        )


def kinds_for(task: TaskSpec) -> list[str]:
    kinds = []
    if task.family == UNDERSTANDING:
        kinds.append(UNDERSTANDING)
        if task.is_speaker_name:
            kinds.append(SPEAKER_NAME)
    elif task.family == DISCUSSION:
        kinds.append(DISCUSSION)
    elif task.family == TURNBASED:
        kinds.append(TURNBASED)
    return kinds


def response_for(kind: str, *, full_text: str, post_text: str) -> str:
    """Discussion is judged on what the agent said after the input ended; the rest on all of it."""
    return post_text if kind == DISCUSSION else full_text


def skips_judge(kind: str, response: str) -> bool:
    """An empty response is judged false without a call, except turn-based (silence may be right)."""
    return kind != TURNBASED and not response.strip()


def prompt_fields(kind: str, task: TaskSpec, response: str) -> dict[str, str]:
    if kind == UNDERSTANDING:
        return {
            "metainformation": task.metatranscript,
            "question_text": task.question_text,
            "answer_text": task.answer_text,
            "llm_predicted_answer": response,
        }
    if kind == SPEAKER_NAME:
        return {"question": task.question_text, "gt_name": task.answer_text, "response": response}
    return {"metatranscript": task.metatranscript, "llm_predicted_answer": response}


def build_prompt(template: str, kind: str, task: TaskSpec, response: str) -> str:
    return template.format(**prompt_fields(kind, task, response))


def parse_verdict(kind: str, raw_output: str) -> tuple[bool | None, str]:
    """(verdict, reasoning). Not JSON, or a verdict key that is not a boolean: no verdict."""
    try:
        data = json.loads(raw_output)
    except (ValueError, TypeError):
        return None, ""
    if not isinstance(data, dict):
        return None, ""
    verdict = data.get(VERDICT_KEYS[kind])
    reasoning = data.get("reasoning")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    return (verdict if isinstance(verdict, bool) else None), reasoning


def rate(count: int, total: int) -> dict:
    if total == 0:
        return {"count": 0, "total": 0, "pct": None}
    return {"count": count, "total": total, "pct": round(100.0 * count / total, 2)}


def mean_latency(latencies: Iterable[float | None]) -> float | None:
    values = [v for v in latencies if v is not None]
    return round(statistics.mean(values), 1) if values else None


@dataclass(frozen=True)
class TaskOutcome:
    """One task's detection plus its verdicts (kind -> True/False/None for no verdict)."""

    task: TaskSpec
    spoke: bool
    latency: float | None
    verdicts: Mapping[str, bool | None]

    @property
    def turn_taking_correct(self) -> bool:
        return self.spoke == self.task.should_speak

    def appropriate(self, kind: str) -> bool:
        verdict = self.verdicts.get(kind)
        if verdict is None and kind == TURNBASED:
            # Silent-negative rule: no verdict, stayed silent, should have: correct.
            return not self.spoke and not self.task.should_speak
        return verdict is True


def aggregate(outcomes: Iterable[TaskOutcome]) -> dict:
    """The harness's RESULTS.json structure (Table 3)."""
    by_family: dict[str, list[TaskOutcome]] = {family: [] for family in FAMILIES}
    for outcome in outcomes:
        if outcome.task.family in by_family:
            by_family[outcome.task.family].append(outcome)

    def latency(items: list[TaskOutcome]) -> float | None:
        return mean_latency(o.latency for o in items if o.spoke)

    understanding = by_family[UNDERSTANDING]
    speaker_subset = [o for o in understanding if o.task.is_speaker_name]
    results = {
        UNDERSTANDING: {
            "n": len(understanding),
            "overall_acc": rate(
                sum(o.appropriate(UNDERSTANDING) for o in understanding), len(understanding)
            ),
            "spk_name_acc": rate(
                sum(o.appropriate(SPEAKER_NAME) for o in speaker_subset), len(speaker_subset)
            ),
            "latency_s": latency(understanding),
        }
    }
    for family in (DISCUSSION, TURNBASED):
        items = by_family[family]
        results[family] = {
            "n": len(items),
            "tt_acc": rate(sum(o.turn_taking_correct for o in items), len(items)),
            "app_acc": rate(sum(o.appropriate(family) for o in items), len(items)),
            "latency_s": latency(items),
        }
    return results
