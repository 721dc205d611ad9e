"""JSONL uploads are read a line at a time: a file of any size within the limits is never held
whole, a line longer than the site takes is refused by number, and the lines, their numbers and
every error are exactly those of reading the whole file (MSI-Bench's harness splits with
str.splitlines; Audio MultiChallenge's lines end at "\\n" only)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from evaluation.benchmarks.audiomc.responses import SubmissionError, parse_submission
from evaluation.benchmarks.base import UploadLimits
from evaluation.benchmarks.msibench.jsontext import (
    JsonTextError,
    decode_utf8,
    iter_jsonl_lines,
    iter_jsonl_stream,
)
from evaluation.bundles import JSONL_LINE_MAX_BYTES, ValidationReport
from tests.conftest import peak_rss_growth

SAMPLES = [
    b"",
    b"\n\n",
    b'{"a": 1}\n{"b": 2}',
    b'{"a": 1}\r\n\r\n{"b": 2}\r\n',
    '{"a": "x"}\u2028{"b": 1}\n\x1c\n{"c": 1}\u0085  \n'.encode(),
    b'{"a": 1}\r{"b": 2}\x0b{"c": 3}\x0c\n',
    b'{"a": 1}\n{"b": "\xff"}\n',
    b'{"a": 1}\r\n\r\xfe\n',
    "é\u2028".encode() + b"\n\xc3",
    b"\xef\xbb\xbf{}\n",
    b"   \n\t\n" + b'{"z": 0}',
]


def _whole(data: bytes):
    """What reading the whole file gives: its lines, or the error's message."""
    try:
        return list(iter_jsonl_lines(decode_utf8(data)))
    except JsonTextError as exc:
        return str(exc)


def _streamed(data: bytes):
    try:
        return list(iter_jsonl_stream(io.BytesIO(data)))
    except JsonTextError as exc:
        return str(exc)


@pytest.mark.parametrize("data", SAMPLES)
def test_msibench_streamed_lines_equal_the_whole_files(data):
    assert _streamed(data) == _whole(data)


def test_a_line_longer_than_the_site_takes_is_refused_by_number():
    long_line = b"x" * (JSONL_LINE_MAX_BYTES + 1) + b"\n"
    data = b'{"a": 1}\n' + long_line
    assert _streamed(data) == f"line 2: longer than {JSONL_LINE_MAX_BYTES:,} bytes"
    with pytest.raises(SubmissionError) as refused:
        parse_submission(data, task_ids=["t"], output_modality="text")
    assert [str(p) for p in refused.value.problems] == [
        f"responses.jsonl: line 2: longer than {JSONL_LINE_MAX_BYTES:,} bytes"
    ]


def test_audiomc_reads_a_stream_as_it_reads_the_text():
    text = '\ufeff{"id": "t1", "response": "a\u2028b"}\r\n\n{"id": "t2", "response": null}\n'
    expected = parse_submission(text, task_ids=["t1", "t2"], output_modality="text")
    streamed = parse_submission(
        io.BytesIO(text.encode()), task_ids=["t1", "t2"], output_modality="text"
    )
    assert streamed == expected
    assert streamed.responses == {"t1": "a\u2028b", "t2": ""}


def _padded_jsonl(path, rows: list[dict], *, padding_mib: int) -> None:
    """The rows, then ``padding_mib`` blank lines of 1 MiB of spaces each (skipped by both
    readers): a file far larger than what it holds."""
    blank = b" " * (1024 * 1024 - 1) + b"\n"
    with open(path, "wb") as handle:
        for row in rows:
            handle.write(json.dumps(row).encode() + b"\n")
        for _ in range(padding_mib):
            handle.write(blank)


PADDING_MIB = 300
LIMITS = UploadLimits(max_bytes=1024**3, max_ratio=100.0)


def test_an_audiomc_upload_of_a_large_jsonl_is_validated_in_bounded_memory(tmp_path):
    from evaluation.benchmarks.audiomc import upload

    path = tmp_path / "replies.jsonl"
    _padded_jsonl(path, [{"id": "t1", "response": "fine"}], padding_mib=PADDING_MIB)
    report = ValidationReport()
    with peak_rss_growth() as peak:
        contents = upload.validate(
            path, report, tasks={"t1": {}}, allow_partial=False, modality="text", limits=LIMITS
        )
    assert report.ok and contents.present == {"t1"}
    # Whole, the file alone would be 300 MiB as bytes and as much again as text.
    assert peak["mib"] < 60, peak


def test_an_msibench_zip_member_of_a_large_jsonl_is_validated_in_bounded_memory(tmp_path):
    from evaluation.benchmarks.msibench import upload

    member = tmp_path / "predictions.jsonl"
    _padded_jsonl(member, [], padding_mib=PADDING_MIB)
    bundle = tmp_path / "upload.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_STORED) as archive:
        archive.write(member, "predictions.jsonl")
    member.unlink()
    report = ValidationReport()
    with peak_rss_growth() as peak:
        upload.validate(
            bundle, report, tasks={}, allow_partial=True, run_mode="turn-based", limits=LIMITS
        )
    assert [p.message for p in report.problems] == [
        "no line names a cell of this benchmark (cell ids are msi-<language>-<pattern>-...; "
        "a probe adds h or s)"
    ]
    assert peak["mib"] < 60, peak


def test_an_msibench_manifest_nested_deep_is_a_problem_not_a_crash(tmp_path):
    from evaluation.benchmarks.msibench import upload

    deep = "[" * 100_000 + "]" * 100_000
    bundle = tmp_path / "deep.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("predictions.jsonl", "")
        archive.writestr("manifest.json", deep)
    report = ValidationReport()
    upload.validate(
        bundle, report, tasks={}, allow_partial=True, run_mode="turn-based", limits=LIMITS
    )
    assert (
        "manifest.json",
        "not accepted as JSON: it nests 100,000 levels deep; at most 16 are allowed",
    ) in [(p.file, p.message) for p in report.problems]
