"""Duplex-MPE metrics (SPEC §6): per run what the timing says and what must be judged, then
per condition the rates. Conditions are never pooled and metrics never combined (SPEC §6).

All times are integer ms (segments.py); segments are §4-normalised episodes. A run is a GT run
(SPEC §3) plus its segments. Judge outcomes come in as plain strings (judge.py):
answer -> correct | incorrect | unparseable | missing | empty_transcript;
ack -> acknowledgement | intrusion | unparseable | missing | empty_transcript.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from evaluation.stats import mcnemar_exact

from . import segments as seg
from .segments import DEADLINE_MS, GAP_MS, N_MIN, POST_MS, W_T_MS, Segment

LABELS = ("T", "N1", "N2", "N3", "N4Q", "N4R")
SILENCE_LABELS = ("N1", "N2", "N3")
CONDITIONS = ("explicit", "implicit")
ANSWER, ACK = "answer", "ack"
INELIGIBLE = (
    "active_at_question_start",
    "onset_during_question",
    "no_onset_in_gap",
    "silent_at_resolution_start",
)


class ScoringError(ValueError):
    """Input the scorer must reject (SPEC §8 row 20): duplicates, empty segments, missing runs."""


@dataclass(frozen=True)
class Turn:
    index: int
    label: str
    start: int  # ms
    end: int  # ms


@dataclass
class Run:
    scenario_id: str
    condition: str
    turns: list[Turn]
    segments: list[Segment] = field(default_factory=list)
    pair_id: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.scenario_id, self.condition

    @classmethod
    def from_gt(cls, gt: Mapping, segments: Sequence[Sequence[float]] = ()) -> Run:
        """A GT run dict (times in seconds) and raw segments in seconds -> ms and §4-normalised."""
        turns = [Turn(int(t["index"]), t["label"], seg.to_ms(t["start"]), seg.to_ms(t["end"]))
                 for t in gt["turns"]]  # fmt: skip
        return cls(
            scenario_id=gt["scenario_id"],
            condition=gt["condition"],
            turns=sorted(turns, key=lambda t: t.start),
            segments=seg.normalise(seg.segments_to_ms(segments)),
            pair_id=gt.get("pair_id") or gt["scenario_id"],
        )


def rate(count: int, total: int) -> dict:
    """{count, total, pct}: pct = 100 count / total to 2 decimals, half up; null when total = 0."""
    if total == 0:
        return {"count": count, "total": 0, "pct": None}
    hundredths = (2 * count * 10000 + total) // (2 * total)  # exact half-up
    return {"count": count, "total": total, "pct": hundredths / 100}


# ---------------------------------------------------------------------------------------------
# One run


def _next_start(run: Run, turn: Turn) -> int | None:
    later = [t.start for t in run.turns if t.start > turn.start]
    return min(later) if later else None


def answer_spans(segments: Sequence[Segment], *, t_start: int, t_end: int, next_start: int):
    """SPEC §6.3 (our decision): episodes active at e_T or starting in (e_T, next turn start),
    clipped to [T start, next turn start), in order; transcribed concatenated."""
    chosen = [(s, e) for s, e in segments if (s <= t_end < e) or (t_end < s < next_start)]
    return seg.clipped(chosen, t_start, next_start)


def t_outcome(run: Run, turn: Turn) -> dict:
    """Fresh onset and presence of the response to the T turn (§6.1, §6.2)."""
    segments, e_t = run.segments, turn.end
    active = seg.active(segments, e_t)
    onset = seg.onset_in(segments, e_t, e_t + W_T_MS)
    present = active or onset
    next_start = _next_start(run, turn)
    if next_start is None:
        raise ScoringError(f"run {run.scenario_id} ({run.condition}): the T turn is the last turn")
    spans = answer_spans(segments, t_start=turn.start, t_end=e_t, next_start=next_start)
    return {
        "turn_index": turn.index,
        "t_start": turn.start,
        "t_end": e_t,
        "fresh": (not active) and onset,
        "present": present,
        "active_at_end": active,
        "spans": [list(span) for span in spans] if present else [],
    }


def silence_window(run: Run, turn: Turn) -> dict:
    """One N1-N3 window [s_w, e_w + 0.5 s) (§6.4): speech in it and its clipped fragments."""
    start, end = turn.start, turn.end + POST_MS
    fragments = seg.clipped(run.segments, start, end)
    return {
        "turn_index": turn.index,
        "label": turn.label,
        "start": start,
        "end": end,
        "speech": bool(fragments),
        "spans": [list(f) for f in fragments],
    }


def n4_event(run: Run, question: Turn, resolution: Turn) -> dict:
    """Window response (§6.5) and answering-window yield (§6.6) for one N4Q/N4R pair."""
    s = run.segments
    q_s, q_e, r_s, r_e = question.start, question.end, resolution.start, resolution.end
    reason = None
    if seg.active(s, q_s):
        reason = "active_at_question_start"
    elif seg.overlaps(s, q_s, q_e):
        reason = "onset_during_question"
    elif not seg.onset_in(s, q_e, q_e + GAP_MS):
        reason = "no_onset_in_gap"
    elif not seg.active(s, r_s):
        reason = "silent_at_resolution_start"
    deadline = r_s + DEADLINE_MS
    until = max(deadline, r_e + POST_MS)  # a short N4R never shortens the 2 s deadline
    yielded = failure = None
    if reason is None:
        if seg.active(s, deadline):
            yielded, failure = False, "still_voicing"
        elif seg.overlaps(s, deadline, until):
            yielded, failure = False, "resumed"
        else:
            yielded = True
    return {
        "question_index": question.index,
        "resolution_index": resolution.index,
        "window_response": seg.overlaps(s, q_s, q_e + GAP_MS),
        "eligible": reason is None,
        "ineligible_reason": reason,
        "deadline": deadline,
        "until": until,
        "yielded": yielded,
        "failure": failure,
    }


def run_timing(run: Run) -> dict:
    """Everything the VAD decides for one run, and the items that need ASR + a judge."""
    turns = sorted(run.turns, key=lambda t: t.start)
    t_turns = [t for t in turns if t.label == "T"]
    if len(t_turns) != 1:
        raise ScoringError(f"run {run.scenario_id} ({run.condition}) has {len(t_turns)} T turns")
    events = [
        n4_event(run, q, r)
        for q, r in zip(turns, turns[1:], strict=False)
        if q.label == "N4Q" and r.label == "N4R"
    ]
    return {
        "scenario_id": run.scenario_id,
        "condition": run.condition,
        "pair_id": run.pair_id or run.scenario_id,
        "t": t_outcome(run, t_turns[0]),
        "windows": [silence_window(run, t) for t in turns if t.label in SILENCE_LABELS],
        "n4": events,
    }


def judgment_items(timing: Mapping) -> list[dict]:
    """One item per present T (kind answer) and per window with speech (kind ack): a stable
    slot, the turn, and the spans (ms) whose audio is transcribed and judged."""
    items = []
    t = timing["t"]
    if t["present"]:
        items.append({"slot": f"answer-{t['turn_index']}", "kind": ANSWER,
                      "turn_index": t["turn_index"], "spans": t["spans"]})  # fmt: skip
    for window in timing["windows"]:
        if window["speech"]:
            items.append({"slot": f"ack-{window['turn_index']}", "kind": ACK,
                          "turn_index": window["turn_index"], "spans": window["spans"],
                          "label": window["label"]})  # fmt: skip
    return items


# ---------------------------------------------------------------------------------------------
# A condition


Verdicts = Mapping[tuple[str, str, int, str], str]  # (scenario, condition, turn, kind) -> outcome


def score_condition(timings: Iterable[Mapping], verdicts: Verdicts, *, complete: bool = True):
    """The results of one condition from its runs' timings and the judge outcomes."""
    counts: Counter = Counter()
    by_label = {label: [0, 0] for label in SILENCE_LABELS}
    answer_failures: Counter = Counter()
    silence_failures: Counter = Counter()
    ineligible: Counter = Counter()
    yield_failures: Counter = Counter()
    used, missing = set(), []
    for timing in timings:
        run = (timing["scenario_id"], timing["condition"])
        t = timing["t"]
        counts["t"] += 1
        counts["fresh"] += t["fresh"]
        counts["present"] += t["present"]
        counts["already_speaking"] += t["active_at_end"]
        if t["present"]:
            key = (*run, t["turn_index"], ANSWER)
            outcome = verdicts.get(key, "missing")
            used.add(key)
            if outcome == "missing":
                missing.append({"scenario_id": run[0], "condition": run[1],
                                "turn_index": t["turn_index"], "kind": ANSWER})  # fmt: skip
            if outcome == "correct":
                counts["correct"] += 1
            elif outcome != "incorrect":
                answer_failures[outcome] += 1
        for window in timing["windows"]:
            passed = not window["speech"]
            if window["speech"]:
                key = (*run, window["turn_index"], ACK)
                outcome = verdicts.get(key, "missing")
                used.add(key)
                if outcome == "missing":
                    missing.append({"scenario_id": run[0], "condition": run[1],
                                    "turn_index": window["turn_index"], "kind": ACK})  # fmt: skip
                passed = outcome == "acknowledgement"
                if passed:
                    counts["acknowledged"] += 1
                else:
                    silence_failures[outcome] += 1
            counts["windows"] += 1
            counts["passed"] += passed
            by_label[window["label"]][0] += passed
            by_label[window["label"]][1] += 1
        for event in timing["n4"]:
            counts["n4"] += 1
            counts["window_response"] += event["window_response"]
            if event["eligible"]:
                counts["eligible"] += 1
                counts["yielded"] += bool(event["yielded"])
                if event["failure"]:
                    yield_failures[event["failure"]] += 1
            else:
                ineligible[event["ineligible_reason"]] += 1
    unused = sorted(set(verdicts) - used)
    yield_rate = rate(counts["yielded"], counts["eligible"])
    if counts["eligible"] < N_MIN:  # §6.6: not reported below 30 eligible events
        yield_rate = {**yield_rate, "pct": None, "unreported_value": yield_rate["pct"]}
    return {
        "runs": counts["t"],
        "fresh_onset": rate(counts["fresh"], counts["t"]),
        "presence": rate(counts["present"], counts["t"]),
        "already_speaking": counts["already_speaking"],
        "accuracy": rate(counts["correct"], counts["present"]),
        "accuracy_not_correct": dict(sorted(answer_failures.items())),
        "silence": rate(counts["passed"], counts["windows"]),
        "silence_by_label": {label: rate(*v) for label, v in by_label.items()},
        "silence_acknowledged": counts["acknowledged"],
        "silence_failures": dict(sorted(silence_failures.items())),
        "window_response": rate(counts["window_response"], counts["n4"]),
        "yield": yield_rate,
        "yield_ineligible": {reason: ineligible[reason] for reason in INELIGIBLE},
        "yield_failures": {kind: yield_failures[kind] for kind in ("still_voicing", "resumed")},
        "complete": complete and not missing,
        "missing_judgments": missing,
        "unused_judgments": [list(key) for key in unused],
    }


def paired_presence(timings: Iterable[Mapping]) -> dict:
    """§6.7 over pair ids present in both conditions: presence difference (explicit - implicit,
    percentage points) and the exact McNemar p on the discordant pairs."""
    presence: dict[str, dict[str, bool]] = {}
    for timing in timings:
        presence.setdefault(timing["pair_id"], {})[timing["condition"]] = timing["t"]["present"]
    pairs = [p for p in presence.values() if len(p) == 2]
    b = sum(p["explicit"] and not p["implicit"] for p in pairs)
    c = sum(p["implicit"] and not p["explicit"] for p in pairs)
    return {
        "pairs": len(pairs),
        "both": sum(p["explicit"] and p["implicit"] for p in pairs),
        "neither": sum(not p["explicit"] and not p["implicit"] for p in pairs),
        "explicit_only": b,
        "implicit_only": c,
        "diff_pp": None if not pairs else float(Fraction(100 * (b - c), len(pairs))),
        "p": mcnemar_exact(b, c) if pairs else None,
    }


def score(
    timings: Sequence[Mapping],
    verdicts: Verdicts,
    *,
    expected: Mapping[tuple[str, str], Run] | None = None,
    allow_missing: bool = False,
) -> dict:
    """Results per condition and the paired comparison. A run of ``expected`` (GT runs by
    (scenario, condition)) without a timing is an error (SPEC §8 row 20): a missing run must not
    look like perfect silence. ``allow_missing`` (debugging) scores it as silent instead and
    marks the results incomplete."""
    seen = Counter((t["scenario_id"], t["condition"]) for t in timings)
    duplicates = sorted(key for key, n in seen.items() if n > 1)
    if duplicates:
        raise ScoringError(f"duplicate runs: {', '.join(f'{s} ({c})' for s, c in duplicates)}")
    absent = sorted(set(expected or ()) - set(seen))
    if absent and not allow_missing:
        names = ", ".join(f"{s} ({c})" for s, c in absent[:10])
        raise ScoringError(f"{len(absent)} runs missing: {names}")
    if absent:
        silent = [Run(**{**vars(expected[key]), "segments": []}) for key in absent]
        timings = [*timings, *(run_timing(run) for run in silent)]
    results = {}
    for condition in CONDITIONS:
        chosen = [t for t in timings if t["condition"] == condition]
        if chosen or any(c == condition for _, c in absent):
            results[condition] = score_condition(
                chosen,
                {k: v for k, v in verdicts.items() if k[1] == condition},
                complete=not any(c == condition for _, c in absent),
            )
    results["paired_presence"] = paired_presence(timings)
    results["complete"] = not absent and all(
        r["complete"] for k, r in results.items() if k in CONDITIONS
    )
    return results
