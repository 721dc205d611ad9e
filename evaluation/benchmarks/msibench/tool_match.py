"""Fuzzy tool-call diagnostics (SPEC §5): name precision/recall/F1 and the greedy argument
score. Only BIR uses them (the ``argument_score >= 0.8`` test); ``tool_call_score`` is shown as a
diagnostic and enters no table. Pure."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any


def call_names(calls: Any) -> list[str]:
    """Names of the calls that are objects with a string name, in order."""
    if not isinstance(calls, list):
        return []
    return [
        call["name"]
        for call in calls
        if isinstance(call, dict) and isinstance(call.get("name"), str)
    ]


def _overlap(left: Counter, right: Counter) -> int:
    return sum(min(left[key], right[key]) for key in left.keys() & right.keys())


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def name_scores(expected: list[str], predicted: list[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of the name multisets; no predictions is precision 1 only when
    nothing was expected, no expectations is recall 1."""
    overlap = _overlap(Counter(expected), Counter(predicted))
    precision = overlap / len(predicted) if predicted else float(not expected)
    recall = overlap / len(expected) if expected else 1.0
    return precision, recall, _f1(precision, recall)


def compact(text: str) -> str:
    return "".join(char.casefold() for char in text if char.isalnum())


def tokens(text: str) -> list[str]:
    """Casefolded runs of ASCII letters/digits, and every other alphanumeric character alone
    (so Mandarin is compared character by character)."""
    out: list[str] = []
    run: list[str] = []
    for char in text:
        if char.isascii() and char.isalnum():
            run.append(char.casefold())
            continue
        if run:
            out.append("".join(run))
            run = []
        if char.isalnum():
            out.append(char.casefold())
    if run:
        out.append("".join(run))
    return out


def _token_f1(expected: list[str], predicted: list[str]) -> float:
    if not expected:
        return 1.0 if not predicted else 0.0
    if not predicted:
        return 0.0
    overlap = _overlap(Counter(expected), Counter(predicted))
    return _f1(overlap / len(predicted), overlap / len(expected))


def value_similarity(expected: str, predicted: str) -> float:
    """1 for equal compacts, 0.9 when one contains the other (an empty prediction counts as
    contained), else token F1."""
    e, p = compact(expected), compact(predicted)
    if not e:
        return 1.0 if not p else 0.0
    if e == p:
        return 1.0
    if e in p or p in e:
        return 0.9
    return _token_f1(tokens(expected), tokens(predicted))


def argument_text(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )


def single_call_score(expected_args: Any, predicted_args: Any) -> float:
    """Mean over gold arguments: 0.35 + 0.65·similarity when the key is present, else half the
    best similarity to any predicted value. Empty or non-object gold arguments score 1."""
    if not isinstance(expected_args, dict) or not expected_args:
        return 1.0
    if not isinstance(predicted_args, dict):
        predicted_args = {}
    predicted_texts = [argument_text(value) for value in predicted_args.values()]
    scores = []
    for key, value in expected_args.items():
        text = argument_text(value)
        if key in predicted_args:
            scores.append(0.35 + 0.65 * value_similarity(text, argument_text(predicted_args[key])))
        else:
            best = max((value_similarity(text, other) for other in predicted_texts), default=0.0)
            scores.append(0.5 * best)
    return sum(scores) / len(scores)


def argument_score(expected: Any, predicted: Any) -> tuple[float, list[dict]]:
    """(score, matched pairs): same-name pairs taken greedily by descending (score, expected
    index, predicted index), each side once; the sum over max(|E|, |P|, 1). No gold calls score 1
    only when nothing was predicted."""
    expected = expected if isinstance(expected, list) else []
    predicted = predicted if isinstance(predicted, list) else []
    if not expected:
        return (1.0 if not predicted else 0.0), []
    candidates = []
    for e_index, e_call in enumerate(expected):
        if not isinstance(e_call, dict):
            continue
        for p_index, p_call in enumerate(predicted):
            if not isinstance(p_call, dict) or e_call.get("name") != p_call.get("name"):
                continue
            score = single_call_score(e_call.get("arguments", {}), p_call.get("arguments", {}))
            candidates.append((score, e_index, p_index))
    used_e: set[int] = set()
    used_p: set[int] = set()
    pairs = []
    for score, e_index, p_index in sorted(candidates, reverse=True):
        if e_index in used_e or p_index in used_p:
            continue
        used_e.add(e_index)
        used_p.add(p_index)
        pairs.append(
            {
                "expected_index": e_index,
                "predicted_index": p_index,
                "name": expected[e_index].get("name"),
                "argument_score": score,
            }
        )
    total = sum(pair["argument_score"] for pair in pairs)
    return total / max(len(expected), len(predicted), 1), sorted(
        pairs, key=lambda pair: pair["expected_index"]
    )


def tool_call_score(expected: Any, predicted: Any) -> float:
    """The diagnostic 0.4·name F1 + 0.6·argument score (in no table)."""
    _, _, f1 = name_scores(call_names(expected), call_names(predicted))
    return 0.4 * f1 + 0.6 * argument_score(expected, predicted)[0]


def calls_preserved(expected: Any, predicted: Any) -> bool:
    """BIR's tool test (§7.6): name multisets equal and argument score >= 0.8."""
    names_match = Counter(call_names(expected)) == Counter(call_names(predicted))
    return names_match and argument_score(expected, predicted)[0] >= 0.8
