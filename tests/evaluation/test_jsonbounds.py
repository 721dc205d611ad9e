"""Bounds measured on raw JSON before parsing, checked against the parsed documents."""

import json
import random

import pytest

from evaluation.jsonbounds import JsonRefused, loads_bounded, nesting_depth, value_bound


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def count_values(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(count_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(count_values(v) for v in value)
    return 1


def random_document(rng: random.Random, depth: int = 0):
    kind = rng.random()
    if depth > 6 or kind < 0.3:
        return rng.choice([1, 2.5, None, True, 'he said "[{"', "back\\slash ]}", "\u00e9 \\u"])
    if kind < 0.65:
        return [random_document(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}[": random_document(rng, depth + 1) for i in range(rng.randint(0, 4))}


def test_depth_and_value_bound_agree_with_the_parsed_document():
    rng = random.Random(7)
    for _ in range(300):
        document = random_document(rng)
        for ensure_ascii in (True, False):
            raw = json.dumps(document, ensure_ascii=ensure_ascii).encode()
            assert nesting_depth(raw) == depth_of(document), raw
            assert value_bound(raw) >= count_values(document), raw


def test_refuses_before_parsing():
    with pytest.raises(JsonRefused, match="nests 1,000,000 levels deep; at most 32"):
        loads_bounded(b"[" * 1_000_000 + b"]" * 1_000_000, max_depth=32)
    with pytest.raises(JsonRefused, match="more than 1,000 JSON values"):
        loads_bounded(b"[" + b"{}," * 1000 + b"{}]", max_depth=32, max_values=1000)
    assert loads_bounded(b'{"a": [1, {"b": "[[["}]}', max_depth=3) == {"a": [1, {"b": "[[["}]}


def nested(depth: int) -> object:
    """Arrays and objects by turns, ``depth`` levels deep, innermost a string with brackets."""
    value: object = "]}[{"
    for level in range(depth):
        value = [value, 1] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("max_depth", [1, 2, 3, 4, 5, 31, 32])
def test_refuses_exactly_the_documents_nested_deeper_than_the_bound(max_depth):
    rng = random.Random(max_depth)
    documents = [random_document(rng) for _ in range(200)]
    documents += [nested(depth) for depth in range(max_depth - 2, max_depth + 3) if depth >= 0]
    for document in documents:
        raw = json.dumps(document).encode()
        depth = depth_of(document)
        if depth > max_depth:
            with pytest.raises(JsonRefused, match=f"nests {depth:,} levels deep"):
                loads_bounded(raw, max_depth=max_depth)
        else:
            assert loads_bounded(raw, max_depth=max_depth) == document, raw


def test_brackets_that_do_not_pair_up_are_left_to_the_parser_or_refused_by_their_count():
    # Never peeled away, so counted: within the bound the parser refuses them as invalid.
    with pytest.raises(json.JSONDecodeError):
        loads_bounded(b"[" * 20 + b"}" * 20, max_depth=32)
    with pytest.raises(JsonRefused, match="nests 40 levels deep"):
        loads_bounded(b"[" * 40 + b"}" * 40, max_depth=32)
    # An unterminated string holds every bracket after its quote, as the parser reads it.
    with pytest.raises(json.JSONDecodeError):
        loads_bounded(b'"' + b"[" * 100, max_depth=4)
