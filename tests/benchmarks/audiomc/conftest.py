"""Fixtures for the Audio MultiChallenge tests: the benchmark's own files beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def shared_audiomc() -> Path:
    """../shared/benchmarks/audiomc beside the checkout, or under $FLOORBOARD_SHARED if set."""
    base = Path(os.environ.get("FLOORBOARD_SHARED") or REPO.parent / "shared")
    return base / "benchmarks" / "audiomc"


@pytest.fixture(scope="session")
def prompt_file() -> Path:
    path = shared_audiomc() / "judge_prompt.txt"
    if not path.is_file():
        pytest.skip(f"the Audio MultiChallenge judge prompt is not at {path}")
    return path


@pytest.fixture(scope="session")
def spec_file() -> Path:
    path = shared_audiomc() / "SPEC.md"
    if not path.is_file():
        pytest.skip(f"the Audio MultiChallenge SPEC is not at {path}")
    return path
