"""Importing a dataset export: field rules of SPEC §1, errors naming file/row/field (§6 row 5),
parquet and JSONL giving the same tasks, and user-turn audio streamed with its bytes intact."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluation.benchmarks.audiomc.dataset import (
    DatasetError,
    iter_user_audio,
    read_dataset,
)
from evaluation.benchmarks.audiomc.demo.synthetic import (
    synthetic_records,
    write_jsonl_export,
    write_parquet_export,
)

AUDIO = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(40))
FLAC = b"fLaC\x00\x00\x00\x22" + bytes(30)
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(30)
MP3_FRAME = b"\xff\xfb\x90\x64" + bytes(30)
ADTS = b"\xff\xf1\x50\x80" + bytes(30)


def record(task_id="t1", *, last=3, axis="VOICE_EDITING", rubric=None, **overrides) -> dict:
    """A valid record ending on user turn `last`; overrides set or delete (None) fields."""
    row = {"id": task_id, "axis": axis}
    for k in range(1, 9):
        row[f"user_turn_{k}_transcript"] = f" user {k} of {task_id}" if k <= last else None
    for k in range(1, 8):
        row[f"assistant_turn_{k}_transcript"] = f"assistant {k} " if k < last else None
    row["rubric"] = json.dumps(rubric if rubric is not None else ["First item", "Second item"])
    row.update(overrides)
    return row


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict], *, audio: dict | None = None, group=None) -> Path:
    """A parquet file as the dataset tools export it, built here without the project's writer."""
    columns = {"id": pa.string(), "axis": pa.string()}
    for k in range(1, 9):
        if audio is not None:
            columns[f"user_turn_{k}_audio"] = AUDIO
        columns[f"user_turn_{k}_transcript"] = pa.string()
    for k in range(1, 8):
        columns[f"assistant_turn_{k}_transcript"] = pa.string()
    columns["rubric"] = pa.string()
    schema = pa.schema(list(columns.items()))
    table_rows = []
    for i, row in enumerate(rows):
        full = {name: row.get(name) for name in columns}
        for (index, turn), value in (audio or {}).items():
            if index == i:
                full[f"user_turn_{turn}_audio"] = value
        table_rows.append(full)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(table_rows, schema=schema), path, row_group_size=group)
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        read_dataset(path)
    return [str(p) for p in caught.value.problems]


# --- the spec of a task ----------------------------------------------------------------------


def test_a_record_becomes_a_task_with_raw_turns_up_to_l(tmp_path):
    row = record("abc", last=4, rubric=["Keeps the time", "Says 6 pm"], audio_cue=True)
    dataset = read_dataset(write_jsonl(tmp_path / "test.jsonl", [row]))
    assert dataset.format == "jsonl" and dataset.files == ["test.jsonl"]
    [task] = dataset.tasks
    assert task.task_id == "abc"
    assert task.spec == {
        "axis": "VOICE_EDITING",
        "last_user_turn": 4,
        "user_turns": [" user 1 of abc", " user 2 of abc", " user 3 of abc", " user 4 of abc"],
        "assistant_turns": ["assistant 1 ", "assistant 2 ", "assistant 3 "],
        "rubric": ["Keeps the time", "Says 6 pm"],
        "audio_cue": True,
    }
    json.dumps(task.spec)  # JSON-serialisable


def test_l_is_the_last_non_empty_user_turn_after_strip(tmp_path):
    row = record(last=5, user_turn_6_transcript="   ", user_turn_7_transcript="")
    [task] = read_dataset(write_jsonl(tmp_path / "d.jsonl", [row])).tasks
    assert task.spec["last_user_turn"] == 5
    assert len(task.spec["user_turns"]) == 5 and len(task.spec["assistant_turns"]) == 4


def test_rubric_as_a_list_and_the_rubrics_alias(tmp_path):
    rows = [
        record("a", rubric=None) | {"rubric": ["x", "y"]},
        {k: v for k, v in record("b").items() if k != "rubric"} | {"rubrics": ["p", "q", "r"]},
        record("c") | {"rubrics": ["First item", "Second item"]},  # both, equal: fine
    ]
    tasks = read_dataset(write_jsonl(tmp_path / "d.jsonl", rows)).tasks
    assert [t.spec["rubric"] for t in tasks] == [
        ["x", "y"],
        ["p", "q", "r"],
        ["First item", "Second item"],
    ]


def test_one_absent_intermediate_assistant_turn_is_allowed_and_kept_empty(tmp_path):
    # As task plrw2n71ditatq03 (L = 8, no assistant turn 7), but under any id.
    row = record("gap", last=8, assistant_turn_7_transcript=None)
    row2 = record("gap2", last=5, assistant_turn_2_transcript="  ")
    tasks = read_dataset(write_jsonl(tmp_path / "d.jsonl", [row, row2])).tasks
    assert tasks[0].spec["assistant_turns"][6] == "" and len(tasks[0].spec["assistant_turns"]) == 7
    assert tasks[1].spec["assistant_turns"][1] == ""


def test_parquet_and_jsonl_exports_give_identical_tasks(tmp_path):
    records = synthetic_records(44, seed=3)
    parquet = read_dataset(write_parquet_export(records, tmp_path / "p", audio=False).parent.parent)
    jsonl = read_dataset(write_jsonl_export(records, tmp_path / "j").parent)
    assert parquet.format == "parquet" and jsonl.format == "jsonl"
    assert parquet.files == ["data/test-00000-of-00001.parquet"]
    assert parquet.tasks == jsonl.tasks
    assert len(parquet.tasks) == 44
    # The hand-built parquet (no project writer) reads the same too.
    rows = [record(f"id{i}", last=3 + i % 6) for i in range(10)]
    assert (
        read_dataset(write_parquet(tmp_path / "h.parquet", rows)).tasks
        == read_dataset(write_jsonl(tmp_path / "h.jsonl", rows)).tasks
    )


def test_a_directory_prefers_parquet_and_reads_every_shard(tmp_path):
    write_parquet(tmp_path / "data" / "test-00000-of-00002.parquet", [record("a")])
    write_parquet(tmp_path / "data" / "test-00001-of-00002.parquet", [record("b")])
    write_jsonl(tmp_path / "other.jsonl", [record("zzz")])
    dataset = read_dataset(tmp_path)
    assert [t.task_id for t in dataset.tasks] == ["a", "b"]
    assert dataset.files == ["data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"]


# --- validation: every problem with file, row/line and field (SPEC §6 row 5) -----------------


def test_edge_05_duplicate_id_rejects_the_dataset_naming_both_places(tmp_path):
    rows = [record("a"), record("b"), record("a")]
    assert problems_of(write_jsonl(tmp_path / "d.jsonl", rows)) == [
        "d.jsonl line 3, field id: duplicate id 'a' (first at d.jsonl line 1)"
    ]
    assert problems_of(write_parquet(tmp_path / "p" / "d.parquet", rows)) == [
        "d.parquet row 3, field id: duplicate id 'a' (first at d.parquet row 1)"
    ]


def test_edge_05_duplicate_id_across_shards(tmp_path):
    write_parquet(tmp_path / "data" / "a.parquet", [record("x")])
    write_parquet(tmp_path / "data" / "b.parquet", [record("y"), record("x")])
    assert problems_of(tmp_path) == [
        "data/b.parquet row 2, field id: duplicate id 'x' (first at data/a.parquet row 1)"
    ]


def test_edge_05_unknown_axis(tmp_path):
    rows = [record("a"), record("b", axis="SPEAKER_MEMORY")]
    [message] = problems_of(write_parquet(tmp_path / "d.parquet", rows))
    assert message.startswith("d.parquet row 2, field axis: 'SPEAKER_MEMORY' is not one of")


@pytest.mark.parametrize(
    ("rubric", "expected"),
    [
        ("[]", "field rubric: is empty; a task needs at least one rubric item"),
        ('{"a": 1}', "field rubric: must be a list of strings, not dict"),
        ('"just text"', "field rubric: must be a list of strings, not str"),
        ("not json", "field rubric: not a JSON-encoded list"),
        ('["ok", ""]', "field rubric[1]: is empty"),
        ('["ok", "  "]', "field rubric[1]: is empty"),
        ('["ok", 3]', "field rubric[1]: must be a string, not int"),
        ("[NaN]", "field rubric: not a JSON-encoded list (NaN is not JSON)"),
    ],
)
def test_edge_05_empty_or_non_list_rubric(tmp_path, rubric, expected):
    rows = [record("a"), record("b") | {"rubric": rubric}]
    for path in (
        write_jsonl(tmp_path / "d.jsonl", rows),
        write_parquet(tmp_path / "d.parquet", rows),
    ):
        [message] = problems_of(path)
        where = "line 2" if path.suffix == ".jsonl" else "row 2"
        assert message.startswith(f"{path.name} {where}, {expected}"), message


def test_missing_rubric_and_conflicting_alias(tmp_path):
    no_rubric = {k: v for k, v in record("a").items() if k != "rubric"}
    conflict = record("b") | {"rubrics": ["other"]}
    assert problems_of(write_jsonl(tmp_path / "d.jsonl", [no_rubric, conflict])) == [
        "d.jsonl line 1, field rubric: missing",
        "d.jsonl line 2, field rubrics: differs from rubric; give one of them",
    ]


@pytest.mark.parametrize("last", [1, 2, 9])
def test_last_user_turn_outside_3_to_8(tmp_path, last):
    row = record("a", last=min(last, 8))
    for k in range(1, 10):
        row[f"user_turn_{k}_transcript"] = "words" if k <= last else None
        if k < 8:
            row[f"assistant_turn_{k}_transcript"] = "reply" if k < last else None
    [message] = problems_of(write_jsonl(tmp_path / "d.jsonl", [row]))
    assert message == (
        f"d.jsonl line 1, field user_turn_{last}_transcript: the last non-empty user turn is "
        f"{last}; it must be in 3..8"
    )


def test_no_user_turn_at_all(tmp_path):
    row = record("a") | {f"user_turn_{k}_transcript": None for k in range(1, 9)}
    row |= {f"assistant_turn_{k}_transcript": None for k in range(1, 8)}
    assert problems_of(write_jsonl(tmp_path / "d.jsonl", [row])) == [
        "d.jsonl line 1, field user_turn_1_transcript: the last non-empty user turn is 0; "
        "it must be in 3..8"
    ]


def test_two_absent_assistant_turns_are_rejected(tmp_path):
    row = record("a", last=6, assistant_turn_2_transcript=None, assistant_turn_4_transcript="")
    assert problems_of(write_parquet(tmp_path / "d.parquet", [row])) == [
        "d.parquet row 1, field assistant_turn_2_transcript, assistant_turn_4_transcript: "
        "2 assistant turns before user turn 6 are empty; at most one may be"
    ]


def test_an_assistant_turn_after_the_last_user_turn_is_rejected(tmp_path):
    row = record("a", last=4, assistant_turn_4_transcript="the reference answer")
    assert problems_of(write_jsonl(tmp_path / "d.jsonl", [row])) == [
        "d.jsonl line 1, field assistant_turn_4_transcript: an assistant turn after user turn 4, "
        "the last one, is not allowed"
    ]


def test_wrong_types_and_bad_lines_are_all_reported(tmp_path):
    path = tmp_path / "d.jsonl"
    lines = [
        json.dumps(record("a")),
        "{not json",
        "[1, 2]",
        json.dumps(record("b", user_turn_2_transcript=42)),
        json.dumps(record(7)),
        json.dumps(record("c", audio_cue="yes")),
        '{"id": "d", "axis": NaN}',
    ]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    messages = problems_of(path)
    assert messages[0].startswith("d.jsonl line 2: not valid JSON")
    assert messages[1:5] == [
        "d.jsonl line 3: not a JSON object",
        "d.jsonl line 4, field user_turn_2_transcript: must be a string or null, not int",
        "d.jsonl line 5, field id: must be a non-empty string",
        "d.jsonl line 6, field audio_cue: must be true, false or null",
    ]
    assert messages[5] == "d.jsonl line 7: not valid JSON (NaN is not JSON)"
    assert len(messages) == 6


def test_an_empty_export_and_a_missing_path(tmp_path):
    assert problems_of(write_jsonl(tmp_path / "d.jsonl", [])) == ["d.jsonl: holds no tasks"]
    (tmp_path / "empty").mkdir()
    assert problems_of(tmp_path / "empty") == [
        f"{tmp_path / 'empty'}: holds no .parquet or .jsonl files"
    ]
    assert problems_of(tmp_path / "nowhere") == [
        f"{tmp_path / 'nowhere'}: no such file or directory"
    ]


# --- audio --------------------------------------------------------------------------------------


def test_audio_structs_keep_their_bytes_and_container(tmp_path):
    rows = [record("a", last=3), record("b", last=4)]
    audio = {
        (0, 1): {"bytes": WAV, "path": "a1.wav"},
        (0, 2): {"bytes": FLAC, "path": "whatever.bin"},
        (0, 3): {"bytes": MP3, "path": None},
        (0, 5): {"bytes": WAV, "path": "after-L.wav"},  # after L = 3: never heard, not yielded
        (1, 1): {"bytes": MP3_FRAME, "path": "b1.mp3"},
        (1, 4): {"bytes": b"\x00\x01unknown", "path": "b4.opus"},
        (1, 2): {"bytes": b"\x00\x01unknown", "path": None},
        (1, 3): {"bytes": ADTS, "path": "b3.mp3"},  # the bytes decide, not the name
    }
    path = write_parquet(tmp_path / "d.parquet", rows, audio=audio, group=1)
    blobs = list(iter_user_audio(path))
    got = [(b.task_id, b.turn, b.extension, b.content_type, b.data, b.source_path) for b in blobs]
    assert got == [
        ("a", 1, "wav", "audio/wav", WAV, "a1.wav"),
        ("a", 2, "flac", "audio/flac", FLAC, "whatever.bin"),
        ("a", 3, "mp3", "audio/mpeg", MP3, None),
        ("b", 1, "mp3", "audio/mpeg", MP3_FRAME, "b1.mp3"),
        ("b", 2, "bin", "application/octet-stream", b"\x00\x01unknown", None),
        ("b", 3, "aac", "audio/aac", ADTS, "b3.mp3"),
        ("b", 4, "opus", "audio/ogg", b"\x00\x01unknown", "b4.opus"),
    ]
    # The task pass never needs the audio columns and gives the same tasks as without them.
    assert read_dataset(path).tasks == read_dataset(write_jsonl(tmp_path / "d.jsonl", rows)).tasks


def test_jsonl_audio_as_base64_or_a_path_beside_the_export(tmp_path):
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "a2.flac").write_bytes(FLAC)
    rows = [
        record("a")
        | {
            "user_turn_1_audio": {"bytes": base64.b64encode(WAV).decode(), "path": "a1.wav"},
            "user_turn_2_audio": "clips/a2.flac",
            "user_turn_3_audio": {"bytes": None, "path": "clips/a2.flac"},
        }
    ]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    assert [(b.turn, b.extension, b.data) for b in iter_user_audio(path)] == [
        (1, "wav", WAV),
        (2, "flac", FLAC),
        (3, "flac", FLAC),
    ]
    assert read_dataset(path).tasks[0].spec["user_turns"][0] == " user 1 of a"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"bytes": None, "path": "gone.wav"}, "audio has no bytes and its path 'gone.wav' is not"),
        ({"bytes": None, "path": "../../etc/passwd"}, "audio has no bytes and its path"),
        ({"array": [0.0, 0.1], "sampling_rate": 16000}, "decoded audio arrays are not accepted"),
        ({"bytes": "%%%", "path": "x.wav"}, "audio bytes given as text must be base64"),
        (17, "unreadable audio value of type int"),
    ],
)
def test_unreadable_audio_names_file_line_and_field(tmp_path, value, message):
    path = write_jsonl(
        tmp_path / "d.jsonl", [record("a"), record("b") | {"user_turn_2_audio": value}]
    )
    with pytest.raises(DatasetError) as caught:
        list(iter_user_audio(path))
    [problem] = caught.value.problems
    assert (problem.file, problem.where, problem.field) == (
        "d.jsonl",
        "line 2",
        "user_turn_2_audio",
    )
    assert problem.message.startswith(message)


def test_parquet_audio_is_streamed_not_loaded_whole(tmp_path):
    noise = np.random.default_rng(0)
    clips = [WAV + noise.bytes(200_000) for _ in range(48)]  # random: nothing compresses away
    rows = [record(f"t{i}") for i in range(48)]
    audio = {(i, 1): {"bytes": clips[i], "path": None} for i in range(48)}
    path = write_parquet(tmp_path / "d.parquet", rows, audio=audio, group=8)
    assert path.stat().st_size > 48 * 200_000
    pool = pa.default_memory_pool()
    baseline = pool.bytes_allocated()
    peak = 0
    count = 0
    for blob in iter_user_audio(path):
        assert blob.data == clips[count]
        count += 1
        peak = max(peak, pool.bytes_allocated() - baseline)
    assert count == 48
    # One row group of one audio column (8 clips, 1.6 MB) and its copy at a time, well below
    # the 9.6 MB of the whole file.
    assert peak < 5_000_000, peak
