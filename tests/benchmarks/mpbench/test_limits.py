"""Bounds on what an MP-Bench bundle may hold, checked at validation with a message naming the
task, the file and the chunk."""

import json
import zipfile

from evaluation.benchmarks.mpbench.bundle import check_transcript
from evaluation.benchmarks.mpbench.limits import MAX_CONVERSATION_SECONDS
from evaluation.benchmarks.mpbench.plugin import MPBench
from evaluation.bundles import ValidationReport
from evaluation.services import bundle_validate

TASK = "scenario_x-task_0"


def problems(chunks: list) -> list[str]:
    report = ValidationReport()
    check_transcript({"text": "", "chunks": chunks}, report, task=TASK, file="response.json")
    return [str(p) for p in report.problems]


def test_four_hours_is_the_plausible_conversation_length():
    assert MAX_CONVERSATION_SECONDS == 4 * 3600


def test_a_timestamp_beyond_any_conversation_is_refused_naming_task_file_and_chunk():
    found = problems(
        [
            {"text": "fine", "timestamp": [1.0, 1.5]},
            {"text": "far away", "timestamp": [1e12, 1e12 + 0.5]},
        ]
    )
    assert len(found) == 1
    assert found[0].startswith(f"{TASK} / response.json: chunk 1 ('far away')")
    assert "beyond 14,400 s (4 h)" in found[0]


def test_a_timestamp_at_the_bound_is_accepted():
    limit = float(MAX_CONVERSATION_SECONDS)
    assert problems([{"text": "late", "timestamp": [limit - 1, limit]}]) == []


def test_every_bad_chunk_is_named_among_texts_that_are_not_strings():
    found = problems(
        [
            "not an object",
            {"text": 7, "timestamp": [0.0, 0.5]},
            {"text": ["a list", "\x00"], "timestamp": [0.5, 1.0]},
            {"text": "nul \x00 here", "timestamp": [1.0, 1.5]},
            {"text": "reversed", "timestamp": [3.0, 2.0]},
            {"text": "fine", "timestamp": [3.0, 3.5]},
        ]
    )
    # A list prints its NUL escaped, so only the string holding one is refused for it.
    assert found == [
        f"{TASK} / response.json: chunk 3: 'text' holds a NUL character (\\u0000), "
        "which cannot be stored",
        f"{TASK} / response.json: chunk 4 ('reversed') has a reversed timestamp [3.0, 2.0] "
        "(start after end)",
    ]


def test_the_word_chunks_of_each_transcript_are_reported_and_the_core_refuses_more_than_a_run_has(
    mpbench, tmp_path
):
    """The plug-in declares 5,000 word chunks a transcript (limits.MAX_WORD_CHUNKS) and counts
    each transcript's into the report; the core's validation refuses one over it, naming task
    and file."""
    assert MPBench.max_spans_per_run == 5_000
    words = [{"text": f" w{n}", "timestamp": [n * 0.2, n * 0.2 + 0.1]} for n in range(5_001)]
    task = "scenario_argument-diag_1001-tier_2-task_0"

    def validated(count: int):
        path = tmp_path / f"{count}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(f"{task}/all_stitched.json", json.dumps({"text": "", "chunks": []}))
            archive.writestr(
                f"{task}/response.json", json.dumps({"text": "", "chunks": words[:count]})
            )
        return bundle_validate(benchmark=mpbench, path=path, allow_partial=True)

    report, _ = validated(5_001)
    assert [str(p) for p in report.problems] == [
        f"{task} / response.json: holds 5,001 word chunks; a run of this benchmark holds at "
        "most 5,000"
    ]
    report, _ = validated(5_000)
    assert report.ok, report.lines()
    assert {(s.task, s.file, s.count, s.what) for s in report.spans} == {
        (task, "all_stitched.json", 0, "word chunks"),
        (task, "response.json", 5_000, "word chunks"),
    }


def test_mpbench_declares_four_gib_a_bundle():
    assert MPBench.max_upload_bytes == 4 * 1024**3
