"""The test runs' reuse of found voice activity (vad_once.py): the same bytes get what the model
found for them, other bytes go to the model, and Duplex-MPE's tests of the detection always get
the model."""

from __future__ import annotations

import inspect
import io

import numpy as np
import pytest

from evaluation.benchmarks.duplexmpe import vad
from evaluation.speech import silence, speech, to_wav_bytes
from tests.benchmarks.duplexmpe.vad_once import Found, detect_stream_once

RATE = 16000
# The model itself, whatever this process has installed over it.
model_stream = inspect.unwrap(vad.detect_stream)


def wav(text: str, pause: float) -> bytes:
    audio = np.concatenate(
        [
            silence(pause, sample_rate=RATE),
            speech(text, voice="assistant", sample_rate=RATE),
            silence(1.5, sample_rate=RATE),
        ]
    )
    return to_wav_bytes(audio, RATE)


@pytest.fixture
def counted():
    """The real detect_stream, counting the files that reach it."""
    seen: list = []

    def detect_stream(sources, **options):
        def counting():
            for key, source in sources:
                seen.append(key)
                yield key, source

        yield from model_stream(counting(), **options)

    return detect_stream, seen


def found_by(detect_stream, files: dict[str, bytes]) -> dict:
    return dict(detect_stream((key, io.BytesIO(data)) for key, data in files.items()))


def test_the_same_bytes_get_what_the_model_found_and_other_bytes_go_to_it(
    tmp_path, counted, monkeypatch
):
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/leaderboard/test_pages.py::test_a (call)")
    real, seen = counted
    remembered = detect_stream_once(real, Found(tmp_path))
    first = {"a": wav("Good morning, how can I help?", 0.5), "b": wav("Twelve euros.", 1.0)}
    model = [found_by(model_stream, {"x": data})["x"] for data in first.values()]

    once = found_by(remembered, first)
    assert sorted(seen) == ["a", "b"]
    again = found_by(remembered, {"c": first["b"], "d": first["a"], "e": wav("No.", 2.0)})
    assert seen[2:] == ["e"]
    for key, expected in (("a", model[0]), ("b", model[1]), ("c", model[1]), ("d", model[0])):
        result = once.get(key) or again[key]
        assert result.segments == expected.segments and result.segments
        assert result.timestamps == expected.timestamps
        assert result.duration_s == expected.duration_s
    assert again["e"].segments == found_by(model_stream, {"x": wav("No.", 2.0)})["x"].segments


def test_duplex_mpes_tests_of_the_detection_always_get_the_model(tmp_path, counted, monkeypatch):
    real, seen = counted
    remembered = detect_stream_once(real, Found(tmp_path))
    files = {"a": wav("Good morning.", 0.5)}
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/benchmarks/duplexmpe/test_demo.py::t (call)")
    found_by(remembered, files)
    found_by(remembered, files)
    assert seen == ["a"]  # the demo's test is not about the detection: found once
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/benchmarks/duplexmpe/test_vad.py::t (call)")
    found_by(remembered, files)
    assert seen == ["a", "a"]
