"""From what the engine stores to what metrics.py scores: the validator step's output per cell,
each rubric's structured judge result, and the per-language results. Pure.

A rubric slot's stored outcome becomes the harness's judgment:

- decided without a call (format error, empty answer, no atoms): the fixed result;
- answered and parsed: the parsed result;
- answered but never parseable after the kind's attempts: every atom fails (the harness's
  fail-all for a malformed answer, SPEC §6.5), stored as the answer it is;
- a call that failed for good, or one still waiting: no judgment, which metrics.py counts as a
  failed rubric (``judge_missing``; the submission page offers the retry).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.benchmarks.base import JudgedSlot, TaskOutcome

from .judge import atom_specs, fixed_result
from .metrics import (
    hear_cell_outcome,
    raw_validator,
    speak_cell_outcome,
    submission_results,
)
from .predictions import RUN_MODES, TURN_BASED
from .release import BASE, HEAR, SPEAK
from .upload import prediction_row

RUBRIC = "rubric"
UNUSABLE = "the judge's answers never parsed (attempts spent): every atom fails"


def run_mode_of(facts: Mapping) -> str:
    """The run mode the submitter declared (turn-based when none was)."""
    mode = facts.get("mode")
    return mode if mode in RUN_MODES else TURN_BASED


def is_empty(prediction: Mapping) -> bool:
    return not (prediction.get("answer_text") or "").strip() and not prediction.get("tool_calls")


def is_format_error(prediction: Mapping) -> bool:
    metadata = prediction.get("metadata")
    return isinstance(metadata, dict) and isinstance(metadata.get("provider_error"), dict)


def step_output(spec: Mapping, data: Mapping | None, *, run_mode: str) -> dict:
    """The validator step's output for one cell (merged into its detection): on a base case the
    raw validator verdict with its matched pairs and reasons; on a probe its deterministic
    outcome. ``predicted`` says whether the upload had the cell."""
    prediction = prediction_row(data)
    found: dict = {"predicted": prediction is not None}
    kind = spec.get("kind")
    if kind == BASE:
        verdict = raw_validator(spec, prediction)
        found["validator"] = verdict
        found["tool_passed"] = (
            bool(verdict and verdict["passed"]) if spec["required_call_count"] > 0 else None
        )
        found["format_error"] = prediction is not None and is_format_error(prediction)
        found["empty_answer"] = prediction is not None and is_empty(prediction)
    elif kind == HEAR:
        found["probe"] = hear_cell_outcome(spec=spec, prediction=prediction)
    elif kind == SPEAK:
        found["probe"] = speak_cell_outcome(spec=spec, prediction=prediction, run_mode=run_mode)
        found["run_mode"] = run_mode
    return found


def rubric_result(spec: Mapping, rubric_id: str, slot: JudgedSlot | None) -> dict | None:
    """The structured judgment a stored slot stands for (see the module docstring); None when
    there is none to score."""
    if slot is None:
        return None
    if slot.state == "fixed":
        return slot.output
    if slot.state != "done":
        return None
    if slot.output is not None:
        return slot.output
    atoms = atom_specs(spec["rubrics"][rubric_id])
    return fixed_result(atoms, UNUSABLE, ok=False, error=UNUSABLE, fixed="unusable")


def judged_results(spec: Mapping, judged: Mapping) -> dict[str, dict]:
    """rubric id -> structured judgment, for the rubric slots of a base case that have one."""
    results = {}
    for rubric_id in spec.get("judge_rubric_ids") or []:
        result = rubric_result(spec, rubric_id, judged.get((RUBRIC, rubric_id)))
        if result is not None:
            results[rubric_id] = result
    return results


def results_of(outcomes: Sequence[TaskOutcome], *, run_mode: str) -> dict:
    """{language: row} for every language the upload predicts a cell of (never pooled). Each
    row carries the APR half-width as its own node too, for the board's ± column."""
    specs, predictions, validators, judged = {}, {}, {}, {}
    for outcome in outcomes:
        specs[outcome.task_id] = outcome.spec
        prediction = prediction_row(outcome.data)
        if prediction is not None:
            predictions[outcome.task_id] = prediction
        if "validator" in outcome.detection:
            validators[outcome.task_id] = outcome.detection["validator"]
        if outcome.spec.get("kind") == BASE:
            judged[outcome.task_id] = judged_results(outcome.spec, outcome.judged)
    languages = sorted({specs[cell_id]["language"] for cell_id in predictions})
    results = submission_results(
        specs=specs,
        predictions=predictions,
        validators=validators,
        judged=judged,
        run_mode=run_mode,
        languages=languages,
    )
    for row in results.values():
        row["apr_half_width"] = {"value": row["apr"]["half_width"]}
    return results
