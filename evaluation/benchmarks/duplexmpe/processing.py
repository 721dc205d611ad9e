"""The processing steps before judging, per run: voice activity detection and timing (SPEC §4-6),
the input channel a reviewer hears (assembled from the benchmark's clips at the log's times),
and the submission's facts. Transcripts are in transcribing.py.

Storage is reached through ``open_key``/``save_key`` callables so that the step logic stays plain
Python; the plug-in passes Django's default storage.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from evaluation.benchmarks.base import TaskInput

from . import metrics, schedule, vad
from . import segments as seg
from .manifest import parse_scenario
from .upload import MODE_AUDIO, MODE_UNVERIFIED, OUTPUT

VAD_BATCH = 16  # runs side by side in one model call (vad.detect_stream)
INPUT_SAMPLE_RATE = 16000  # the assembled input channel: for listening, not for scoring


def _scenario(task: TaskInput):
    scenario, problems = parse_scenario(task.spec)
    if scenario is None:
        raise ValueError(f"task {task.task_id} does not parse: {problems[:3]}")
    return scenario


def timing_detection(task: TaskInput, segments_ms: Sequence[Sequence[int]]) -> dict:
    """Everything the timing decides for one run, from its log and its normalised segments:
    the GT run (SPEC §3), the log's check with our segments (the wait after T, §2a), the
    per-run timing (§6) and the items the judges need."""
    scenario = _scenario(task)
    segments = seg.normalise([tuple(s) for s in segments_ms])
    log, problems = schedule.parse_log(task.data["log"])
    if log is None:
        raise ValueError(f"run {task.task_id}: its stored log no longer parses: {problems[:3]}")
    problems = schedule.validate_log(log, scenario, segments=segments)
    gt = schedule.gt_run(log, scenario)
    run = metrics.Run.from_gt(gt)
    run.segments = segments
    timing = metrics.run_timing(run)
    items = metrics.judgment_items(timing)
    return {
        "segments": [list(s) for s in segments],
        "gt": gt,
        "log_problems": problems,
        "timing": timing,
        "items": items,
        # flat, for the drill-down's filters and columns
        "t_present": timing["t"]["present"],
        "t_fresh": timing["t"]["fresh"],
        "windows_with_speech": sum(w["speech"] for w in timing["windows"]),
        "speech_in_windows": any(w["speech"] for w in timing["windows"]),
    }


def vad_step(
    tasks: Sequence[TaskInput],
    *,
    open_key: Callable[[str], IO[bytes]],
    config: vad.VadConfig = vad.DEFAULT_CONFIG,
    batch=VAD_BATCH,
) -> dict[str, dict]:
    """Silero VAD over the output channels of a chunk of runs, ``batch`` at a time through the
    model, each read from storage as it goes (``open_key`` gives a seekable file); runs of a
    low-trust upload take their submitted segments instead."""
    found: dict[str, dict] = {}
    audio = [t for t in tasks if t.data.get("mode") == MODE_AUDIO]
    handles: dict[str, IO[bytes]] = {}

    def sources():
        for task in audio:
            handles[task.task_id] = open_key(task.assets[OUTPUT])
            yield task.task_id, handles[task.task_id]

    by_id = {t.task_id: t for t in tasks}
    identity = vad.identity(config)
    try:
        for task_id, result in vad.detect_stream(sources(), config=config, batch=batch):
            handles.pop(task_id).close()
            if result.error:
                raise ValueError(f"run {task_id}: {result.error}")
            found[task_id] = {
                "mode": MODE_AUDIO,
                "vad": identity,
                "duration_s": result.duration_s,
                **timing_detection(by_id[task_id], result.segments),
            }
    finally:
        for handle in handles.values():
            handle.close()
    for task in tasks:
        if task.data.get("mode") == MODE_UNVERIFIED:
            submitted = seg.segments_to_ms(task.data.get("segments") or [])
            found[task.task_id] = {
                "mode": MODE_UNVERIFIED,
                "vad": {"source": "segments as submitted (normalised as SPEC §4)"},
                "duration_s": None,
                **timing_detection(task, submitted),
            }
        elif task.task_id not in found:
            found[task.task_id] = {}  # absent from a partial upload: scored as silence later
    return found


# --- The input channel ------------------------------------------------------------------------


def input_key(task: TaskInput) -> str | None:
    """A storage key named by what the audio is made of (the clips' keys and the log's times),
    so that assembling it again finds it done; None when a clip is not stored."""
    scenario = _scenario(task)
    clips = [scenario.preamble_clip, *(t.clip for t in scenario.turns)]
    if any(clip not in task.assets for clip in clips) or "log" not in task.data:
        return None
    made_of = json.dumps(
        {"clips": [task.assets[c] for c in clips], "log": task.data["log"],
         "rate": INPUT_SAMPLE_RATE},
        sort_keys=True,
    )  # fmt: skip
    return f"duplexmpe/input/{hashlib.sha256(made_of.encode()).hexdigest()}.wav"


def input_step(
    tasks: Sequence[TaskInput],
    *,
    exists: Callable[[str], bool],
    open_key: Callable[[str], IO[bytes]],
    save_key: Callable[[str, IO[bytes]], str],
) -> dict[str, dict]:
    """For each run, the input channel (what the model heard) as its own stored WAV."""
    found = {}
    for task in tasks:
        key = input_key(task)
        if key is None:
            found[task.task_id] = {"input_audio": None}
            continue
        if not exists(key):
            log, _ = schedule.parse_log(task.data["log"])
            with tempfile.TemporaryFile() as handle, contextlib.ExitStack() as opened:

                def open_clip(path: str, assets=task.assets):
                    return opened.enter_context(open_key(assets[path]))

                schedule.write_input_channel(
                    handle,
                    log=log,
                    scenario=_scenario(task),
                    open_clip=open_clip,
                    sample_rate=INPUT_SAMPLE_RATE,
                )
                handle.seek(0)
                key = save_key(key, handle)
        found[task.task_id] = {"input_audio": {"key": key, "sample_rate": INPUT_SAMPLE_RATE}}
    return found


# --- The submission's facts -------------------------------------------------------------------


def summary_facts(tasks: Sequence[TaskInput]) -> dict:
    """How this submission was scored, in words for its page and its board row."""
    modes = Counter(t.data.get("mode") for t in tasks if t.data)
    sources = Counter(
        found.get("source", "")
        for t in tasks
        for found in (t.detection.get("transcripts") or {}).values()
    )
    vads = {json.dumps(t.detection["vad"], sort_keys=True) for t in tasks if "vad" in t.detection}
    unverified = bool(modes[MODE_UNVERIFIED])
    return {
        "unverified": unverified,
        "scored_from": (
            "segments, transcripts and verdicts as submitted (unverified)"
            if unverified
            else "the output audio: voice activity detected here"
        ),
        "vad": "; ".join(_vad_text(json.loads(v)) for v in sorted(vads)) or "none",
        "transcripts": "; ".join(f"{s} ({n})" for s, n in sorted(sources.items())) or "none",
        "log_disagreements": sum(bool(t.detection.get("log_problems")) for t in tasks),
    }


def _vad_text(identity: Mapping) -> str:
    if "model" not in identity:
        return identity.get("source", "")
    return (
        f"{identity['model']}, sha256 {identity['sha256'][:12]}, threshold "
        f"{identity['threshold']}, min speech {identity['min_speech_duration_ms']} ms, "
        f"min silence {identity['min_silence_duration_ms']} ms, no padding"
    )
