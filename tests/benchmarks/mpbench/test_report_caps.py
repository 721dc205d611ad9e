"""A transcript of MP-Bench's upload with five thousand bad chunks makes a small report (the
core's caps: tests/evaluation/test_report_caps.py)."""

import json
import zipfile

import pytest

from evaluation.bundles import BundleRejected
from evaluation.services import bundle_validate, submission_create

TASK = "scenario_argument-diag_1001-tier_2-task_0"


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
