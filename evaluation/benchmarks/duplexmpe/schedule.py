"""The scheduler log of a run (SPEC §2), its check against the manifest (§2a), the GT run built
from it (§3), and the input channel a reviewer hears, assembled from the clips at the log's
times.

Log format (JSON, one file per run, times in seconds on the output channel's clock):

    {"scenario_id": "s0001", "condition": "explicit",
     "preamble": {"start": 0.0, "end": 31.9},
     "turns": [{"index": 0, "label": "N2", "start": 32.4, "end": 34.745}, ...],
     "stream_end": 101.2}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ...speech import WavWriter
from . import segments as seg
from .manifest import Scenario, label_problems
from .segments import GAP_MS, POST_MS, W_T_MS, Segment

CLOCK_TOLERANCE_MS = 1  # clip durations and fixed gaps
VAD_TOLERANCE_MS = 100  # the post-T wait, judged with our VAD rather than the scheduler's
ENDPOINT_SILENCE_MS = 2000  # the scheduler's end-of-response rule [P §3.4]
RESPONSE_CAP_MS = 60000  # longest wait after T, counted from the end of T (our reading)
# Our decisions, bounding what one run may make the site store and process: the stream ends at
# most the longest wait after a turn (the 60 s cap, then 2 s of silence) and 10 s more after the
# last turn; the output channel lasts at most 30 s past the stream's end.
STREAM_TAIL_MAX_MS = RESPONSE_CAP_MS + ENDPOINT_SILENCE_MS + 10_000
AUDIO_TAIL_MAX_MS = 30_000


@dataclass(frozen=True)
class LogTurn:
    index: int
    label: str
    start: int  # ms
    end: int  # ms


@dataclass(frozen=True)
class SchedulerLog:
    scenario_id: str
    condition: str
    preamble_start: int
    preamble_end: int
    turns: tuple[LogTurn, ...]
    stream_end: int

    @property
    def name(self) -> str:
        return f"run {self.scenario_id} ({self.condition})"


def _time(value) -> int | None:
    return seg.to_ms(value) if seg.is_time(value) else None


def parse_log(data, *, where: str = "") -> tuple[SchedulerLog | None, list[str]]:
    """A log dict -> (log, problems); every message names the run and, if any, the turn."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, Mapping):
        return None, [f"{prefix}the scheduler log is not a JSON object"]
    name = f"run {data.get('scenario_id')} ({data.get('condition')})"
    problems: list[str] = []

    def problem(message: str, turn: int | None = None) -> None:
        problems.append(f"{prefix}{name}{f' turn {turn}' if turn is not None else ''}: {message}")

    preamble = data.get("preamble") if isinstance(data.get("preamble"), Mapping) else {}
    p_start, p_end = _time(preamble.get("start")), _time(preamble.get("end"))
    if p_start is None or p_end is None:
        problem("preamble needs numeric start and end (seconds)")
    stream_end = _time(data.get("stream_end"))
    if stream_end is None:
        problem("stream_end must be a number of seconds")
    turns = []
    raw = data.get("turns") if isinstance(data.get("turns"), list) else None
    if not raw:
        problem("turns must be a non-empty list")
    for position, t in enumerate(raw or []):
        if not isinstance(t, Mapping):
            problem("not a JSON object", position)
            continue
        start, end = _time(t.get("start")), _time(t.get("end"))
        if start is None or end is None:
            problem("start and end must be numbers of seconds", position)
            continue
        if end <= start:
            problem(f"ends at {end / 1000} s, not after its start {start / 1000} s", position)
        turns.append(LogTurn(t.get("index"), t.get("label"), start, end))
    if problems:
        return None, problems
    return SchedulerLog(str(data.get("scenario_id")), str(data.get("condition")), p_start, p_end,
                        tuple(turns), stream_end), []  # fmt: skip


def response_end(segments: Sequence[Segment], t_end: int) -> int | None:
    """Where the scheduler sees the response to T finish: from the episode active at e_T or the
    first starting within 5 s after it, through every episode that starts less than 2 s after
    the speech before it ended. None when there is no response."""
    ordered = sorted(segments)
    first = next(
        (i for i, (s, e) in enumerate(ordered) if s <= t_end < e or t_end < s <= t_end + W_T_MS),
        None,
    )
    if first is None:
        return None
    end = ordered[first][1]
    for s, e in ordered[first + 1 :]:
        if s >= end + ENDPOINT_SILENCE_MS:
            break
        end = max(end, e)
    return end


def expected_gap_after(
    label: str, turn_end: int, segments: Sequence[Segment] | None
) -> tuple[int | None, int]:
    """(expected gap to the next turn in ms, tolerance); None when it cannot be known (the gap
    after T without segments)."""
    if label == "N4Q":
        return GAP_MS, CLOCK_TOLERANCE_MS
    if label != "T":
        return POST_MS, CLOCK_TOLERANCE_MS
    if segments is None:
        return None, VAD_TOLERANCE_MS
    end = response_end(segments, turn_end)
    if end is None:
        return W_T_MS, VAD_TOLERANCE_MS
    return min(end + ENDPOINT_SILENCE_MS, turn_end + RESPONSE_CAP_MS) - turn_end, VAD_TOLERANCE_MS


def validate_log(
    log: SchedulerLog,
    scenario: Scenario,
    *,
    segments: Sequence[Segment] | None = None,
    audio_duration_s: float | None = None,
) -> list[str]:
    """SPEC §2a. ``segments`` (our normalised VAD episodes, ms) check the wait after T; without
    them that one gap is not checked. Returns every problem, each naming the run and turn."""
    problems: list[str] = []

    def problem(message: str, turn: int | None = None) -> None:
        where = f" turn {turn}" if turn is not None else ""
        problems.append(f"{log.name}{where}: {message}")

    def off(actual: int, expected: int, tolerance: int) -> bool:
        return abs(actual - expected) > tolerance

    if (log.scenario_id, log.condition) != scenario.key:
        problem(f"does not belong to {scenario.name}")
        return problems
    if log.preamble_start != 0:
        problem(f"the preamble starts at {log.preamble_start / 1000} s, expected 0 s")
    length = log.preamble_end - log.preamble_start
    if off(length, scenario.preamble_ms, CLOCK_TOLERANCE_MS):
        problem(f"the preamble lasts {length / 1000} s, its clip {scenario.preamble_ms / 1000} s")
    if len(log.turns) != len(scenario.turns):
        problem(f"has {len(log.turns)} turns, the manifest {len(scenario.turns)}")
    for position, (turn, planned) in enumerate(zip(log.turns, scenario.turns, strict=False)):
        if turn.index != planned.index:
            problem(f"index is {turn.index!r}, expected {planned.index}", position)
        if turn.label != planned.label:
            problem(f"label is {turn.label!r}, the manifest says {planned.label}", position)
        if off(turn.end - turn.start, planned.duration_ms, CLOCK_TOLERANCE_MS):
            problem(
                f"lasts {(turn.end - turn.start) / 1000} s, its clip {planned.duration_ms / 1000} s",
                position,
            )
    for position, message in label_problems([str(t.label) for t in log.turns]):
        problem(message, position)
    previous_label, previous_end = None, log.preamble_end
    for position, turn in enumerate(log.turns):
        gap = turn.start - previous_end
        if previous_label is None:
            expected, tolerance = POST_MS, CLOCK_TOLERANCE_MS
        else:
            expected, tolerance = expected_gap_after(previous_label, previous_end, segments)
        if expected is not None and off(gap, expected, tolerance):
            after = "the preamble" if previous_label is None else f"turn {position - 1}"
            problem(
                f"starts {gap / 1000} s after {after}, expected {expected / 1000} s "
                f"(+-{tolerance / 1000} s)",
                position,
            )
        previous_label, previous_end = turn.label, turn.end
    if log.turns and log.stream_end < log.turns[-1].end:
        problem(f"stream_end {log.stream_end / 1000} s is before the last turn ends")
    if log.turns and log.stream_end > log.turns[-1].end + STREAM_TAIL_MAX_MS:
        problem(
            f"stream_end {log.stream_end / 1000} s is more than {STREAM_TAIL_MAX_MS / 1000} s "
            "after the last turn ends, longer than the scheduler ever waits"
        )
    if audio_duration_s is not None and seg.to_ms(audio_duration_s) + 1 < log.stream_end:
        problem(f"the output audio lasts {audio_duration_s} s, less than the stream")
    if audio_duration_s is not None and seg.to_ms(audio_duration_s) > (
        log.stream_end + AUDIO_TAIL_MAX_MS
    ):
        problem(
            f"the output audio lasts {audio_duration_s} s, more than {AUDIO_TAIL_MAX_MS / 1000} s "
            f"past the stream's end ({log.stream_end / 1000} s); cut it at the stream's end"
        )
    return problems


def silent_log(scenario: Scenario) -> SchedulerLog:
    """The log the scheduler writes for a model that never speaks (SPEC §1): 0.5 s after the
    preamble and after each turn, 5 s after T (no response), 3 s after N4Q. Used to score a run
    missing from a partial upload as silence, the debugging mode of SPEC §8 row 20."""
    start, turns = scenario.preamble_ms + POST_MS, []
    for turn in scenario.turns:
        end = start + turn.duration_ms
        turns.append(LogTurn(turn.index, turn.label, start, end))
        start = end + {"T": W_T_MS, "N4Q": GAP_MS}.get(turn.label, POST_MS)
    return SchedulerLog(scenario.scenario_id, scenario.condition, 0, scenario.preamble_ms,
                        tuple(turns), turns[-1].end + POST_MS)  # fmt: skip


def gt_run(log: SchedulerLog, scenario: Scenario) -> dict:
    """SPEC §3 GT run of a validated log (times in seconds)."""
    return {
        "scenario_id": scenario.scenario_id,
        "condition": scenario.condition,
        "pair_id": scenario.pair_id,
        "turns": [
            {"index": t.index, "label": t.label, "start": t.start / 1000, "end": t.end / 1000}
            for t in log.turns
        ],
    }


def validate_gt_run(gt: Mapping) -> list[str]:
    """SPEC §3: exactly one T, N4Q and N4R adjacent both ways, turns not overlapping."""
    name = f"run {gt.get('scenario_id')} ({gt.get('condition')})"
    turns = sorted(gt.get("turns") or [], key=lambda t: seg.to_ms(t["start"]))
    problems = []
    for position, message in label_problems([t["label"] for t in turns]):
        where = "" if position is None else f" turn {turns[position]['index']}"
        problems.append(f"{name}{where}: {message}")
    for before, after in zip(turns, turns[1:], strict=False):
        if seg.to_ms(after["start"]) < seg.to_ms(before["end"]):
            problems.append(f"{name} turn {after['index']}: overlaps turn {before['index']}")
    return problems


# ---------------------------------------------------------------------------------------------
# The input channel


def _clip_blocks(source, sample_rate: int, block: int = 1 << 15):
    """Mono float32 blocks of a clip at ``sample_rate`` (downmixed, resampled as it streams)."""
    import soundfile
    import soxr

    with soundfile.SoundFile(source) as audio:
        resampler = None
        if audio.samplerate != sample_rate:
            resampler = soxr.ResampleStream(audio.samplerate, sample_rate, 1, dtype="float32")
        while True:
            data = audio.read(block, dtype="float32", always_2d=True)
            last = len(data) < block
            mono = np.ascontiguousarray(data.mean(axis=1, dtype=np.float32))
            if resampler is not None:
                mono = resampler.resample_chunk(mono, last=last)
            yield mono
            if last:
                return


def write_input_channel(
    handle: BinaryIO,
    *,
    log: SchedulerLog,
    scenario: Scenario,
    open_clip: Callable[[str], object],
    sample_rate: int = 24000,
) -> None:
    """What the model heard: the preamble and every turn's clip placed at the log's start
    times, silence between, ``stream_end`` long; 16-bit mono WAV streamed to ``handle``.
    ``open_clip(path)`` gives a path or binary file for a manifest clip path."""
    total = int(round(log.stream_end * sample_rate / 1000))
    writer = WavWriter(handle, sample_rate=sample_rate, frames=total)
    placed = [(log.preamble_start, scenario.preamble_clip)]
    placed += [(t.start, p.clip) for t, p in zip(log.turns, scenario.turns, strict=True)]
    cursor = 0
    for position, (start_ms, clip) in enumerate(placed):
        start = min(total, int(round(start_ms * sample_rate / 1000)))
        stop = total
        if position + 1 < len(placed):
            stop = min(total, int(round(placed[position + 1][0] * sample_rate / 1000)))
        writer.write_silence(max(0, start - cursor))
        cursor = max(cursor, start)
        for block in _clip_blocks(open_clip(clip), sample_rate):
            room = stop - cursor
            if room <= 0:
                break
            writer.write(block[:room])
            cursor += min(room, len(block))
    writer.write_silence(total - cursor)
    writer.close()
