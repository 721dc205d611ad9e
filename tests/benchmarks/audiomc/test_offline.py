"""The offline judge: deterministic, answers in the judge's format, labelled as not an LLM."""

from __future__ import annotations

import pytest

from evaluation.benchmarks.audiomc.demo.offline import offline_raw_output, offline_verdict
from evaluation.benchmarks.audiomc.judge import parse_judgment


@pytest.mark.parametrize(
    ("response", "item", "met"),
    [
        # key words: meeting, time (6 and pm are too short); both present
        ("The meeting time is 6 pm.", "Gives the meeting time as 6 pm", True),
        # one of two key words is half: met
        ("The meeting is at 6 pm.", "Gives the meeting time as 6 pm", True),
        ("See you then.", "Gives the meeting time as 6 pm", False),
        # negative item: met while its key word is absent
        ("Try a tomato salad.", "Does not suggest anything with peanuts", True),
        ("Try peanut noodles.", "Does not suggest anything with peanuts", False),
        # an empty reply meets a negative item and fails a positive one
        ("", 'Excludes the word "cheap"', True),
        ("", "Mentions the budget", False),
        # quoted phrases must appear verbatim
        ("Enjoy! Cheers", 'Ends the reply with the word "cheers"', True),
        ("Enjoy your ride, bye", 'Ends the reply with the word "cheers"', False),
        ("So cheap!", 'Excludes the word "cheap"', False),
    ],
)
def test_verdicts_worked_by_hand(response, item, met):
    assert offline_verdict(response=response, rubric_item=item)[0] is met


def test_raw_output_parses_and_says_it_is_not_an_llm():
    raw = offline_raw_output(
        response="The meeting is at 6 pm.", rubric_item="Gives the meeting time"
    )
    assert raw.startswith("```json\n") and raw.endswith("\n```")
    parsed = parse_judgment(raw)
    assert parsed.criteria_met is True and parsed.candidate == "fenced"
    assert "not an LLM" in parsed.explanation
    assert parsed.explanation.startswith("Offline heuristic (word overlap)")
    assert raw == offline_raw_output(
        response="The meeting is at 6 pm.", rubric_item="Gives the meeting time"
    )
