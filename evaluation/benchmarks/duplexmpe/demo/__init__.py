"""The demo: an invented release (synthetic scenarios with spoken clips) and uploads of invented
systems whose audio plays. Everything comes from synthetic.py; nothing is real data.

The audio uploads carry ``transcripts/`` made from the simulated systems' record of what they
said, labelled as such, so the demo needs no ASR service; the low-trust upload is built from the
same record and the offline judge, and shows as unverified.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path

from evaluation.benchmarks.base import DemoRun

from .. import metrics, schedule
from .. import segments as seg
from ..manifest import MANIFEST_FILE, read_manifest
from . import offline, synthetic

# 32 scenarios give a well-behaved system more than 30 eligible N4 events per condition, so
# the demo shows a reported yield as well as the rule that withholds a smaller one.
DEMO_SCENARIOS = 32
DEMO_SEED = 7
DEMO_PREAMBLE = "You are Aria. Answer only what is asked of you; otherwise stay quiet."
CLIP_RATE, OUTPUT_RATE = 16000, 16000
TRANSCRIPT_NAME = "the demo's record of what it said (synthetic; not an ASR)"
SYSTEMS = (
    {"name": "Attentive Duplex (synthetic)", "profile": "good", "seed": 1},
    {"name": "Literal Duplex (synthetic)", "profile": "literal", "seed": 4},
    {"name": "Chatty Duplex (synthetic)", "profile": "chatty", "seed": 2},
    {"name": "Slow Duplex (synthetic)", "profile": "late", "seed": 3},
)
SELF_REPORTED = {"name": "Chatty Duplex, self-measured (synthetic)", "profile": "chatty", "seed": 2}
SYSTEM_MANIFEST = {
    "organization": "Demo Lab (fictional)",
    "architecture": "end-to-end",
    "full_duplex": True,
    "open_weights": True,
}


def demo_scenarios(count: int = DEMO_SCENARIOS):
    return synthetic.scenarios(count, seed=DEMO_SEED, preamble=DEMO_PREAMBLE)


def write_source(directory: Path, *, count: int = DEMO_SCENARIOS) -> None:
    directory = Path(directory)
    if (directory / MANIFEST_FILE).is_file():
        return  # written before: the release does not change
    synthetic.write_source(directory, demo_scenarios(count), sample_rate=CLIP_RATE)


def _zip(source: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source).as_posix())
    return target


def write_audio_upload(target: Path, runs, *, profile: str, seed: int, manifest: dict) -> Path:
    """audio/, schedule/ and transcripts/ (from what the system said) for every run, zipped."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spoken = synthetic.write_submission(work, runs, profile=profile, seed=seed,
                                            sample_rate=OUTPUT_RATE)  # fmt: skip
        (work / "transcripts").mkdir()
        for stem, said in spoken.items():
            chunks = [{"start": s.start / 1000, "end": s.end / 1000, "text": s.text} for s in said]
            (work / "transcripts" / f"{stem}.json").write_text(
                json.dumps({"asr": TRANSCRIPT_NAME, "chunks": chunks})
            )
        shutil.rmtree(work / "said")
        (work / "manifest.json").write_text(json.dumps(manifest))
        return _zip(work, target)


def write_low_trust_upload(target: Path, runs, *, profile: str, seed: int, manifest: dict):
    """schedule/, segments.jsonl (what the system said, as speech segments) and judgments.jsonl
    (the offline judge over the words said in each span), zipped."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "schedule").mkdir()
        by_key = {run.key: run for run in runs}
        with (
            (work / "segments.jsonl").open("w") as segments_file,
            (work / "judgments.jsonl").open("w") as judgments_file,
        ):
            for run in runs:
                log, said = synthetic.simulate(run, profile, seed=seed)
                stem = synthetic.run_stem(run)
                (work / "schedule" / f"{stem}.json").write_text(json.dumps(log))
                segments = [[s.start / 1000, s.end / 1000] for s in said]
                segments_file.write(json.dumps({"scenario_id": run.scenario_id,
                                                "condition": run.condition,
                                                "segments": segments}) + "\n")  # fmt: skip
                parsed, _ = schedule.parse_log(log)
                gt_run = metrics.Run.from_gt(schedule.gt_run(parsed, by_key[run.key]), segments)
                for item in metrics.judgment_items(metrics.run_timing(gt_run)):
                    text = " ".join(s.text for s in said
                                    if any(seg.to_ms(s.start / 1000) < b and
                                           seg.to_ms(s.end / 1000) > a
                                           for a, b in item["spans"]))  # fmt: skip
                    raw = offline.judge(item["kind"], transcript=text, gold_answer=run.gold_answer)
                    judgments_file.write(json.dumps({
                        "scenario_id": run.scenario_id, "condition": run.condition,
                        "turn_index": item["turn_index"], "kind": item["kind"],
                        "transcript": text, "raw": raw}) + "\n")  # fmt: skip
        (work / "manifest.json").write_text(json.dumps(manifest))
        return _zip(work, target)


def write_runs(directory: Path, source: Path | None = None) -> list[DemoRun]:
    """The demo's uploads, for the scenarios of ``source`` (the demo release) when given."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    runs = read_manifest(source) if source else demo_scenarios()
    uploads = []
    for system in SYSTEMS:
        path = directory / f"{system['profile']}.zip"
        manifest = {**SYSTEM_MANIFEST, "name": system["name"]}
        write_audio_upload(path, runs, profile=system["profile"], seed=system["seed"],
                           manifest=manifest)  # fmt: skip
        uploads.append(DemoRun(path, system["name"], "full-duplex", manifest))
    path = directory / "self-measured.zip"
    manifest = {**SYSTEM_MANIFEST, "name": SELF_REPORTED["name"]}
    write_low_trust_upload(path, runs, profile=SELF_REPORTED["profile"],
                           seed=SELF_REPORTED["seed"], manifest=manifest)  # fmt: skip
    uploads.append(DemoRun(path, SELF_REPORTED["name"], "full-duplex", manifest))
    return uploads
