"""The upload: validation against the manifest (every problem named by run, turn and file), the
two modes, and ingest streaming each run's audio on its own."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile

from evaluation.benchmarks.base import UploadLimits
from evaluation.benchmarks.duplexmpe import plugin
from evaluation.benchmarks.duplexmpe.demo import synthetic
from evaluation.bundles import ValidationReport

from .conftest import write_tree, zip_upload

LIMITS = UploadLimits(max_bytes=10 * 1024**3, max_ratio=100.0)


def validate(path: Path, tasks, *, allow_partial=False):
    # As the core's validation makes it: holding the plug-in's bound on a run's spans.
    report = ValidationReport(max_spans_per_run=plugin.max_spans_per_run)
    contents = plugin.validate_upload(path, report, tasks=tasks, allow_partial=allow_partial,
                                      options={}, limits=LIMITS)  # fmt: skip
    return report, contents


def messages(report) -> list[str]:
    return [str(p) for p in report.problems]


@pytest.fixture
def tree(tmp_path, scenarios):
    directory = tmp_path / "upload"
    write_tree(directory, scenarios, profile="good", transcripts=True)
    (directory / "manifest.json").write_text(json.dumps({"organization": "Lab"}))
    return directory


def first_run(scenarios) -> str:
    return synthetic.run_stem(scenarios[0])


def test_a_complete_upload_validates(tree, tmp_path, tasks):
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    assert report.problems == []
    assert contents.present == set(tasks)
    assert contents.missing == []
    assert contents.manifest == {"organization": "Lab"}


def test_runs_under_one_common_folder_validate(tree, tmp_path, tasks):
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip", prefix="mine/"), tasks)
    assert report.problems == []
    assert contents.manifest == {"organization": "Lab"}


def test_a_missing_run_is_rejected_by_name_unless_partial(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    (tree / "audio" / f"{run}.wav").unlink()
    (tree / "schedule" / f"{run}.json").unlink()
    (tree / "transcripts" / f"{run}.json").unlink()
    path = zip_upload(tree, tmp_path / "u.zip")
    report, _ = validate(path, tasks)
    assert [(p.task, p.message) for p in report.problems] == [
        (run, "this run is missing from the upload")
    ]
    report, contents = validate(path, tasks, allow_partial=True)
    assert report.problems == [] and contents.missing == [run]


def test_a_wrong_label_names_the_run_and_turn(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    path = tree / "schedule" / f"{run}.json"
    log = json.loads(path.read_text())
    t_position = next(i for i, t in enumerate(log["turns"]) if t["label"] == "T")
    log["turns"][t_position]["label"] = "N1"
    path.write_text(json.dumps(log))
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    scenario = scenarios[0]
    expected = (
        f"run {scenario.scenario_id} (explicit) turn {t_position}: label is 'N1', the manifest "
        "says T"
    )
    assert expected in [p.message for p in report.problems]
    assert {(p.task, p.file) for p in report.problems} == {(run, f"schedule/{run}.json")}
    assert run not in contents.present


@pytest.mark.parametrize(("shift_ms", "ok"), [(1, True), (2, False)])
def test_clip_durations_hold_to_a_millisecond(tree, tmp_path, tasks, scenarios, shift_ms, ok):
    run = first_run(scenarios)
    path = tree / "schedule" / f"{run}.json"
    log = json.loads(path.read_text())
    last = log["turns"][-1]
    last["end"] = round(last["end"] + shift_ms / 1000, 3)
    log["stream_end"] = max(log["stream_end"], last["end"])
    path.write_text(json.dumps(log))
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    assert report.ok is ok
    if not ok:
        (problem,) = report.problems
        assert problem.task == run and f"turn {len(log['turns']) - 1}: lasts" in problem.message


def test_audio_shorter_than_the_stream_is_rejected(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    audio, rate = soundfile.read(tree / "audio" / f"{run}.wav", dtype="int16")
    soundfile.write(tree / "audio" / f"{run}.wav", audio[: rate * 5], rate, subtype="PCM_16")
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    (problem,) = report.problems
    assert problem.task == run and "less than the stream" in problem.message


def test_float_wav_is_refused_as_not_pcm(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    audio, rate = soundfile.read(tree / "audio" / f"{run}.wav", dtype="float32")
    soundfile.write(tree / "audio" / f"{run}.wav", audio, rate, subtype="FLOAT")
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    (problem,) = report.problems
    assert (problem.task, problem.file) == (run, f"audio/{run}.wav")
    assert problem.message.startswith("not a PCM WAV file")


def test_unknown_runs_audio_without_log_and_bad_transcripts(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    (tree / "audio" / "nosuch__explicit.wav").write_bytes(
        (tree / "audio" / f"{run}.wav").read_bytes()
    )
    (tree / "schedule" / f"{run}.json").unlink()
    other = synthetic.run_stem(scenarios[1])
    (tree / "transcripts" / f"{other}.json").write_text(json.dumps({"chunks": [{"text": 1}]}))
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    found = {(p.task, p.message) for p in report.problems}
    assert ("nosuch__explicit", "no run of this name in the benchmark") in found
    assert (run, f"no schedule/{run}.json (the scheduler's log)") in found
    assert (other, "chunk 0 needs numeric start and end and a text") in found


def test_nothing_recognisable_is_one_clear_problem(tmp_path, tasks):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "notes.txt").write_text("hello")
    report, _ = validate(zip_upload(tmp_path / "t", tmp_path / "u.zip"), tasks)
    (problem,) = report.problems
    assert problem.message.startswith("no run found")
    assert [w.file for w in report.warnings] == ["notes.txt"]


# --- The low-trust upload ---------------------------------------------------------------------


def low_trust_tree(directory: Path, scenarios) -> Path:
    """schedule/ of a silent-ish late system, its segments and one judgment per item."""
    write_tree(directory, scenarios, profile="chatty")
    with (
        (directory / "segments.jsonl").open("w") as seg_file,
        (directory / "judgments.jsonl").open("w") as judg_file,
    ):
        for scenario in scenarios:
            stem = synthetic.run_stem(scenario)
            said = json.loads((directory / "said" / f"{stem}.json").read_text())
            seg_file.write(json.dumps({"scenario_id": scenario.scenario_id,
                                       "condition": scenario.condition,
                                       "segments": [[s["start"], s["end"]] for s in said]}) + "\n")  # fmt: skip
            t = scenario.t_turn()
            judg_file.write(json.dumps({"scenario_id": scenario.scenario_id,
                                        "condition": scenario.condition, "turn_index": t.index,
                                        "kind": "answer", "transcript": "I am not sure.",
                                        "raw": '{"correct": false, "reason": "no"}'}) + "\n")  # fmt: skip
    for folder in ("audio",):
        for path in (directory / folder).iterdir():
            path.unlink()
        (directory / folder).rmdir()
    return directory


def test_a_low_trust_upload_validates(tmp_path, tasks, scenarios):
    tree = low_trust_tree(tmp_path / "lt", scenarios)
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    assert report.problems == []
    assert contents.present == set(tasks)


def test_low_trust_duplicates_and_bad_records_are_rejected(tmp_path, tasks, scenarios):
    tree = low_trust_tree(tmp_path / "lt", scenarios)
    scenario = scenarios[0]
    lines = (tree / "segments.jsonl").read_text().splitlines()
    bad_segment = {"scenario_id": scenario.scenario_id, "condition": "implicit",
                   "segments": [[40.0, 40.0]]}  # fmt: skip
    (tree / "segments.jsonl").write_text(
        "\n".join([lines[0], lines[0], *lines[2:], json.dumps(bad_segment)]) + "\n"
    )
    judgments = (tree / "judgments.jsonl").read_text().splitlines()
    n1 = next(t for t in scenario.turns if t.label == "N1")
    wrong_kind = {"scenario_id": scenario.scenario_id, "condition": scenario.condition,
                  "turn_index": n1.index, "kind": "answer", "transcript": "x", "raw": "{}"}  # fmt: skip
    (tree / "judgments.jsonl").write_text(
        "\n".join([judgments[0], judgments[0], json.dumps(wrong_kind)]) + "\n"
    )
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    text = messages(report)
    run = synthetic.run_stem(scenario)
    implicit = f"{scenario.scenario_id}__implicit"
    assert any(f"segments.jsonl line 2: run {run} is listed twice" in m for m in text)
    # Line 7 replaces the implicit run's line with a segment of no length: refused, so the
    # run has no segments at all.
    assert (
        f"{implicit}: segments.jsonl line 7: segment 0 [40.0, 40.0] does not end after it "
        "starts" in text
    )
    assert f"{implicit}: run missing from segments.jsonl" in text
    assert any(f"judgments.jsonl line 2: run {run} turn" in m and "a second answer" in m
               for m in text)  # fmt: skip
    assert any(f"run {run} turn {n1.index} is N1; a answer judgment belongs to a T turn" in m
               for m in text)  # fmt: skip


def test_audio_and_low_trust_files_together_are_refused(tmp_path, tasks, scenarios):
    tree = low_trust_tree(tmp_path / "lt", scenarios)
    write_tree(tmp_path / "audio-tree", scenarios, profile="chatty")
    (tree / "audio").mkdir()
    for path in (tmp_path / "audio-tree" / "audio").iterdir():
        (tree / "audio" / path.name).write_bytes(path.read_bytes())
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    assert any("not both" in m for m in messages(report))


# --- Ingest -----------------------------------------------------------------------------------


def test_ingest_streams_each_runs_audio_on_its_own(tree, tmp_path, tasks):
    path = zip_upload(tree, tmp_path / "u.zip")
    seen = []
    with path.open("rb") as handle:
        # The engine stores each run's audio before it asks for the next run, as here.
        for item in plugin.ingest(handle, tasks=tasks, limits=LIMITS):
            seen.append(item.task_id)
            ((name, opener, size),) = item.store
            original = (tree / "audio" / f"{item.task_id}.wav").read_bytes()
            with opener() as stream:
                assert stream.read() == original
            assert (name, size) == ("output.wav", len(original))
            assert item.data["mode"] == "audio"
            assert item.data["log"] == json.loads(
                (tree / "schedule" / f"{item.task_id}.json").read_text()
            )
            assert item.data["transcript"]["asr"] == "their-asr-1"
            assert item.files == {}  # nothing else is kept from the upload
    assert seen == sorted(tasks)


def test_ingest_of_a_low_trust_upload_keeps_the_measurements(tmp_path, tasks, scenarios):
    tree = low_trust_tree(tmp_path / "lt", scenarios)
    with zip_upload(tree, tmp_path / "u.zip").open("rb") as handle:
        ingested = {i.task_id: i for i in plugin.ingest(handle, tasks=tasks, limits=LIMITS)}
    run = synthetic.run_stem(scenarios[0])
    said = json.loads((tree / "said" / f"{run}.json").read_text())
    assert ingested[run].store == []
    assert ingested[run].data["mode"] == "unverified"
    assert ingested[run].data["segments"] == [[s["start"], s["end"]] for s in said]
    assert [j["kind"] for j in ingested[run].data["judgments"]] == ["answer"]


def test_the_wav_check_reads_only_the_header(tmp_path):
    """Only the head of each WAV member is decompressed to check it, so validating a 17 GB
    bundle does not inflate its audio."""
    import zipfile

    from evaluation.audio import WAV_HEAD_BYTES
    from evaluation.benchmarks.duplexmpe import upload

    with wave.open(str(tmp_path / "a.wav"), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(16000)
        writer.writeframes(np.zeros(16000 * 30, dtype="<i2").tobytes())  # 960 kB
    with zipfile.ZipFile(tmp_path / "a.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(tmp_path / "a.wav", "audio/x.wav")

    class Counting(zipfile.ZipFile):
        read_bytes = 0

        def open(self, *args, **kwargs):
            member = super().open(*args, **kwargs)
            original = member.read

            def read(n=-1):
                data = original(n)
                Counting.read_bytes += len(data)
                return data

            member.read = read
            return member

    with Counting(tmp_path / "a.zip") as archive:
        assert upload.wav_duration(archive, archive.getinfo("audio/x.wav")) == 30.0
    assert Counting.read_bytes <= WAV_HEAD_BYTES


def test_json_bounds_and_non_finite_times_are_refused(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    path = tree / "schedule" / f"{run}.json"
    log = json.loads(path.read_text())
    log["turns"][0]["start"] = float("nan")
    path.write_text(json.dumps(log))  # Python writes NaN, which is not JSON
    other = synthetic.run_stem(scenarios[1])
    (tree / "schedule" / f"{other}.json").write_text("[" * 5000 + "]" * 5000)
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    found = {p.task: p.message for p in report.problems}
    assert found[run] == "holds a number that is not finite at turns[0].start"
    assert found[other] == "nests 5,000 levels deep; at most 16 are allowed"


def test_a_null_log_transcript_or_manifest_is_refused_like_any_value_not_an_object(
    tree, tmp_path, tasks, scenarios
):
    """A JSON `null` is read, and refused by what it is, never skipped as if unread."""
    run, other = first_run(scenarios), synthetic.run_stem(scenarios[1])
    (tree / "schedule" / f"{run}.json").write_text("null")
    (tree / "transcripts" / f"{other}.json").write_text("null")
    (tree / "manifest.json").write_text("null")
    report, contents = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    found = {(p.task, p.file, p.message) for p in report.problems}
    assert (run, f"schedule/{run}.json", "the scheduler log is not a JSON object") in found
    transcript = 'must be {"asr": "<what produced it>", "chunks": [{"start", "end", "text"}]}'
    assert (other, f"transcripts/{other}.json", transcript) in found
    assert (None, "manifest.json", "must be a JSON object describing the system") in found
    assert run not in contents.present and not report.ok


# --- Bounds on what one run may hold (our decisions, on the benchmark's page) -----------------


def _log(tree: Path, run: str) -> dict:
    return json.loads((tree / "schedule" / f"{run}.json").read_text())


def test_times_beyond_a_day_are_refused_not_a_server_error(tmp_path, tasks, scenarios):
    tree = low_trust_tree(tmp_path / "lt", scenarios)
    run = first_run(scenarios)
    log = _log(tree, run)
    log["stream_end"] = 1e300
    (tree / "schedule" / f"{run}.json").write_text(json.dumps(log))
    lines = (tree / "segments.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["segments"].append([1e300, 1e300 + 1])
    lines[1] = json.dumps(record)
    (tree / "segments.jsonl").write_text("\n".join(lines) + "\n")
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    found = messages(report)
    other = f"{record['scenario_id']}__{record['condition']}"
    last = len(record["segments"]) - 1
    assert (
        f"{other}: segments.jsonl line 2: segment {last} is not [start, end] in seconds "
        "(each within 86,400 s)"
    ) in found
    sid, condition = run.split("__")
    assert (
        f"{run} / schedule/{run}.json: run {sid} ({condition}): stream_end must be a number of "
        "seconds"
    ) in found


def test_a_stream_end_far_after_the_last_turn_is_refused(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    log = _log(tree, run)
    last_end = max(turn["end"] for turn in log["turns"])
    log["stream_end"] = last_end + 72.001
    (tree / "schedule" / f"{run}.json").write_text(json.dumps(log))
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    assert any(
        "is more than 72.0 s after the last turn ends" in p.message and p.task == run
        for p in report.problems
    ), messages(report)
    log["stream_end"] = last_end + 72.0  # the bound itself is allowed
    (tree / "schedule" / f"{run}.json").write_text(json.dumps(log))
    report, _ = validate(zip_upload(tree, tmp_path / "u2.zip"), tasks)
    assert not any("after the last turn ends" in p.message for p in report.problems)


def test_output_audio_far_past_the_streams_end_is_refused(tree, tmp_path, tasks, scenarios):
    run = first_run(scenarios)
    stream_end = _log(tree, run)["stream_end"]
    rate = 16000
    path = tree / "audio" / f"{run}.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * int((stream_end + 30.5) * rate))
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    [problem] = [p for p in report.problems if p.task == run]
    assert "more than 30.0 s past the stream's end" in problem.message


def test_each_runs_segments_and_transcript_chunks_are_reported_for_the_cores_bound(
    tree, tmp_path, tasks, scenarios
):
    """The plug-in declares 5,000 spans a run and counts what each run holds into the report,
    whose bound (the core's validation sets it) refuses more, naming the run and where its
    spans are."""
    assert plugin.max_spans_per_run == 5_000
    run = first_run(scenarios)
    many = [{"start": n * 0.01, "end": n * 0.01 + 0.005, "text": "a"} for n in range(5_001)]
    (tree / "transcripts" / f"{run}.json").write_text(json.dumps({"asr": "x", "chunks": many}))
    report, _ = validate(zip_upload(tree, tmp_path / "u.zip"), tasks)
    counted = {(s.task, s.file, s.what): s.count for s in report.spans}
    assert counted[(run, f"transcripts/{run}.json", "chunks")] == 5_001
    assert (run, f"transcripts/{run}.json", "holds 5,001 chunks; a run of this benchmark holds "
            "at most 5,000") in {(p.task, p.file, p.message) for p in report.problems}  # fmt: skip
    low = low_trust_tree(tmp_path / "lt", scenarios)
    lines = (low / "segments.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["segments"] = [[n * 0.01, n * 0.01 + 0.005] for n in range(5_001)]
    lines[0] = json.dumps(record)
    (low / "segments.jsonl").write_text("\n".join(lines) + "\n")
    report, _ = validate(zip_upload(low, tmp_path / "lt.zip"), tasks)
    stem = f"{record['scenario_id']}__{record['condition']}"
    assert (stem, 5_001, "segments") in {(s.task, s.count, s.what) for s in report.spans}
    assert (
        f"{stem}: segments.jsonl line 1: holds 5,001 segments; a run of this benchmark holds at "
        "most 5,000"
    ) in messages(report)
