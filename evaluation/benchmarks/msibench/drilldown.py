"""What the drill-down of one cell and a rater see: the case's lines with speaker, addressee and
audio, the prediction, the validator's verdict call by call, every rubric atom with the judge's
pass/fail and rationale (ignored dimensions marked so), and the probes' deterministic outcomes.
Pure: the engine signs the clips and shows each judgment's exact messages itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from evaluation.benchmarks.base import ClipSpec, JudgedSlot, StudyKind, StudyUnit, TaskInput

from .importer import BYSTANDER_AUDIO, line_audio_name
from .judge import IGNORED_DIMENSIONS, clean_spoken_text
from .metrics import base_cell_outcome, raw_validator
from .outcomes import RUBRIC, judged_results, rubric_result
from .release import BASE, HEAR, SPEAK
from .upload import SINGLE_FILE, prediction_row
from .validator import describe_matcher, required_calls_of

STATES = {
    "judged": "judged",
    "fixed": "decided without a call",
    "unusable": "answer unusable after every attempt: all atoms fail",
    "failed": "the judge call failed: counts as failed until retried",
    "pending": "waiting for the judge",
    "unjudged": "not judged",
}


def _addressee(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return value if isinstance(value, str) else ""


def case_turns(spec: Mapping, assets: Mapping[str, str]) -> list[dict]:
    """Every line as the case has it, with what the judge sees of it (None: dropped because it
    cleans to nothing) and the name of its clip when the release stored one."""
    turns = []
    colours: dict[str, int] = {"assistant": 4}
    for turn in spec.get("turns") or []:
        speaker = "assistant" if turn.get("role") == "assistant" else turn.get("speaker") or ""
        colours.setdefault(speaker, min(len(colours) - 1, 3))
        text = turn.get("text") if isinstance(turn.get("text"), str) else ""
        clip = line_audio_name(spec, turn["audio"]) if turn.get("audio") else ""
        turns.append(
            {
                "line": turn.get("line"),
                "role": turn.get("role"),
                "speaker": speaker,
                "addressee": _addressee(turn.get("addressed_to")),
                "text": text,
                "judge_text": clean_spoken_text(text) or None,
                "clip": clip if clip in assets else "",
                "colour": colours[speaker],
            }
        )
    return turns


def line_clips(spec: Mapping, assets: Mapping[str, str]) -> list[ClipSpec]:
    return [
        ClipSpec(
            key=assets[turn["clip"]],
            label=f"L{turn['line']} {turn['speaker']}"
            + (f" → {turn['addressee']}" if turn["addressee"] else ""),
            name=turn["clip"],
        )
        for turn in case_turns(spec, assets)
        if turn["clip"]
    ]


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def validator_view(spec: Mapping, prediction: Mapping | None, verdict: Mapping | None) -> dict:
    """The verdict call by call: each requirement with its matchers and the call matched to it,
    each predicted call with what became of it, and the reasons (SPEC §4)."""
    tool_spec = spec.get("tool_validation")
    if tool_spec is None:
        return {"spec": False}
    if verdict is None:
        verdict = raw_validator(spec, prediction)
    calls = (prediction or {}).get("tool_calls") or []
    matched = {pair["required_index"]: pair["predicted_index"] for pair in verdict["matched_pairs"]}
    matched_by = {p: r for r, p in matched.items()}
    required = []
    for index, requirement in enumerate(required_calls_of(tool_spec)):
        required.append(
            {
                "index": index,
                "name": requirement["name"],
                "arguments": [
                    (name, describe_matcher(matcher))
                    for name, matcher in requirement["arguments"].items()
                ],
                "optional_null": list(requirement.get("optional_null_arguments", [])),
                "matched_call": matched.get(index),
            }
        )
    predicted = []
    for index, call in enumerate(calls):
        if index in verdict["invalid_predicted"]:
            status = "invalid"
        elif index in verdict["forbidden_predicted"]:
            status = "forbidden tool"
        elif index in matched_by:
            status = f"matches required call {matched_by[index]}"
        elif tool_spec["call_policy"] == "required_subset":
            status = "extra (allowed by required_subset)"
        else:
            status = "matches no required call"
        predicted.append(
            {
                "index": index,
                "name": call.get("name") if isinstance(call, dict) else None,
                "arguments": _json(call.get("arguments", {})) if isinstance(call, dict) else "",
                "status": status,
            }
        )
    return {
        "spec": True,
        "passed": verdict["passed"],
        "policy": verdict["call_policy"],
        "policy_version": verdict.get("policy_version", ""),
        "forbidden_names": list(tool_spec.get("forbidden_call_names", [])),
        "required": required,
        "predicted": predicted,
        "reasons": list(verdict["reasons"]),
    }


def _state(slot: JudgedSlot | None, result: dict | None) -> str:
    if slot is None:
        return "unjudged"
    if slot.state == "fixed":
        return "fixed"
    if slot.state == "done":
        return "judged" if slot.output is not None else "unusable"
    if slot.state == "failed":
        return "failed"
    return "pending"


def rubric_view(spec: Mapping, rubric_id: str, slot: JudgedSlot | None) -> dict:
    """One rubric of a base case with each atom's criterion and the judge's decision."""
    rubric = spec["rubrics"][rubric_id]
    result = rubric_result(spec, rubric_id, slot)
    decided = {atom["index"]: atom for atom in (result or {}).get("atoms", [])}
    atoms = []
    for index, item in enumerate(rubric.get("atomic_criteria") or []):
        dimension = item.get("dimension", "legacy.unspecified")
        found = decided.get(index, {})
        atoms.append(
            {
                "index": index,
                "criterion": item.get("criterion", ""),
                "dimension": dimension,
                "polarity": item.get("polarity", ""),
                "ignored": dimension in IGNORED_DIMENSIONS,
                "passed": found.get("passed"),
                "rationale": found.get("rationale"),
                "forced": found.get("reason_if_forced"),
            }
        )
    state = _state(slot, result)
    return {
        "rubric_id": rubric_id,
        "version": (spec.get("rubric_versions") or {}).get(rubric_id, ""),
        "judge_instruction": rubric.get("judge_instruction") or "",
        "state": state,
        "state_text": STATES[state],
        "fixed": (result or {}).get("fixed"),
        "rationale": (result or {}).get("rationale"),
        "scored_passed": (result or {}).get("scored_passed"),
        "atoms": atoms,
    }


def _source(data: Mapping | None) -> str:
    source = (data or {}).get("source") or {}
    if not source.get("line"):
        return ""
    name = source.get("file")
    return f"line {source['line']}" + (f" of {name}" if name and name != SINGLE_FILE else "")


def task_context(task: TaskInput, *, judged: Mapping) -> dict:
    spec = task.spec
    prediction = prediction_row(task.data)
    kind = spec.get("kind")
    context: dict = {
        "kind": kind,
        "prediction": prediction,
        "tool_calls": [
            {"name": call.get("name"), "arguments": _json(call.get("arguments", {}))}
            for call in (prediction or {}).get("tool_calls") or []
        ],
        "source": _source(task.data),
        "turns": case_turns(spec, task.assets),
        "clips": [],
    }
    if kind == BASE:
        verdict = task.detection.get("validator")
        if verdict is None and "validator" not in task.detection:
            verdict = raw_validator(spec, prediction)
        context["clips"] = line_clips(spec, task.assets)
        context["validator"] = validator_view(spec, prediction, verdict)
        context["rubrics"] = [
            rubric_view(spec, rubric_id, judged.get((RUBRIC, rubric_id)))
            for rubric_id in spec["judge_rubric_ids"]
        ]
        context["cell"] = base_cell_outcome(
            spec=spec,
            prediction=prediction,
            validator=verdict,
            judged=judged_results(spec, judged),
        )
    elif kind in (HEAR, SPEAK):
        context["probe"] = task.detection.get("probe")
        context["run_mode"] = task.detection.get("run_mode", "")
        if kind == SPEAK and BYSTANDER_AUDIO in task.assets:
            context["clips"] = [
                ClipSpec(
                    key=task.assets[BYSTANDER_AUDIO],
                    label=f"Bystander barge-in ({spec['live_event'].get('speaker', '')})",
                    name=BYSTANDER_AUDIO,
                )
            ]
    return context


# --- rating units --------------------------------------------------------------------------------


def response_text(prediction: Mapping) -> str:
    """The answer and the tool calls, as a rater reads them."""
    text = (prediction.get("answer_text") or "").strip()
    calls = prediction.get("tool_calls") or []
    if calls:
        listed = "\n".join(f"- {call['name']} {_json(call.get('arguments', {}))}" for call in calls)
        text = (text + "\n\n" if text else "") + "Tool calls:\n" + listed
    return text


def study_units(kind: StudyKind, task: TaskInput, *, judged: Mapping) -> list[StudyUnit]:
    """One unit per rubric atom the judge answered on (slot "<rubric_id>#<atom index>"), with
    the judge's label for it: the atoms of rubrics decided without a call, and atoms the judge
    left out, carry no label of the judge's."""
    spec = task.spec
    prediction = prediction_row(task.data)
    if spec.get("kind") != BASE or prediction is None or kind.judge_kind != RUBRIC:
        return []
    transcript = [
        {
            "speaker": turn["speaker"] + (f" → {turn['addressee']}" if turn["addressee"] else ""),
            "text": turn["text"],
        }
        for turn in case_turns(spec, task.assets)
    ]
    clips = tuple(line_clips(spec, task.assets))
    answer = response_text(prediction)
    units = []
    for rubric_id in spec["judge_rubric_ids"]:
        slot = judged.get((RUBRIC, rubric_id))
        if slot is None or slot.state != "done" or slot.output is None:
            continue
        criteria = spec["rubrics"][rubric_id].get("atomic_criteria") or []
        for atom in slot.output["atoms"]:
            if atom["index"] >= len(criteria):
                continue
            passed = atom["passed"]
            label = None
            if passed is not None and not atom.get("reason_if_forced"):
                label = kind.labels[0 if passed else 1]
            units.append(
                StudyUnit(
                    slot=f"{rubric_id}#{atom['index']}",
                    transcript=transcript,
                    response_text=answer,
                    clips=clips,
                    judge_label=label,
                    prompt=f"{kind.question} Criterion: {criteria[atom['index']]['criterion']}",
                )
            )
    return units
