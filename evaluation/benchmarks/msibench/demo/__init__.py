"""The demo: an invented release with audio that plays, stand-in judge templates written by code
(a real import reads the harness's own from its checkout), and uploads of invented systems.
Nothing here comes from the benchmark; see synthetic.py."""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path

from ..release import read_release
from .synthetic import synthetic_predictions, write_release

DEMO_SIZE = {"scenes_per_pattern": 1, "cases_per_scene": 3}  # 36 cases, 18 per language

DEMO_SYSTEM_TEMPLATE = """\
Demo stand-in for the judge's system message, written by Floorboard's demo (an import of the
real benchmark reads the harness's own templates from its checkout).

Judge prediction.answer_text and prediction.tool_calls against each rubric atomic criterion, in
order. Answer with one JSON object: {"rationale": string, "atomic_results": [{"passed": boolean,
"rationale": string}, ...]}, one entry per criterion.
"""
DEMO_USER_TEMPLATE = """\
Case: {{ manifest_json }}
Prediction: {{ prediction_json }}
Rubric: {{ rubric_json }}
"""

# (system, profile, languages, run mode, row group, as a zip of two files)
DEMO_SYSTEMS = (
    ("Demo Careful Agent", "strong", ("en", "zh"), "turn-based", "proprietary", False),
    ("Demo Hasty Agent", "weak", ("en", "zh"), "full-duplex", "open-weights", False),
    ("Demo Flaky Agent", "format_errors", ("en",), "turn-based", "open-weights", True),
    ("Demo Quiet Agent", "silent", ("zh",), "turn-based", "proprietary", False),
)


def write_demo_source(directory: Path) -> None:
    root = Path(directory)
    write_release(root, tolerated=False, **DEMO_SIZE)
    templates = root / "templates"
    templates.mkdir(parents=True, exist_ok=True)
    (templates / "judge_system.j2").write_text(DEMO_SYSTEM_TEMPLATE, "utf-8")
    (templates / "judge_user.j2").write_text(DEMO_USER_TEMPLATE, "utf-8")


def demo_specs() -> dict[str, dict]:
    """The demo release's cells (written again without audio: it is deterministic)."""
    with tempfile.TemporaryDirectory(prefix="msi-demo-") as scratch:
        write_release(Path(scratch), audio=False, tolerated=False, **DEMO_SIZE)
        return read_release(Path(scratch), check_audio=False).specs()


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_demo_upload(path: Path, rows: list[dict], *, as_zip: bool, manifest: dict) -> None:
    """One JSONL, or a zip holding the base and hear cells and the speak cells apart (as the
    harness's two runs write them) with a manifest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not as_zip:
        path.write_text(_jsonl(rows), "utf-8")
        return
    speak = [row for row in rows if row["cell_id"].endswith("s")]
    rest = [row for row in rows if not row["cell_id"].endswith("s")]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("run/base_hear.jsonl", _jsonl(rest))
        archive.writestr("run/speak.jsonl", _jsonl(speak))
        archive.writestr("manifest.json", json.dumps(manifest, indent=1))


def demo_runs(directory: Path) -> list[tuple[Path, str, str, dict, dict]]:
    """(upload, system, row group, manifest, options) of each invented system."""
    specs = demo_specs()
    runs = []
    for system, profile, languages, mode, group, as_zip in DEMO_SYSTEMS:
        rows = synthetic_predictions(specs, profile=profile, run_mode=mode, languages=languages)
        manifest = {
            "description": f"Invented system ({profile} profile) for the demo; not a real model.",
            "open_weights": group == "open-weights",
            "full_duplex": mode == "full-duplex",
        }
        name = system.lower().replace(" ", "-") + (".zip" if as_zip else ".jsonl")
        path = Path(directory) / name
        write_demo_upload(path, rows, as_zip=as_zip, manifest=manifest)
        runs.append((path, system, group, manifest, {"mode": mode}))
    return runs
