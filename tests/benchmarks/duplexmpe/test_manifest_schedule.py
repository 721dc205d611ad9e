"""Manifest parsing and validation, scheduler logs checked against it (SPEC §2a), GT runs
(SPEC §3), and the input channel assembled from clips."""

from __future__ import annotations

import copy
import io
import json

import numpy as np
import pytest
import soundfile

from evaluation.benchmarks.duplexmpe import manifest as mf
from evaluation.benchmarks.duplexmpe import schedule as sc
from evaluation.benchmarks.duplexmpe import segments as seg
from evaluation.benchmarks.duplexmpe.demo import synthetic as syn


def _line(**changes) -> dict:
    data = syn.scenarios(1)[0].as_dict()  # N2 N1 T N3 N4Q N4R N2
    data.update(changes)
    return data


def _problems(data) -> list[str]:
    try:
        mf.parse_manifest([json.dumps(data)])
    except mf.ManifestError as error:
        return error.problems
    return []


def _relabel(labels):
    data = _line()
    data["turns"] = [{**t, "label": label} for t, label in zip(data["turns"], labels, strict=False)]
    data["turns"] = data["turns"][: len(labels)]
    return data


def test_synthetic_manifests_round_trip(tmp_path):
    runs = syn.scenarios(6)
    mf.write_manifest(tmp_path, runs)
    with (tmp_path / mf.MANIFEST_FILE).open() as handle:
        assert mf.parse_manifest(handle) == runs
    labels = {t.label for r in runs for t in r.turns}
    assert labels == {"T", "N1", "N2", "N3", "N4Q", "N4R"}
    assert {len(r.speakers) for r in runs} == {3, 4}


P = "manifest.jsonl line 1: scenario syn00000 (explicit)"


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["N2", "T", "T", "N3"], f"{P}: has 2 T turns, expected exactly 1"),
        (["N2", "N1", "N3"], f"{P}: has 0 T turns, expected exactly 1"),
        (["T", "N1", "N3"], f"{P} turn 0: T is the first turn"),
        (["N1", "N3", "T"], f"{P} turn 2: T is the last turn"),
        (["N1", "T", "N4Q", "N3"], f"{P} turn 2: N4Q is not immediately followed by N4R"),
        (["N1", "T", "N4R", "N3"], f"{P} turn 2: N4R does not immediately follow an N4Q"),
        (["N1", "T", "N5", "N3"], f"{P} turn 2: label 'N5' is not one of T, N1, N2, N3, N4Q, N4R"),
    ],
)
def test_label_rules_name_the_scenario_and_turn(labels, message):
    assert message in _problems(_relabel(labels))


def test_field_problems_are_each_reported():
    data = _line(gold_answer="", condition="explicit")
    data["speakers"] = data["speakers"] + [{"id": "X", "voice": "v"}, {"id": "Y", "voice": "w"}]
    data["turns"][1]["duration"] = 0
    data["turns"][2]["speaker"] = "Z"
    data["turns"][3]["index"] = 7
    problems = _problems(data)
    assert f"{P}: gold_answer must be a non-empty string" in problems
    assert f"{P}: has 5 speakers, expected 3 or 4" in problems
    assert f"{P} turn 1: duration must be a positive number of seconds" in problems
    assert f"{P} turn 2: speaker 'Z' is not in the speakers list" in problems
    assert f"{P} turn 3: index is 7, expected 3 (turns in order)" in problems
    bad_condition = _problems(_line(condition="both"))
    assert (
        "manifest.jsonl line 1: scenario syn00000 (both): condition must be one of"
        in (bad_condition[0])
    )


def test_a_repeated_run_and_unparseable_lines_are_reported():
    line = json.dumps(_line())
    with pytest.raises(mf.ManifestError) as caught:
        mf.parse_manifest([line, "{oops", line])
    assert caught.value.problems[0].startswith("manifest.jsonl line 2: not JSON")
    assert caught.value.problems[1] == (
        "manifest.jsonl line 3: scenario syn00000 (explicit) repeats line 1"
    )


def test_read_manifest_requires_the_clips(tmp_path):
    runs = syn.scenarios(1)
    syn.write_source(tmp_path, runs[:1], sample_rate=16000)
    assert mf.read_manifest(tmp_path) == runs[:1]
    (tmp_path / runs[0].turns[2].clip).unlink()
    with pytest.raises(mf.ManifestError, match="syn00000 \\(explicit\\) turn 2: clip .* not found"):
        mf.read_manifest(tmp_path)


# --- scheduler logs --------------------------------------------------------------------------


def _simulated(profile="good", n=0):
    run = syn.scenarios(2)[n]
    log, said = syn.simulate(run, profile)
    return run, log, seg.normalise([(s.start, s.end) for s in said])


def _check(run, log, segments):
    parsed, problems = sc.parse_log(log)
    assert problems == []
    return sc.validate_log(parsed, run, segments=segments)


@pytest.mark.parametrize("profile", syn.PROFILES)
def test_simulated_scheduler_logs_validate(profile):
    for n in range(2):
        assert _check(*_simulated(profile, n)) == []


R = "run syn00000 (explicit)"


def _shift_from(log, position, ms):
    for turn in log["turns"][position:]:
        turn["start"] = round(turn["start"] + ms / 1000, 3)
        turn["end"] = round(turn["end"] + ms / 1000, 3)


def test_a_wrong_label_or_index_is_named():
    run, log, segments = _simulated()
    log["turns"][3]["label"] = "N1"
    log["turns"][4]["index"] = 9
    problems = _check(run, log, segments)
    assert f"{R} turn 3: label is 'N1', the manifest says N3" in problems
    assert f"{R} turn 4: index is 9, expected 4" in problems


def test_clip_durations_hold_to_1_ms():
    run, log, segments = _simulated()
    log["turns"][1]["end"] = round(log["turns"][1]["end"] + 0.001, 3)
    _shift_from(log, 2, 1)
    assert _check(run, log, segments) == []  # 1 ms is tolerated
    log["turns"][1]["end"] = round(log["turns"][1]["end"] + 0.001, 3)
    _shift_from(log, 2, 1)
    assert any(p.startswith(f"{R} turn 1: lasts") for p in _check(run, log, segments))


def test_the_half_second_gap_holds_to_1_ms():
    run, log, segments = _simulated()
    _shift_from(log, 1, 2)
    assert f"{R} turn 1: starts 0.502 s after turn 0, expected 0.5 s (+-0.001 s)" in (
        _check(run, log, segments)
    )


def test_the_gap_after_a_question_is_3_s():
    run, log, segments = _simulated()
    _shift_from(log, 5, -2)
    assert f"{R} turn 5: starts 2.998 s after turn 4, expected 3.0 s (+-0.001 s)" in (
        _check(run, log, segments)
    )


def test_the_wait_after_t_follows_our_vad_within_100_ms():
    run, log, segments = _simulated()
    t_end = round(log["turns"][2]["end"] * 1000)
    response_end = sc.response_end(segments, t_end)
    gap = round(log["turns"][3]["start"] * 1000) - t_end
    assert gap == response_end + 2000 - t_end
    _shift_from(log, 3, 100)
    assert _check(run, log, segments) == []
    _shift_from(log, 3, 1)
    assert any(p.startswith(f"{R} turn 3: starts") and "(+-0.1 s)" in p
               for p in _check(run, log, segments))  # fmt: skip


def test_without_a_response_the_scheduler_waits_5_s():
    run, log, segments = _simulated("silent")
    gap = round((log["turns"][3]["start"] - log["turns"][2]["end"]) * 1000)
    assert gap == 5000 and _check(run, log, segments) == []
    # Our VAD hearing a response the scheduler did not: the 5 s wait is now wrong.
    t_end = round(log["turns"][2]["end"] * 1000)
    assert _check(run, log, [(t_end + 1000, t_end + 2000)]) != []


def test_the_wait_after_t_is_capped_at_60_s():
    t_end = 10000
    talk = [(t_end + 500, t_end + 30000), (t_end + 31000, t_end + 70000)]
    assert sc.expected_gap_after("T", t_end, talk) == (60000, 100)
    # Speech resuming 2 s or more after the response is a new episode, not part of it.
    talk = [(t_end + 500, t_end + 3000), (t_end + 5000, t_end + 6000)]
    assert sc.response_end(talk, t_end) == t_end + 3000


def test_log_problems_name_run_and_turn():
    run, log, segments = _simulated()
    broken = copy.deepcopy(log)
    broken["turns"][2]["end"] = broken["turns"][2]["start"]
    assert sc.parse_log(broken)[1][0].startswith(f"{R} turn 2: ends at")
    assert sc.parse_log({**log, "stream_end": "late"})[1] == [
        f"{R}: stream_end must be a number of seconds"
    ]
    parsed, _ = sc.parse_log({**log, "turns": log["turns"][:-1]})
    assert f"{R}: has 6 turns, the manifest 7" in sc.validate_log(parsed, run, segments=segments)
    parsed, _ = sc.parse_log(log)
    short = sc.validate_log(parsed, run, segments=segments, audio_duration_s=10.0)
    assert short == [f"{R}: the output audio lasts 10.0 s, less than the stream"]


def test_gt_run_from_a_log_and_its_checks():
    run, log, _ = _simulated()
    parsed, _ = sc.parse_log(log)
    gt = sc.gt_run(parsed, run)
    assert gt["pair_id"] == "syn00000" and [t["label"] for t in gt["turns"]] == [
        "N2", "N1", "T", "N3", "N4Q", "N4R", "N2"]  # fmt: skip
    assert sc.validate_gt_run(gt) == []
    gt["turns"][3]["start"] = gt["turns"][2]["end"] - 0.5
    gt["turns"][0]["label"] = "T"
    problems = sc.validate_gt_run(gt)
    assert f"{R} turn 3: overlaps turn 2" in problems
    assert f"{R}: has 2 T turns, expected exactly 1" in problems


def test_the_input_channel_places_each_clip_at_its_logged_time(tmp_path):
    runs = syn.scenarios(1)
    syn.write_source(tmp_path, runs[:1], sample_rate=24000)
    run, log, _ = _simulated()
    parsed, _ = sc.parse_log(log)
    out = io.BytesIO()
    sc.write_input_channel(out, log=parsed, scenario=run,
                           open_clip=lambda p: tmp_path / p, sample_rate=24000)  # fmt: skip
    out.seek(0)
    audio, rate = soundfile.read(out, dtype="float32")
    assert rate == 24000 and len(audio) == round(log["stream_end"] * 24000)
    for turn, planned in zip(log["turns"], run.turns, strict=True):
        clip, _ = soundfile.read(tmp_path / planned.clip, dtype="float32")
        start = round(turn["start"] * 24000)
        np.testing.assert_array_equal(audio[start : start + len(clip)], clip)
        assert not audio[start - 240 : start].any()  # silence before each turn
