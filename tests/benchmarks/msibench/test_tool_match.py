"""Fuzzy tool diagnostics (SPEC §5), values worked by hand."""

import pytest

from evaluation.benchmarks.msibench.tool_match import (
    argument_score,
    argument_text,
    calls_preserved,
    compact,
    name_scores,
    single_call_score,
    tokens,
    tool_call_score,
    value_similarity,
)


def test_compact_and_tokens():
    assert compact("Hello, World! 4B") == "helloworld4b"
    assert tokens("Hello 世界 x1-Y") == ["hello", "世", "界", "x1", "y"]


@pytest.mark.parametrize(
    "expected, predicted, score",
    [
        ("Room 4B", "room 4b", 1.0),
        ("Main Street", "Main Street North", 0.9),
        ("abc", "", 0.9),  # an empty prediction counts as contained
        ("", "", 1.0),
        ("", "x", 0.0),
        ("red apple", "green apple", 0.5),
        ("明天下午", "明天上午", 0.75),  # tokens 明天下午 vs 明天上午: overlap 3 of 4 each
    ],
)
def test_value_similarity(expected, predicted, score):
    assert value_similarity(expected, predicted) == pytest.approx(score)


def test_argument_text():
    assert argument_text("x") == "x"
    assert argument_text(2) == "2"
    assert argument_text(True) == "true"
    assert argument_text({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'


def test_single_call_score_present_and_missing_keys():
    # a: 0.35 + 0.65*1 = 1.0; b missing: 0.5 * max(sim to "x" = 0, sim to "Main Street North" = 0.9)
    score = single_call_score({"a": "x", "b": "Main Street"}, {"a": "x", "c": "Main Street North"})
    assert score == pytest.approx((1.0 + 0.45) / 2)
    assert single_call_score({}, {"a": 1}) == 1.0
    assert single_call_score({"a": 1}, None) == 0.0


def test_argument_score_denominator_and_greedy_ties():
    f = {"name": "f", "arguments": {"a": "x"}}
    assert argument_score([], []) == (1.0, [])
    assert argument_score([], [f]) == (0.0, [])
    score, pairs = argument_score([f], [f, {"name": "g", "arguments": {}}])
    assert score == 0.5
    score, pairs = argument_score([f, f], [f])
    assert score == 0.5
    # Equal scores: the harness sorts (score, e, p) descending, so the later gold call wins.
    assert [(p["expected_index"], p["predicted_index"]) for p in pairs] == [(1, 0)]


def test_name_scores():
    precision, recall, f1 = name_scores(["a", "a", "b"], ["a", "c"])
    assert (precision, recall) == (0.5, pytest.approx(1 / 3))
    assert f1 == pytest.approx(0.4)
    assert name_scores([], []) == (1.0, 1.0, 1.0)
    assert name_scores(["a"], []) == (0.0, 0.0, 0.0)
    assert name_scores([], ["a"]) == (0.0, 1.0, 0.0)


def test_tool_call_score_and_bir_test():
    f = {"name": "f", "arguments": {"a": "x"}}
    assert tool_call_score([f], [f]) == pytest.approx(1.0)
    assert tool_call_score([f], []) == pytest.approx(0.0)
    assert calls_preserved([], [])
    assert not calls_preserved([], [f])
    assert calls_preserved([f], [{"name": "f", "arguments": {"a": "X"}}])
    # Right name, unrelated value: 0.35 + 0.65*0 = 0.35 < 0.8.
    assert not calls_preserved([f], [{"name": "f", "arguments": {"a": "zzz"}}])
