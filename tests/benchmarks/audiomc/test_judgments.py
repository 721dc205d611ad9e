"""Stored judge outputs (SPEC §4, §6 rows 9 and 11)."""

from __future__ import annotations

import json

import pytest

from evaluation.benchmarks.audiomc.dataset import Task
from evaluation.benchmarks.audiomc.judge import FAILED, MET, NOT_MET, UNPARSEABLE, Attempt
from evaluation.benchmarks.audiomc.judgments import JudgmentsError, read_judgments

YES = '{"criteria_met": true}'
NO = '{"criteria_met": false}'


def tasks() -> list[Task]:
    spec = {
        "axis": "VOICE_EDITING",
        "last_user_turn": 3,
        "user_turns": ["a", "b", "c"],
        "assistant_turns": ["x", "y"],
    }
    return [Task("t1", spec | {"rubric": ["i0", "i1"]}), Task("t2", spec | {"rubric": ["j0"]})]


def lines(*rows) -> list[str]:
    return [(r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows]


def read(rows, responded=("t1",)):
    return read_judgments(lines(*rows), tasks=tasks(), responded=set(responded))


def test_attempts_are_grouped_per_item_and_decided():
    stored = read(
        [
            {"id": "t1", "rubric_index": 0, "attempt": 1, "raw": YES},
            {"id": "t1", "rubric_index": 0, "attempt": 0, "raw": "prose"},
            {"id": "t1", "rubric_index": 1, "raw": NO},  # attempt defaults to 0
        ]
    )
    assert stored.attempts[("t1", 0)] == [Attempt(1, YES), Attempt(0, "prose")]
    assert stored.outcomes[("t1", 0)].state == MET and stored.outcomes[("t1", 0)].attempt == 1
    assert stored.outcomes[("t1", 1)].state == NOT_MET
    assert stored.ignored == []


def test_null_raw_is_a_failed_call_and_unparseable_answers_are_kept():
    stored = read(
        [
            {"id": "t1", "rubric_index": 0, "attempt": 0, "raw": None},
            *({"id": "t1", "rubric_index": 1, "attempt": a, "raw": "True"} for a in range(3)),
        ]
    )
    assert stored.outcomes[("t1", 0)].state == FAILED
    assert stored.outcomes[("t1", 1)].state == UNPARSEABLE
    assert len(stored.attempts[("t1", 1)]) == 3


def test_edge_09_duplicate_id_index_attempt_rejects_the_file():
    with pytest.raises(JudgmentsError) as caught:
        read(
            [
                {"id": "t1", "rubric_index": 0, "attempt": 0, "raw": YES},
                {"id": "t1", "rubric_index": 0, "attempt": 1, "raw": YES},
                {"id": "t1", "rubric_index": 0, "raw": NO},
            ]
        )
    assert [str(p) for p in caught.value.problems] == [
        "judgments.jsonl line 3, field attempt: duplicate (id, rubric_index, attempt) "
        "['t1', 0, 0] (first on line 1)"
    ]


def test_edge_11_strays_are_ignored_and_listed():
    stored = read(
        [
            {"id": "t1", "rubric_index": 2, "attempt": 0, "raw": YES},
            {"id": "t1", "rubric_index": -1, "attempt": 0, "raw": YES},
            {"id": "ghost", "rubric_index": 0, "attempt": 0, "raw": YES},
            {"id": "t2", "rubric_index": 0, "attempt": 0, "raw": YES},
            {"id": "t1", "rubric_index": 0, "attempt": 0, "raw": YES},
        ]
    )
    assert stored.ignored == [
        {"line": 1, "id": "t1", "rubric_index": 2, "reason": "rubric_index out of range"},
        {"line": 2, "id": "t1", "rubric_index": -1, "reason": "rubric_index out of range"},
        {"line": 3, "id": "ghost", "rubric_index": 0, "reason": "unknown id"},
        {"line": 4, "id": "t2", "rubric_index": 0, "reason": "id without a response"},
    ]
    assert list(stored.outcomes) == [("t1", 0)]


def test_malformed_lines_are_reported_with_line_and_field():
    with pytest.raises(JudgmentsError) as caught:
        read(
            [
                "nope",
                "[1]",
                {"id": 1, "rubric_index": "0", "attempt": -1, "raw": 5},
                {"id": "t1", "rubric_index": True, "attempt": 1.0},
                '{"id": "t1", "rubric_index": 0, "raw": NaN}',
            ]
        )
    found = [str(p) for p in caught.value.problems]
    assert found[0].startswith("judgments.jsonl line 1: not valid JSON")
    assert found[1:] == [
        "judgments.jsonl line 2: not a JSON object",
        "judgments.jsonl line 3, field id: must be a string",
        "judgments.jsonl line 3, field rubric_index: must be an integer",
        "judgments.jsonl line 3, field attempt: must be an integer >= 0",
        "judgments.jsonl line 3, field raw: must be a string or null",
        "judgments.jsonl line 4, field rubric_index: must be an integer",
        "judgments.jsonl line 4, field attempt: must be an integer >= 0",
        "judgments.jsonl line 4, field raw: missing (null for a failed call)",
        "judgments.jsonl line 5: not valid JSON (NaN is not JSON)",
    ]
