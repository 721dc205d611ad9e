"""Validation reports stay small however many problems a bundle has: every problem is counted,
the first ones per file and per bundle are kept, and the rest are summed up as "and N more"."""

import json
import zipfile

import pytest

from evaluation.bundles import BundleRejected, ValidationReport
from evaluation.services import bundle_validate, submission_create

TASK = "scenario_argument-diag_1001-tier_2-task_0"


def test_counts_everything_keeps_the_first_per_file_and_per_bundle():
    report = ValidationReport(max_per_file=3, max_total=5)
    for index in range(10):
        report.add(f"bad chunk {index}", task="t1", file="response.json")
    for index in range(4):
        report.add(f"other {index}", task="t2", file="all_stitched.json")
    report.add("no file at all")
    assert not report.ok and report.problem_count == 15
    assert [p.message for p in report.problems] == [
        "bad chunk 0",
        "bad chunk 1",
        "bad chunk 2",
        "other 0",
        "other 1",
    ]
    data = report.as_dict()
    assert data["problem_count"] == 15 and data["problems_omitted"] == 10
    # t1: 10 - 3 kept = 7 more; t2: 4 - 2 kept = 2 more; the one without a file: 1 elsewhere.
    assert data["problems"][5:] == [
        {"message": "and 7 more problem(s) in this file", "task": "t1", "file": "response.json"},
        {
            "message": "and 2 more problem(s) in this file",
            "task": "t2",
            "file": "all_stitched.json",
        },
        {"message": "and 1 more problem(s) elsewhere, not listed", "task": None, "file": None},
    ]


def test_warnings_are_capped_like_problems():
    report = ValidationReport(max_per_file=2, max_total=3)
    for index in range(100_000):
        report.warn("outside any task folder; ignored", file=f"junk/{index}.txt")
    data = report.as_dict()
    assert report.ok and data["warning_count"] == 100_000 and data["warnings_omitted"] == 99_997
    assert len(data["warnings"]) == 4
    assert data["warnings"][-1]["message"] == "and 99,997 more warning(s) elsewhere, not listed"
    assert len(json.dumps(data)) < 2_000


def test_long_messages_and_names_are_cut():
    report = ValidationReport()
    report.add("x" * 100_000, task="t" * 10_000, file="f" * 10_000)
    kept = report.problems[0]
    assert len(kept.message) == len(kept.task) == len(kept.file) == 300


@pytest.mark.django_db
def test_a_transcript_of_five_thousand_bad_chunks_makes_a_small_report(mpbench, tmp_path, settings):
    settings.REPORT_MAX_PER_FILE = 20
    settings.REPORT_MAX_PROBLEMS = 50
    # The most word chunks a transcript may hold (limits.MAX_WORD_CHUNKS), each with reversed
    # timestamps; distinct values, so the file does not trip the compression-ratio check.
    chunks = [{"text": f"w{i}", "timestamp": [i + 0.731, i * 0.37]} for i in range(1, 5_001)]
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{TASK}/all_stitched.json", json.dumps({"text": "x", "chunks": []}))
        archive.writestr(f"{TASK}/response.json", json.dumps({"text": "", "chunks": chunks}))
    report, _ = bundle_validate(benchmark=mpbench, path=path, allow_partial=True)
    data = report.as_dict()
    assert data["problem_count"] == 5_000 and data["problems_omitted"] == 5_000 - 20
    assert len(data["problems"]) == 21
    assert data["problems"][-1] == {
        "message": "and 4,980 more problem(s) in this file",
        "task": TASK,
        "file": "response.json",
    }
    assert len(json.dumps(data)) < 10_000
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=mpbench, bundle_path=path, system_name="Bad", allow_partial=True
        )
    message = str(caught.value)
    assert message.startswith("bundle rejected: 5,000 problem(s)")
    assert "and 4,980 more problem(s) in this file" in message and len(message) < 10_000
