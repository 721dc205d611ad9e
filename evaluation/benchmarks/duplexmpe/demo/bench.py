"""Figures for the VAD step: throughput in audio seconds per CPU second, the projected time of
a full submission (4,000 runs of ~100 s), and peak memory over bundles of 400 and 4,000 short,
mostly silent runs (it must not grow with the bundle).

    python -m evaluation.benchmarks.duplexmpe.demo.bench [--runs 16] [--seconds 60] [--batch 16]

Memory is measured in a fresh child process per bundle (tracemalloc peak of Python
allocations, and the process's peak resident set from getrusage), after the audio is written.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from .. import vad
from . import synthetic

FULL_RUNS, FULL_RUN_S = 4000, 100.0
MODULE = "evaluation.benchmarks.duplexmpe.demo.bench"
REPO = Path(__file__).resolve().parents[4]


def _talkative_runs(directory: Path, runs: int, seconds: float) -> list[Path]:
    """Output channels at 24 kHz (so resampling is timed too) with speech about a third of
    the time, like a system that answers and sometimes talks over people."""
    paths = []
    for n in range(runs):
        said, t = [], 1000 + 300 * n % 2000
        while t + 4000 < seconds * 1000:
            text = ("At nine in the evening.", "Actually, I can help with that, let me explain.",
                    "Yes, I would bring them along, just to be safe.")[(n + t // 1000) % 3]  # fmt: skip
            said.append(synthetic.Said(t, t + synthetic.clip_ms(text, speaker="assistant"), text))
            t = said[-1].end + 4000
        path = directory / f"talk{n:03d}.wav"
        synthetic.write_output_channel(path, said, stream_end_ms=int(seconds * 1000),
                                       sample_rate=24000)  # fmt: skip
        paths.append(path)
    return paths


def throughput(*, runs: int = 16, seconds: float = 60.0, batch: int = 16) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        paths = _talkative_runs(Path(tmp), runs, seconds)
        vad.load_session()
        cpu, wall = time.process_time(), time.perf_counter()
        results = vad.detect(paths, batch=batch)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    audio = sum(r.duration_s for r in results)
    rate = audio / cpu
    full_cpu = FULL_RUNS * FULL_RUN_S / rate
    return {
        "runs": runs,
        "audio_s": round(audio, 1),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "batch": batch,
        "audio_s_per_cpu_s": round(rate, 1),
        "projection_4000_runs_of_100_s": {
            "cpu_s": round(full_cpu),
            "one_worker_min": round(full_cpu / 60, 1),
            "four_workers_min": round(full_cpu / 4 / 60, 1),
        },
    }


def _measure_memory(directory: Path, batch: int) -> dict:
    """In this process: VAD over every file of ``directory``, results streamed to a file."""
    vad.load_session()
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    # Listed lazily: holding 4,000 path names would itself show as growth with the bundle.
    paths = (Path(e.path) for e in os.scandir(directory) if e.name.endswith(".flac"))
    count = speech = 0
    with (Path(directory) / "segments.jsonl").open("w") as out:
        for key, result in vad.detect_stream(((p.name, p) for p in paths), batch=batch):
            out.write(json.dumps({"run": key, **result.as_dict()}) + "\n")
            count += 1
            speech += len(result.segments)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "runs": count,
        "runs_with_speech_found": speech,
        "tracemalloc_peak_mb": round(peak / 2**20, 2),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "maxrss_after_model_load_mb": round(baseline_kb / 1024, 1),
    }


def memory(counts=(400, 4000), *, batch: int = 16) -> dict:
    figures = {}
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            synthetic.write_quiet_runs(Path(tmp), count)
            child = subprocess.run(
                [sys.executable, "-m", MODULE, "--memory-child", tmp, "--batch", str(batch)],
                capture_output=True, text=True, check=True, cwd=REPO,
            )  # fmt: skip
            figures[str(count)] = json.loads(child.stdout)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--memory-counts", default="400,4000")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(_measure_memory(Path(args.memory_child), args.batch)))
        return
    counts = tuple(int(c) for c in args.memory_counts.split(",") if c)
    print(json.dumps({
        "throughput": throughput(runs=args.runs, seconds=args.seconds, batch=args.batch),
        "memory": memory(counts, batch=args.batch),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
