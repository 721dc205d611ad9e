"""The deterministic tool-call validator of MSI-Bench (SPEC §4), and the schema of its spec.

Pure. ``check_spec`` applies the harness's spec schema (every object extra=forbid) to a case's
``eval.tool_validation`` at import; ``validate_tool_calls`` is the validator itself: type-strict
matchers, maximum bipartite matching between required and predicted calls (augmenting paths in
requirement order, as the harness does, so ``matched_pairs`` is the same), forbidden names and
invalid calls, with a readable reason for each failing requirement and call (for the drill-down).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

POLICY_VERSION = "ib.tool_validation.v2"
CALL_POLICIES = ("no_calls", "exact_multiset", "required_subset")
MATCHER_OPS = ("exact", "number_equal", "one_of", "set_equals")

# --- strict equality and matchers (§4.3) ----------------------------------------------------


def strict_equal(expected: Any, predicted: Any) -> bool:
    """The harness's ``same``: equal types all the way down, so true != 1, 2 != 2.0, "2" != 2."""
    if type(expected) is not type(predicted):
        return False
    if isinstance(expected, dict):
        return set(expected) == set(predicted) and all(
            strict_equal(value, predicted[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return len(expected) == len(predicted) and all(
            strict_equal(a, b) for a, b in zip(expected, predicted, strict=True)
        )
    return bool(expected == predicted)


def matcher_accepts(matcher: Mapping, value: Any) -> bool:
    op = matcher["op"]
    if op == "exact":
        return strict_equal(matcher["value"], value)
    if op == "number_equal":
        # No tolerance and no coercion: 4.0 == 4 passes, 4.1, "4" and true do not.
        return type(value) in (int, float) and matcher["value"] == value
    if op == "one_of":
        return any(strict_equal(option, value) for option in matcher["values"])
    if op == "set_equals":
        values = matcher["values"]
        return (
            isinstance(value, list)
            and len(value) == len(values)
            and all(any(strict_equal(item, other) for other in value) for item in values)
        )
    raise ValueError(f"unknown matcher op {op!r}")


def describe_matcher(matcher: Mapping) -> str:
    op = matcher["op"]
    if op in ("exact", "number_equal"):
        return f"{op} {_show(matcher['value'])}"
    return f"{op} {_show(matcher['values'])}"


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "list"}.get(
        type(value), "object"
    )


# --- predicted calls (§4.2, §4.4) -------------------------------------------------------------


def invalid_call_reason(call: Any) -> str | None:
    """Why a predicted call is invalid (None: valid): the name must be a string with
    non-whitespace content, ``arguments`` an object whose keys are all non-blank."""
    if not isinstance(call, Mapping):
        return "the call is not an object"
    name = call.get("name")
    arguments = call.get("arguments", {})
    if not isinstance(name, str):
        return "the name is not a string"
    if not name.strip():
        return "the name is blank"
    if not isinstance(arguments, Mapping):
        return "arguments is not an object"
    if any(not isinstance(key, str) or not key.strip() for key in arguments):
        return "an argument name is blank"
    return None


def call_mismatch(requirement: Mapping, call: Any) -> str | None:
    """Why ``call`` does not satisfy ``requirement`` (None: it does), §4.4."""
    reason = invalid_call_reason(call)
    if reason is not None:
        return f"invalid call: {reason}"
    if call["name"] != requirement["name"]:
        return f"name {call['name']!r} is not {requirement['name']!r}"
    arguments = call.get("arguments", {})
    required = requirement["arguments"]
    missing = [name for name in required if name not in arguments]
    if missing:
        return "missing argument(s) " + ", ".join(missing)
    optional = requirement["optional_null_arguments"]
    for name in arguments:
        if name in required:
            continue
        if name not in optional:
            return f"unexpected argument {name!r}"
        if arguments[name] is not None:
            return f"optional argument {name!r} must be null, got {_show(arguments[name])}"
    for name, matcher in required.items():
        value = arguments[name]
        if not matcher_accepts(matcher, value):
            return (
                f"argument {name!r}: expected {describe_matcher(matcher)}, "
                f"got {_show(value)} ({_type_name(value)})"
            )
    return None


def _maximum_matching(adjacency: list[list[int]]) -> list[tuple[int, int]]:
    """Maximum-cardinality pairs (requirement, prediction) by augmenting paths tried in
    requirement order, each search seeing a prediction at most once (the harness's order)."""
    owner: dict[int, int] = {}

    def augment(required_index: int, visited: set[int]) -> bool:
        for predicted_index in adjacency[required_index]:
            if predicted_index in visited:
                continue
            visited.add(predicted_index)
            previous = owner.get(predicted_index)
            if previous is None or augment(previous, visited):
                owner[predicted_index] = required_index
                return True
        return False

    for required_index in range(len(adjacency)):
        augment(required_index, set())
    return sorted(((r, p) for p, r in owner.items()), key=lambda pair: pair[0])


@dataclass(frozen=True)
class ValidatorResult:
    """The validator's verdict on one prediction, as JSON by ``to_json``."""

    passed: bool
    call_policy: str
    required_call_count: int
    predicted_call_count: int
    matched_pairs: list[dict] = field(default_factory=list)
    unmatched_required: list[int] = field(default_factory=list)
    unmatched_predicted: list[int] = field(default_factory=list)
    forbidden_predicted: list[int] = field(default_factory=list)
    invalid_predicted: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "policy_version": POLICY_VERSION,
            "passed": self.passed,
            "call_policy": self.call_policy,
            "required_call_count": self.required_call_count,
            "predicted_call_count": self.predicted_call_count,
            "matched_pairs": list(self.matched_pairs),
            "unmatched_required": list(self.unmatched_required),
            "unmatched_predicted": list(self.unmatched_predicted),
            "forbidden_predicted": list(self.forbidden_predicted),
            "invalid_predicted": list(self.invalid_predicted),
            "reasons": list(self.reasons),
        }


def required_calls_of(spec: Mapping) -> list[Mapping]:
    return [] if spec["call_policy"] == "no_calls" else list(spec.get("required_calls", []))


def required_call_count(spec: Mapping | None) -> int:
    """0 for no spec, no_calls and forbidden-only subsets (§4.6)."""
    return 0 if spec is None else len(required_calls_of(spec))


def validate_tool_calls(*, spec: Mapping, calls: list) -> ValidatorResult:
    """The validator of §4 on a normalised spec (see ``check_spec``) and the upload's raw
    ``tool_calls`` list."""
    if not isinstance(calls, list):
        raise ValueError("predicted calls must be a list")
    policy = spec["call_policy"]
    requirements = required_calls_of(spec)
    forbidden_names = set(spec.get("forbidden_call_names", []))
    invalid = [i for i, call in enumerate(calls) if invalid_call_reason(call) is not None]
    forbidden = [
        i
        for i, call in enumerate(calls)
        if isinstance(call, Mapping) and call.get("name") in forbidden_names
    ]
    adjacency = [
        [i for i, call in enumerate(calls) if call_mismatch(requirement, call) is None]
        for requirement in requirements
    ]
    pairs = _maximum_matching(adjacency)
    matched_required = {r for r, _ in pairs}
    matched_predicted = {p for _, p in pairs}
    unmatched_required = [r for r in range(len(requirements)) if r not in matched_required]
    unmatched_predicted = [p for p in range(len(calls)) if p not in matched_predicted]
    passed = not invalid and not forbidden and not unmatched_required
    if passed and policy != "required_subset":
        passed = not unmatched_predicted
    reasons = _reasons(
        policy=policy,
        requirements=requirements,
        calls=calls,
        invalid=invalid,
        forbidden=forbidden,
        unmatched_required=unmatched_required,
        unmatched_predicted=unmatched_predicted,
    )
    return ValidatorResult(
        passed=passed,
        call_policy=policy,
        required_call_count=len(requirements),
        predicted_call_count=len(calls),
        matched_pairs=[
            {"required_index": r, "predicted_index": p, "name": requirements[r]["name"]}
            for r, p in pairs
        ],
        unmatched_required=unmatched_required,
        unmatched_predicted=unmatched_predicted,
        forbidden_predicted=forbidden,
        invalid_predicted=invalid,
        reasons=reasons,
    )


def _call_label(index: int, call: Any) -> str:
    name = call.get("name") if isinstance(call, Mapping) else None
    return f"call {index} ({name!r})" if isinstance(name, str) else f"call {index}"


def _reasons(
    *,
    policy: str,
    requirements: list[Mapping],
    calls: list,
    invalid: list[int],
    forbidden: list[int],
    unmatched_required: list[int],
    unmatched_predicted: list[int],
) -> list[str]:
    reasons = []
    for index in invalid:
        reasons.append(
            f"{_call_label(index, calls[index])} is invalid: {invalid_call_reason(calls[index])}"
        )
    for index in forbidden:
        reasons.append(f"{_call_label(index, calls[index])} calls a forbidden tool")
    for r in unmatched_required:
        requirement = requirements[r]
        label = f"required call {r} ({requirement['name']!r})"
        same_name = [
            i
            for i, call in enumerate(calls)
            if isinstance(call, Mapping) and call.get("name") == requirement["name"]
        ]
        if not same_name:
            reasons.append(f"{label}: no predicted call has this name")
            continue
        details = []
        for i in same_name:
            why = call_mismatch(requirement, calls[i])
            details.append(
                f"call {i}: {why}" if why else f"call {i} is taken by another requirement"
            )
        reasons.append(f"{label} unmatched: " + "; ".join(details))
    if policy != "required_subset":
        for index in unmatched_predicted:
            if index in invalid or index in forbidden:
                continue
            reasons.append(
                f"{_call_label(index, calls[index])} matches no required call "
                f"({policy} allows no extra calls)"
            )
    return reasons


# --- the spec schema (§4.1) -------------------------------------------------------------------


def check_spec(raw: Any, *, where: str = "tool_validation") -> tuple[dict | None, list[str]]:
    """(normalised spec, problems) for a case's ``eval.tool_validation``, with the harness's
    schema: a discriminated union on ``call_policy``, every object extra=forbid, defaults filled
    (``forbidden_call_names`` [], ``arguments`` {}, ``optional_null_arguments`` []). A null spec is
    (None, []): the case has no validator atom and is outside Tool."""
    if raw is None:
        return None, []
    problems: list[str] = []
    if not isinstance(raw, dict):
        return None, [f"{where}: must be an object or null"]
    policy = raw.get("call_policy")
    if policy not in CALL_POLICIES:
        return None, [f"{where}.call_policy: must be one of {', '.join(CALL_POLICIES)}"]
    allowed = (
        {"call_policy"}
        if policy == "no_calls"
        else {"call_policy", "required_calls", "forbidden_call_names"}
    )
    problems += _extra_keys(raw, allowed, where)
    if policy == "no_calls":
        return ({"call_policy": policy} if not problems else None), problems
    required_raw = raw.get("required_calls", [] if policy == "required_subset" else None)
    forbidden_raw = raw.get("forbidden_call_names", [])
    required: list[dict] = []
    if "required_calls" not in raw and policy == "exact_multiset":
        problems.append(f"{where}.required_calls: required")
    elif not isinstance(required_raw, list):
        problems.append(f"{where}.required_calls: must be a list")
    else:
        if policy == "exact_multiset" and not required_raw:
            problems.append(f"{where}.required_calls: exact_multiset needs at least one call")
        for index, item in enumerate(required_raw):
            call, call_problems = _check_required_call(item, f"{where}.required_calls[{index}]")
            problems += call_problems
            if call is not None:
                required.append(call)
    forbidden: list[str] = []
    if not isinstance(forbidden_raw, list):
        problems.append(f"{where}.forbidden_call_names: must be a list")
    else:
        for index, name in enumerate(forbidden_raw):
            if not isinstance(name, str):
                problems.append(f"{where}.forbidden_call_names[{index}]: must be a string")
            elif not name.strip():
                problems.append(f"{where}.forbidden_call_names[{index}]: must not be blank")
            else:
                forbidden.append(name)
        if len(forbidden) != len(set(forbidden)):
            problems.append(f"{where}.forbidden_call_names: names must be unique")
    if (
        policy == "required_subset"
        and isinstance(required_raw, list)
        and isinstance(forbidden_raw, list)
        and not required_raw
        and not forbidden_raw
    ):
        problems.append(f"{where}: required_subset needs required_calls or forbidden_call_names")
    overlap = sorted({call["name"] for call in required} & set(forbidden))
    if overlap:
        problems.append(f"{where}: required tool names cannot also be forbidden: {overlap}")
    if problems:
        return None, problems
    return {
        "call_policy": policy,
        "required_calls": required,
        "forbidden_call_names": forbidden,
    }, []


def _extra_keys(raw: dict, allowed: set[str], where: str) -> list[str]:
    return [f"{where}.{key}: unknown field" for key in raw if key not in allowed]


def _check_required_call(raw: Any, where: str) -> tuple[dict | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f"{where}: must be an object"]
    problems = _extra_keys(raw, {"name", "arguments", "optional_null_arguments"}, where)
    name = raw.get("name")
    if "name" not in raw:
        problems.append(f"{where}.name: required")
    elif not isinstance(name, str):
        problems.append(f"{where}.name: must be a string")
    elif not name.strip():
        problems.append(f"{where}.name: must not be blank")
    arguments_raw = raw.get("arguments", {})
    arguments: dict[str, dict] = {}
    if not isinstance(arguments_raw, dict):
        problems.append(f"{where}.arguments: must be an object")
    else:
        for key, matcher_raw in arguments_raw.items():
            if not key.strip():
                problems.append(f"{where}.arguments: argument names must not be blank")
                continue
            matcher, matcher_problems = _check_matcher(matcher_raw, f"{where}.arguments.{key}")
            problems += matcher_problems
            if matcher is not None:
                arguments[key] = matcher
    optional_raw = raw.get("optional_null_arguments", [])
    optional: list[str] = []
    if not isinstance(optional_raw, list):
        problems.append(f"{where}.optional_null_arguments: must be a list")
    else:
        for index, item in enumerate(optional_raw):
            if not isinstance(item, str):
                problems.append(f"{where}.optional_null_arguments[{index}]: must be a string")
            elif not item.strip():
                problems.append(f"{where}.optional_null_arguments[{index}]: must not be blank")
            else:
                optional.append(item)
        if len(optional) != len(set(optional)):
            problems.append(f"{where}.optional_null_arguments: names must be unique")
        overlap = sorted(
            set(optional) & set(arguments_raw if isinstance(arguments_raw, dict) else {})
        )
        if overlap:
            problems.append(
                f"{where}: matched arguments cannot also be optional null arguments: {overlap}"
            )
    if problems:
        return None, problems
    return {"name": name, "arguments": arguments, "optional_null_arguments": optional}, []


def _check_matcher(raw: Any, where: str) -> tuple[dict | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f"{where}: a matcher must be an object"]
    op = raw.get("op")
    if op not in MATCHER_OPS:
        return None, [f"{where}.op: must be one of {', '.join(MATCHER_OPS)}"]
    key = "value" if op in ("exact", "number_equal") else "values"
    problems = _extra_keys(raw, {"op", key}, where)
    if key not in raw:
        problems.append(f"{where}.{key}: required")
        return None, problems
    value = raw[key]
    if op == "number_equal" and type(value) not in (int, float):
        problems.append(f"{where}.value: number_equal value must be a JSON number")
    if key == "values":
        if not isinstance(value, list):
            problems.append(f"{where}.values: must be a list")
        elif op == "one_of" and not value:
            problems.append(f"{where}.values: one_of needs at least one value")
        elif op == "set_equals" and any(
            strict_equal(item, prior) for i, item in enumerate(value) for prior in value[:i]
        ):
            problems.append(f"{where}.values: set_equals values must be unique")
    if problems:
        return None, problems
    return {"op": op, key: value}, []
