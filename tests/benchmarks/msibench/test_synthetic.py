"""The invented releases, uploads and judge answers cover what they promise; clips play."""

import json
import wave
from collections import Counter

import numpy as np
import pytest

from evaluation.benchmarks.msibench.demo.synthetic import (
    FULL_SIZE,
    PROFILES,
    SAMPLE_RATE,
    satisfying_calls,
    synthetic_predictions,
    wrap_judge_output,
    write_release,
)
from evaluation.benchmarks.msibench.judge import parse_judge_output
from evaluation.benchmarks.msibench.predictions import read_predictions
from evaluation.benchmarks.msibench.release import read_release
from evaluation.benchmarks.msibench.validator import validate_tool_calls


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("syn") / "release"
    write_release(root)
    return root, read_release(root)  # with audio: every clip must exist


def test_small_release_covers_every_feature_in_each_language(small):
    _, release = small
    for language in ("en", "zh"):
        base = [
            s for s in release.specs().values() if s["kind"] == "base" and s["language"] == language
        ]
        assert {s["pattern_code"] for s in base} == {
            "auth",
            "disc",
            "prior",
            "seq",
            "scope",
            "retr",
        }
        tools = [s["tool_validation"] for s in base]
        assert {t["call_policy"] if t else None for t in tools} == {
            None,
            "no_calls",
            "exact_multiset",
            "required_subset",
        }
        ops = {
            m["op"]
            for t in tools
            if t
            for c in t.get("required_calls", [])
            for m in c["arguments"].values()
        }
        assert ops == {"exact", "number_equal", "one_of", "set_equals"}
        assert any(
            c["optional_null_arguments"] for t in tools if t for c in t.get("required_calls", [])
        )
        assert any(
            t and t["call_policy"] == "required_subset" and not t["required_calls"] for t in tools
        )
        assert any(t and t.get("forbidden_call_names") for t in tools)
        dims = Counter(
            a.get("dimension")
            for s in base
            for r in s["rubrics"].values()
            for a in r["atomic_criteria"]
        )
        assert dims["tool.call_args"] and dims[None]
        assert any(s["answer_judge_input_ids"] for s in base)
        assert any(s["missing_rubric_ids"] for s in base)
        assert any(any(t["role"] == "assistant" for t in s["turns"]) for s in base)
        hear = [
            s for s in release.specs().values() if s["kind"] == "hear" and s["language"] == language
        ]
        assert {s["pattern_code"] for s in hear if s["counts_in_prr"]} == {"disc", "retr"}
        assert any(not s["counts_in_prr"] for s in hear)
    assert "authority.request_authorized_confirmation" in json.dumps(release.rubric_map)


def test_clips_play_as_16k_mono_voiced_speech(small):
    root, release = small
    spec = release.specs()["msi-en-auth-kitchen-001"]
    with wave.open(str(root / spec["turns"][0]["audio"])) as handle:
        assert (handle.getnchannels(), handle.getframerate(), handle.getsampwidth()) == (
            1,
            SAMPLE_RATE,
            2,
        )
        samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16).astype(
            float
        )
    assert len(samples) > SAMPLE_RATE  # over a second for a ten-word line
    frames = samples[: len(samples) // 320 * 320].reshape(-1, 320)
    rms = np.sqrt((frames**2).mean(axis=1))
    assert rms.max() > 3000 and (rms < 0.05 * rms.max()).any()  # syllables with pauses
    spectrum = np.abs(np.fft.rfft(samples))
    freqs = np.fft.rfftfreq(len(samples), 1 / SAMPLE_RATE)
    f0 = freqs[np.argmax(spectrum * (freqs < 300))]
    near = lambda f: spectrum[(freqs > f * 0.9) & (freqs < f * 1.1)].max()  # noqa: E731
    assert near(2 * f0) > 0.2 * near(f0) and near(3 * f0) > 0.1 * near(f0)  # harmonics, not a tone


def test_full_size_has_1152_cases(tmp_path):
    counts = write_release(tmp_path / "full", audio=False, **FULL_SIZE)
    assert counts["cases"] == 1152 and counts["speak"] == 1152
    release = read_release(tmp_path / "full", check_audio=False)
    base = [s for s in release.specs().values() if s["kind"] == "base"]
    per = Counter((s["language"], s["pattern_code"]) for s in base)
    assert set(per.values()) == {96} and len(per) == 12


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_is_a_valid_upload(small, profile):
    _, release = small
    specs = release.specs()
    rows = synthetic_predictions(specs, profile=profile, drop_every=7)
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
    upload = read_predictions([("p.jsonl", text)], specs=specs, run_mode="turn-based")
    assert upload.languages == ["en", "zh"]
    assert len(upload.missing_cell_ids) == len(specs) // 7
    if profile == "silent":
        assert all(
            p.predicted_action == "silent" and p.is_empty for p in upload.predictions.values()
        )
    if profile == "format_errors":
        assert any(p.format_error for p in upload.predictions.values())


def test_satisfying_calls_pass_the_validator(small):
    _, release = small
    for spec in release.specs().values():
        if spec["kind"] == "base" and spec["tool_validation"] is not None:
            calls = satisfying_calls(spec["tool_validation"])
            assert validate_tool_calls(spec=spec["tool_validation"], calls=calls).passed, spec[
                "cell_id"
            ]


@pytest.mark.parametrize(
    "style, ok, passed",
    [
        ("plain", True, [True, False]),
        ("fenced", True, [True, False]),
        ("prose", True, [True, False]),
        ("short", True, [True, False]),
        ("list", False, [False, False]),
        ("string_bool", False, [False, False]),
        ("null_rationale", False, [False, False]),
        ("empty", False, [False, False]),
    ],
)
def test_judge_answer_shapes(style, ok, passed):
    atoms = [{"index": i, "criterion_index": i, "dimension": "d", "scored": True} for i in range(2)]
    result = parse_judge_output(
        wrap_judge_output([True, False], style=style), atoms=atoms, empty_answer=False
    )
    assert result["ok"] is ok and [a["passed"] for a in result["atoms"]] == passed
