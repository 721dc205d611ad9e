"""What the drill-down of one task and a rater see: every user turn with its clip and
transcript, the reference assistant turns, the submitted reply, and each rubric item with the
judge's verdict and explanation. Pure: the engine signs the clips and shows each judgment's
exact request (the user message) and raw answer itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluation.benchmarks.base import ClipSpec, StudyKind, StudyUnit, TaskInput

from .judge import FAILED, JUDGE_KIND, MET, NOT_MET, PENDING, UNPARSEABLE
from .judging import reply_of
from .metrics import MISSING, NO_RESPONSE
from .outcomes import item_state
from .upload import RESPONSE_AUDIO

STATES = {
    MET: "met",
    NOT_MET: "not met",
    UNPARSEABLE: "not met: no parseable answer in three attempts",
    FAILED: "the judge call failed: not met until retried",
    PENDING: "waiting for the judge",
    MISSING: "not judged",
    NO_RESPONSE: "no reply submitted: not met",
}


def _user_clip(turn: int, assets: Mapping[str, str]) -> str:
    prefix = f"user_turn_{turn}."
    return next((name for name in sorted(assets) if name.startswith(prefix)), "")


def _response_clip(assets: Mapping[str, str]) -> str:
    prefix = f"{RESPONSE_AUDIO}."
    return next((name for name in sorted(assets) if name.startswith(prefix)), "")


def conversation(spec: Mapping, assets: Mapping[str, str]) -> list[dict]:
    """User turns 1..L and the reference assistant turns 1..L-1 in order, each with its
    transcript (as the dataset has it; the judge sees it stripped, empty entries left out)."""
    turns = []
    last = spec["last_user_turn"]
    for k in range(1, last + 1):
        text = spec["user_turns"][k - 1]
        turns.append(
            {
                "role": "user",
                "turn": k,
                "text": text,
                "clip": _user_clip(k, assets),
                "empty": not text.strip(),
            }
        )
        if k < last:
            text = spec["assistant_turns"][k - 1]
            turns.append(
                {
                    "role": "assistant",
                    "turn": k,
                    "text": text,
                    "clip": "",
                    "empty": not text.strip(),
                }
            )
    return turns


def clips(spec: Mapping, assets: Mapping[str, str]) -> list[ClipSpec]:
    found = [
        ClipSpec(key=assets[turn["clip"]], label=f"User turn {turn['turn']}", name=turn["clip"])
        for turn in conversation(spec, assets)
        if turn["clip"]
    ]
    response = _response_clip(assets)
    if response:
        found.append(
            ClipSpec(
                key=assets[response],
                label="Submitted reply (audio; scoring reads its text)",
                name=response,
                role="response",
            )
        )
    return found


def rubric_items(spec: Mapping, data: Mapping | None, judged: Mapping) -> list[dict]:
    responded = reply_of(data) is not None
    items = []
    for index, text in enumerate(spec["rubric"]):
        slot = judged.get((JUDGE_KIND, str(index)))
        state = item_state(slot) if responded else NO_RESPONSE
        output = (slot.output if slot is not None else None) or {}
        items.append(
            {
                "index": index,
                "text": text,
                "state": state,
                "state_text": STATES[state],
                "met": state == MET,
                "explanation": output.get("explanation") or "",
            }
        )
    return items


def task_context(task: TaskInput, *, judged: Mapping) -> dict:
    spec = task.spec
    items = rubric_items(spec, task.data, judged)
    reply = reply_of(task.data)
    met = sum(item["met"] for item in items)
    return {
        "turns": conversation(spec, task.assets),
        "reply": reply,
        "response_clip": _response_clip(task.assets),
        "items": items,
        "met": met,
        "n_items": len(items),
        "passed": reply is not None and met == len(items),
        "clips": clips(spec, task.assets),
    }


# --- rating units --------------------------------------------------------------------------------


def study_units(kind: StudyKind, task: TaskInput, *, judged: Mapping) -> list[StudyUnit]:
    """One unit per rubric item the judge answered on (slot = the item's index): the rater
    hears the user turns, reads the reference turns and the reply, and decides met / not met.
    Items whose answers never parsed carry no label of the judge's."""
    if kind.judge_kind != JUDGE_KIND:
        return []
    reply = reply_of(task.data)
    if reply is None:
        return []
    spec = task.spec
    transcript = [
        {"speaker": f"{turn['role'].capitalize()} (turn {turn['turn']})", "text": turn["text"]}
        for turn in conversation(spec, task.assets)
        if not turn["empty"]
    ]
    heard = tuple(clips(spec, task.assets))
    units = []
    for index, text in enumerate(spec["rubric"]):
        slot = judged.get((JUDGE_KIND, str(index)))
        if slot is None or slot.state != "done":
            continue
        state = item_state(slot)
        label = None
        if state in (MET, NOT_MET):
            label = kind.labels[0 if state == MET else 1]
        units.append(
            StudyUnit(
                slot=str(index),
                transcript=transcript,
                response_text=reply,
                clips=heard,
                judge_label=label,
                prompt=f"{kind.question} Rubric item: {text}",
            )
        )
    return units
