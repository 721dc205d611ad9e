"""From stored detections to judge calls and back to the results (SPEC §6-7), on the plug-in
interface's terms: one judged slot per present T answer ("answer-<turn>") and per N1-N3 window
with speech ("ack-<turn>"); outcomes decided without a call where the rules decide them (an
empty or missing transcript fails; a low-trust upload's own verdicts); aggregation per
condition with the paired comparison. Plain Python.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction

from evaluation.benchmarks.base import JudgedSlot, JudgmentRequest, ParsedOutput, TaskOutcome

from . import judge as judges
from . import metrics, schedule
from .manifest import parse_scenario
from .metrics import ACK, ANSWER, CONDITIONS, SILENCE_LABELS
from .segments import N_MIN
from .upload import MODE_UNVERIFIED, submitted_outcome

PASSING = {ANSWER: "correct", ACK: "acknowledgement"}


def item_label(item: Mapping, timing: Mapping) -> str:
    """What a judged slot is, for people: the turn, its label and the time judged."""
    spans = item["spans"]
    when = f"{spans[0][0] / 1000:.2f}–{spans[-1][1] / 1000:.2f} s" if spans else "no audio"
    if item["kind"] == ANSWER:
        return f"answer to T (turn {item['turn_index']}), {when}"
    return f"{item.get('label', '')} window (turn {item['turn_index']}), speech {when}"


def _fixed(kind: str, outcome: str, **details) -> dict:
    return {"verdict": outcome == PASSING[kind], "outcome": outcome, **details}


def judgment_requests(
    *, spec: Mapping, data: Mapping, detection: Mapping, templates: Mapping[str, str]
) -> list[JudgmentRequest]:
    """One request per judgment item of the run, or its outcome decided without a call."""
    transcripts = detection.get("transcripts") or {}
    t_text = next((t["text"] for t in spec["turns"] if t["label"] == "T"), "")
    submitted = {}
    if data.get("mode") == MODE_UNVERIFIED:
        submitted = {(j["turn_index"], j["kind"]): j for j in data.get("judgments", [])}
    requests = []
    for item in detection.get("items") or []:
        kind, slot = item["kind"], item["slot"]
        label = item_label(item, detection.get("timing", {}))
        if data.get("mode") == MODE_UNVERIFIED:
            record = submitted.get((item["turn_index"], kind))
            outcome = submitted_outcome(kind, record)
            details = {"source": "submitted"}
            if record is not None:
                details.update(transcript=record["transcript"], raw=record["raw"])
            requests.append(JudgmentRequest(kind, slot, fixed=_fixed(kind, outcome, **details),
                                            label=label))  # fmt: skip
            continue
        found = transcripts.get(slot) or {}
        text = found.get("text")
        if text is None:  # SPEC §6.3-6.4: no transcript, no exemption
            fixed = _fixed(kind, judges.MISSING, error=found.get("error") or "no transcript")
            requests.append(JudgmentRequest(kind, slot, fixed=fixed, label=label))
            continue
        if not text.strip():
            fixed = _fixed(kind, judges.EMPTY, transcript=text)
            requests.append(JudgmentRequest(kind, slot, fixed=fixed, label=label))
            continue
        values = {"transcript": text.strip()}
        if kind == ANSWER:
            values.update(request=t_text, gold_answer=spec["gold_answer"])
        prompt = judges.fill(templates[kind], values)
        requests.append(JudgmentRequest(kind, slot, prompt=prompt, label=label))
    return requests


def parse_output(kind: str, raw_output: str) -> ParsedOutput:
    """SPEC §7: answer needs a JSON boolean ``correct``; ack a ``label`` of acknowledgement /
    acknowledgment / intrusion. Anything else is unparseable."""
    parsed = judges.parse(kind, raw_output)
    if parsed is None:
        wanted = "a JSON boolean 'correct'" if kind == ANSWER else "a 'label' of ack or intrusion"
        return ParsedOutput(None, None, "", f"answer has no {wanted}")
    if kind == ANSWER:
        return ParsedOutput(parsed, parsed["correct"], parsed["reason"])
    return ParsedOutput(parsed, parsed["label"] == "acknowledgement", parsed["reason"])


def slot_outcome(kind: str, slot: JudgedSlot | None) -> str:
    """The outcome metrics.py counts for one stored slot: a rule's fixed outcome; a judge's
    parsed answer; an answer that never parsed is ``unparseable``; a call that failed, or a
    slot never judged, is ``missing`` (both fail, SPEC §6.3-6.4 and §8 rows 9-10)."""
    if slot is None:
        return judges.MISSING
    if slot.state == "fixed":
        return (slot.output or {}).get("outcome", judges.MISSING)
    if slot.state != "done":
        return judges.MISSING
    if slot.output is None:
        return judges.UNPARSEABLE
    if kind == ANSWER:
        return "correct" if slot.output.get("correct") is True else "incorrect"
    return slot.output.get("label") or judges.UNPARSEABLE


def aggregate(outcomes: Sequence[TaskOutcome]) -> dict:
    """SPEC §6 per condition, and the paired comparison. A run absent from a partial upload is
    scored as silence under the log a silent model gets, and the results say incomplete."""
    timings, verdicts, expected = [], {}, {}
    absent: Counter = Counter()
    for outcome in outcomes:
        scenario, problems = parse_scenario(outcome.spec)
        if scenario is None:
            raise ValueError(f"task {outcome.task_id} does not parse: {problems[:3]}")
        gt = schedule.gt_run(schedule.silent_log(scenario), scenario)
        expected[scenario.key] = metrics.Run.from_gt(gt)
        timing = outcome.detection.get("timing")
        if timing is None:
            absent[scenario.condition] += 1
            continue
        timings.append(timing)
        for item in outcome.detection.get("items") or []:
            key = (*scenario.key, item["turn_index"], item["kind"])
            verdicts[key] = slot_outcome(item["kind"], outcome.judged.get((item["kind"],
                                                                          item["slot"])))  # fmt: skip
        if outcome.data.get("mode") == MODE_UNVERIFIED:
            for record in outcome.data.get("judgments", []):  # unused ones are listed
                key = (*scenario.key, record["turn_index"], record["kind"])
                verdicts.setdefault(key, submitted_outcome(record["kind"], record))
    results = metrics.score(timings, verdicts, expected=expected, allow_missing=True)
    paired = results["paired_presence"]
    for condition in CONDITIONS:
        if condition in results:
            # The paired comparison spans both conditions; each table shows it.
            results[condition]["paired_presence"] = dict(paired)
            results[condition]["missing_runs"] = absent[condition]
    return results


# --- Per-run contributions: slices and comparisons of systems ------------------------------


def run_contributions(outcome: TaskOutcome) -> dict:
    """What one run adds to each rate of its condition's table: (count, total) for the run as
    one unit (its T turn), or a list of (count, total) for units within it, kept in order so
    that two systems' units line up (each silence window, each N4 event; an N4 event that is
    not eligible for yield is a unit of nothing). Every rate of the board is the sum over its
    runs; a run absent from a partial upload counts as the silent run it is scored as. The
    paired comparison is over pairs of runs, not runs: it has none."""
    scenario, _ = parse_scenario(outcome.spec)
    timing = outcome.detection.get("timing")
    if timing is None:
        gt = schedule.gt_run(schedule.silent_log(scenario), scenario)
        timing = metrics.run_timing(metrics.Run.from_gt(gt))
    t = timing["t"]
    answer = slot_outcome(ANSWER, outcome.judged.get((ANSWER, f"answer-{t['turn_index']}")))
    windows = []
    for window in timing["windows"]:
        passed = not window["speech"]
        if window["speech"]:
            slot = outcome.judged.get((ACK, f"ack-{window['turn_index']}"))
            passed = slot_outcome(ACK, slot) == "acknowledgement"
        windows.append((window["label"], (int(passed), 1)))
    events = timing["n4"]
    found = {
        "fresh_onset": (int(t["fresh"]), 1),
        "presence": (int(t["present"]), 1),
        "accuracy": (int(answer == "correct"), 1) if t["present"] else (0, 0),
        "silence": [unit for _, unit in windows],
        "window_response": [(int(e["window_response"]), 1) for e in events],
        "yield": [(int(bool(e["yielded"])), 1) if e["eligible"] else (0, 0) for e in events],
        "yield.total": (sum(e["eligible"] for e in events), 1),
        **{
            f"silence_by_label.{label}": [unit for of, unit in windows if of == label]
            for label in SILENCE_LABELS
        },
    }
    return {f"{scenario.condition}.{name}": value for name, value in found.items()}


def metric_value(key: str, numerator: float, denominator: float):
    """A metric from its summed contributions, as the results print it: rates in percent to
    2 decimals half up; yield withheld below N_MIN eligible events; the yield's n a count."""
    if key == "yield.total":
        return int(round(numerator)) if denominator else None
    if not denominator or (key == "yield" and denominator < N_MIN):
        return None
    return metrics.rate(int(round(numerator)), int(round(denominator)))["pct"]


def run_attributes(spec: Mapping) -> dict:
    """What a run can be sliced by: its number of human speakers, where T falls in the
    scenario (thirds by turn order), and whether an N4 event follows T."""
    labels = [turn["label"] for turn in spec["turns"]]
    t_index = labels.index("T")
    place = Fraction(t_index, max(1, len(labels) - 1))
    return {
        "speakers": str(len(spec["speakers"])),
        "t_position": "early"
        if place < Fraction(1, 3)
        else ("middle" if place < Fraction(2, 3) else "late"),  # fmt: skip
        "n4_after_t": "N4Q" in labels[t_index + 1 :],
    }
