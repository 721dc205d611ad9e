"""What people see of one run: the drill-down (a timeline of the human turns with their labels,
the assistant's speech as our VAD found it, every scored window with its verdict, transcript and
judge output; the input and output channels to play) and the units raters label."""

from __future__ import annotations

from collections.abc import Mapping

from evaluation.benchmarks.base import (
    ClipSpec,
    JudgedSlot,
    StudyKind,
    StudyUnit,
    TaskInput,
    Timeline,
    TimelineLane,
    TimelineSpan,
)

from .metrics import ACK, ANSWER
from .scoring import PASSING, item_label, slot_outcome
from .segments import GAP_MS, W_T_MS
from .upload import OUTPUT

INPUT_NAME = "input.wav"  # the clip name of the assembled input channel
OUTCOME_TEXT = {
    "correct": "correct",
    "incorrect": "incorrect",
    "acknowledgement": "brief acknowledgement (pass)",
    "intrusion": "intrusion (fail)",
    "unparseable": "judge answer unparseable (fail)",
    "missing": "no verdict (fail)",
    "empty_transcript": "empty transcript (fail)",
}


def _s(ms: int) -> float:
    return ms / 1000


def clips(task: TaskInput) -> list[ClipSpec]:
    """The input channel (what the model heard) and the output channel (the model), on one
    clock: sample 0 is the start of the preamble in both."""
    found = []
    t = (task.detection.get("timing") or {}).get("t") or {}
    markers = ((_s(t["t_end"]), "T ends"),) if t else ()
    stored = task.detection.get("input_audio") or {}
    if stored.get("key"):
        found.append(ClipSpec(key=stored["key"], label="Input channel: what the model heard",
                              name=INPUT_NAME, markers=markers))  # fmt: skip
    if OUTPUT in task.assets:
        found.append(ClipSpec(key=task.assets[OUTPUT], label="Output channel: the model",
                              name=OUTPUT, markers=markers, role="response"))  # fmt: skip
    return found


def _judged_rows(task: TaskInput, judged: Mapping) -> dict[str, dict]:
    """Per judged slot: outcome, transcript, where it came from and what the judge said."""
    transcripts = task.detection.get("transcripts") or {}
    rows = {}
    for item in task.detection.get("items") or []:
        slot = judged.get((item["kind"], item["slot"]))
        outcome = slot_outcome(item["kind"], slot)
        found = transcripts.get(item["slot"]) or {}
        output = slot.output if slot is not None else None
        rows[item["slot"]] = {
            "slot": item["slot"],
            "kind": item["kind"],
            "label": item_label(item, task.detection.get("timing", {})),
            "outcome": outcome,
            "outcome_text": OUTCOME_TEXT.get(outcome, outcome),
            "passed": outcome == PASSING[item["kind"]],
            "transcript": found.get("text") if found else (output or {}).get("transcript"),
            "transcript_source": found.get("source", ""),
            "reason": (output or {}).get("reason", "") if slot and slot.state == "done" else "",
            "state": slot.state if slot is not None else "not judged yet",
        }
    return rows


def task_context(task: TaskInput, *, judged: Mapping) -> dict:
    found = task.detection
    timing = found.get("timing")
    if not timing:
        return {"scored": False, "clips": clips(task)}
    spec_turns = {t["index"]: t for t in task.spec["turns"]}
    gt_turns = sorted(found["gt"]["turns"], key=lambda t: t["start"])
    judged_rows = _judged_rows(task, judged)
    windows = []
    t = timing["t"]
    answer = judged_rows.get(f"answer-{t['turn_index']}")
    windows.append({
        "what": f"T (turn {t['turn_index']}): response window",
        "start": _s(t["t_end"]), "end": _s(t["t_end"] + W_T_MS),
        "timing": "fresh onset" if t["fresh"] else
                  ("present, already speaking at the end of T" if t["present"] else "no response"),
        "passed": t["fresh"], "judged": answer,
    })  # fmt: skip
    for window in timing["windows"]:
        row = judged_rows.get(f"ack-{window['turn_index']}")
        windows.append({
            "what": f"{window['label']} (turn {window['turn_index']}): silence window",
            "start": _s(window["start"]), "end": _s(window["end"]),
            "timing": "speech in the window" if window["speech"] else "silent",
            "passed": (not window["speech"]) or bool(row and row["passed"]), "judged": row,
        })  # fmt: skip
    for event in timing["n4"]:
        q_end = next(g["end"] for g in gt_turns if g["index"] == event["question_index"])
        windows.append({
            "what": f"N4 (turns {event['question_index']}-{event['resolution_index']}): "
                    "answering gap and yield",
            "start": q_end, "end": _s(event["until"]),
            "timing": _n4_text(event), "passed": event["yielded"], "judged": None,
            "gap_end": q_end + GAP_MS / 1000, "deadline": _s(event["deadline"]),
        })  # fmt: skip
    lanes = (
        TimelineLane(
            "People",
            tuple(
                TimelineSpan(
                    g["start"],
                    g["end"],
                    f"{g['label']} · {spec_turns[g['index']]['speaker']}: "
                    f"{spec_turns[g['index']]['text']}",
                    f"label-{g['label']}",
                )
                for g in gt_turns
            ),  # fmt: skip
            player=INPUT_NAME,
        ),
        TimelineLane(
            "Assistant (VAD)",
            tuple(TimelineSpan(_s(s), _s(e), "speech", "speech") for s, e in found["segments"]),
            player=OUTPUT if OUTPUT in task.assets else "",
        ),
        TimelineLane(
            "Windows",
            tuple(
                TimelineSpan(
                    w["start"],
                    w["end"],
                    f"{w['what']}: {w['timing']}",
                    "pass" if w["passed"] else ("na" if w["passed"] is None else "fail"),
                )
                for w in windows
            ),  # fmt: skip
            player=INPUT_NAME,
        ),
    )
    markers = [(_s(t["t_end"]), "T ends")]
    markers += [(_s(e["deadline"]), "yield deadline") for e in timing["n4"]]
    return {
        "scored": True,
        "timeline": Timeline(lanes=lanes, markers=tuple(markers)),
        "windows": windows,
        "n4": timing["n4"],
        "t": t,
        "turns": [
            {**spec_turns[g["index"]], "start": g["start"], "end": g["end"]} for g in gt_turns
        ],  # fmt: skip
        "request": next((x["text"] for x in task.spec["turns"] if x["label"] == "T"), ""),
        "clips": clips(task),
    }


def _n4_text(event: Mapping) -> str:
    answered = "answered in the gap" if event["window_response"] else "no speech in the gap"
    if not event["eligible"]:
        return f"{answered}; not eligible for yield ({event['ineligible_reason']})"
    return f"{answered}; {'yielded' if event['yielded'] else event['failure']}"


# --- Rating studies -------------------------------------------------------------------------


def _judge_label(kind: StudyKind, slot: JudgedSlot | None) -> str | None:
    if slot is None or slot.state in ("pending", "failed"):
        return None
    verdict = (slot.output or {}).get("verdict") if slot.state == "fixed" else slot.verdict
    return None if verdict is None else kind.labels[0 if verdict else 1]


def study_units(kind: StudyKind, task: TaskInput, *, judged: Mapping) -> list[StudyUnit]:
    """Answer correctness of a T response, or acknowledgement vs intrusion of a window's
    speech: the conversation up to the turn, the transcript, and both channels with the
    judged part as their window."""
    found = task.detection
    if not found.get("timing"):
        return []
    spec_turns = {t["index"]: t for t in task.spec["turns"]}
    gt = {g["index"]: g for g in found["gt"]["turns"]}
    transcripts = found.get("transcripts") or {}
    input_key = (found.get("input_audio") or {}).get("key")
    units = []
    for item in found.get("items") or []:
        if item["kind"] != kind.judge_kind:
            continue
        turn = gt[item["turn_index"]]
        if item["kind"] == ANSWER:
            shown = [i for i in sorted(gt) if gt[i]["start"] <= turn["start"]]
            window = (turn["start"], _s(item["spans"][-1][1]) if item["spans"] else turn["end"])
            prompt = (f"{kind.question}\nRequest: {spec_turns[turn['index']]['text']}\n"
                      f"Gold answer: {task.spec['gold_answer']}")  # fmt: skip
        else:
            shown = [i for i in sorted(gt) if gt[i]["start"] <= turn["start"]][-2:]
            window = (turn["start"], turn["end"] + 0.5)
            prompt = kind.question
        text = (transcripts.get(item["slot"]) or {}).get("text") or ""
        clip_list = []
        if input_key:
            clip_list.append(ClipSpec(key=input_key, label="The conversation", name=INPUT_NAME,
                                      start=window[0], end=window[1]))  # fmt: skip
        if OUTPUT in task.assets:
            clip_list.append(ClipSpec(key=task.assets[OUTPUT], label="The assistant", name=OUTPUT,
                                      start=window[0], end=window[1], role="response"))  # fmt: skip
        units.append(
            StudyUnit(
                slot=item["slot"],
                transcript=[
                    {"speaker": spec_turns[i]["speaker"], "text": spec_turns[i]["text"]}
                    for i in shown
                ],
                response_text=text,
                clips=tuple(clip_list),
                judge_label=_judge_label(kind, judged.get((item["kind"], item["slot"]))),
                prompt=prompt,
            )
        )
    return units


STUDY_QUESTIONS = {
    ANSWER: "Does the assistant's spoken answer mean the same as the gold answer? Ignore filler, "
    "politeness and recognition noise.",
    ACK: "People were talking among themselves. Is what the assistant said here only a brief "
    "acknowledgement that adds nothing and does not take the floor, or an intrusion?",
}
