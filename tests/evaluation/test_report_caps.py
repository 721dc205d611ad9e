"""Validation reports stay small however many problems a bundle has: every problem is counted,
the first ones per file and per bundle are kept, and the rest are summed up as "and N more".
MP-Bench's transcripts: tests/benchmarks/mpbench/test_report_caps.py."""

import json

import pytest

from evaluation.bundles import BundleRejected, ValidationReport
from evaluation.services import bundle_validate, submission_create

ANSWERS = "answers.jsonl"  # the example plug-in names its answers file so in a report


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
def test_five_thousand_bad_lines_make_a_small_report(toybench, tmp_path, settings):
    """The example plug-in reports each line of its answers file that is not JSON."""
    settings.REPORT_MAX_PER_FILE = 20
    settings.REPORT_MAX_PROBLEMS = 50
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(f"not JSON {i}\n" for i in range(1, 5_001)))
    report, _ = bundle_validate(benchmark=toybench, path=path, allow_partial=True)
    data = report.as_dict()
    assert data["problem_count"] == 5_000 and data["problems_omitted"] == 5_000 - 20
    assert len(data["problems"]) == 21
    assert data["problems"][0] == {"message": "line 1: not JSON", "task": None, "file": ANSWERS}
    assert data["problems"][-1] == {
        "message": "and 4,980 more problem(s) in this file",
        "task": None,
        "file": ANSWERS,
    }
    assert len(json.dumps(data)) < 10_000
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=toybench, bundle_path=path, system_name="Bad", allow_partial=True
        )
    message = str(caught.value)
    assert message.startswith("bundle rejected: 5,000 problem(s)")
    assert "and 4,980 more problem(s) in this file" in message and len(message) < 10_000
