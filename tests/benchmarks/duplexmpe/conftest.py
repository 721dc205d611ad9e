"""Builders for the plug-in's tests: a small synthetic release and uploads made from simulated
systems, whose own record of what they said (``said/``) is the independent truth."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from evaluation.benchmarks.duplexmpe.demo import synthetic

SCENARIOS = 3  # 6 runs: every label, both conditions, N4 before and after T


@pytest.fixture(scope="session")
def scenarios():
    return synthetic.scenarios(SCENARIOS, seed=11)


@pytest.fixture(scope="session")
def release_dir(tmp_path_factory, scenarios) -> Path:
    directory = tmp_path_factory.mktemp("release")
    synthetic.write_source(directory, scenarios, sample_rate=16000)
    return directory


@pytest.fixture
def tasks(scenarios) -> dict[str, dict]:
    """What the engine passes to validation: run id -> spec."""
    return {synthetic.run_stem(s): s.as_dict() for s in scenarios}


def write_tree(directory: Path, scenarios, *, profile: str, seed: int = 5, transcripts=False):
    """audio/, schedule/ and said/ (the truth, not part of an upload) for every run; with
    ``transcripts``, transcripts/ made from the truth as the submitter's ASR."""
    spoken = synthetic.write_submission(directory, scenarios, profile=profile, seed=seed,
                                        sample_rate=16000)  # fmt: skip
    if transcripts:
        (directory / "transcripts").mkdir(exist_ok=True)
        for stem, said in spoken.items():
            chunks = [{"start": s.start / 1000, "end": s.end / 1000, "text": s.text} for s in said]
            (directory / "transcripts" / f"{stem}.json").write_text(
                json.dumps({"asr": "their-asr-1", "chunks": chunks})
            )
    return spoken


def zip_upload(directory: Path, target: Path, *, skip=("said",), prefix: str = "") -> Path:
    """Zip an upload tree, leaving out the truth."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            relative = path.relative_to(directory)
            if path.is_file() and relative.parts[0] not in skip:
                archive.write(path, f"{prefix}{relative.as_posix()}")
    return target


def said(directory: Path, stem: str) -> list[dict]:
    return json.loads((directory / "said" / f"{stem}.json").read_text())


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target
