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
