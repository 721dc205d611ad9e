"""Bounds on what an MP-Bench bundle may hold, checked at validation with a message naming the
task, the file and the chunk."""

from evaluation.benchmarks.mpbench.bundle import check_transcript
from evaluation.benchmarks.mpbench.limits import MAX_CONVERSATION_SECONDS
from evaluation.bundles import ValidationReport

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
