"""The tool-call validator (SPEC §4): every worked example, §9 items 18-21, the spec schema."""

import itertools
import random

import pytest

from evaluation.benchmarks.msibench.validator import (
    check_spec,
    required_call_count,
    strict_equal,
    validate_tool_calls,
)


def spec(raw):
    checked, problems = check_spec(raw)
    assert problems == [], problems
    return checked


TRANSFER = spec(
    {
        "call_policy": "exact_multiset",
        "required_calls": [
            {
                "name": "transfer_booking",
                "arguments": {
                    "owner": {"op": "exact", "value": "S2"},
                    "seats": {"op": "exact", "value": 2},
                },
            }
        ],
        "forbidden_call_names": ["cancel_booking"],
    }
)

ORDER = spec(
    {
        "call_policy": "exact_multiset",
        "required_calls": [
            {
                "name": "order_items",
                "arguments": {
                    "amount": {"op": "number_equal", "value": 4},
                    "size": {"op": "one_of", "values": ["large", "extra_large"]},
                    "recipients": {"op": "set_equals", "values": ["S1", "S3"]},
                },
                "optional_null_arguments": ["note"],
            }
        ],
    }
)

SUBSET = spec(
    {
        "call_policy": "required_subset",
        "required_calls": [{"name": "hold_item"}],
        "forbidden_call_names": ["reveal_gift"],
    }
)


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def verdict(the_spec, calls):
    return validate_tool_calls(spec=the_spec, calls=calls).passed


# --- §4.6 worked examples ------------------------------------------------------------------------


def test_transfer_booking_exact_values_pass():
    result = validate_tool_calls(
        spec=TRANSFER, calls=[call("transfer_booking", owner="S2", seats=2)]
    )
    assert result.passed
    assert result.required_call_count == 1
    assert result.matched_pairs == [
        {"required_index": 0, "predicted_index": 0, "name": "transfer_booking"}
    ]
    assert result.reasons == []


def test_transfer_booking_float_seats_fail_on_type():
    result = validate_tool_calls(
        spec=TRANSFER, calls=[call("transfer_booking", owner="S2", seats=2.0)]
    )
    assert not result.passed
    assert result.unmatched_required == [0]
    assert "argument 'seats': expected exact 2, got 2.0 (float)" in result.reasons[0]


def test_transfer_booking_lowercase_owner_fails():
    assert not verdict(TRANSFER, [call("transfer_booking", owner="s2", seats=2)])


def test_transfer_booking_extra_null_argument_not_optional_fails():
    result = validate_tool_calls(
        spec=TRANSFER, calls=[call("transfer_booking", owner="S2", seats=2, note=None)]
    )
    assert not result.passed
    assert "unexpected argument 'note'" in result.reasons[0]


def test_transfer_booking_extra_call_unmatched_fails():
    result = validate_tool_calls(
        spec=TRANSFER,
        calls=[call("transfer_booking", owner="S2", seats=2), call("send_note", text="hi")],
    )
    assert not result.passed
    assert result.unmatched_predicted == [1]
    assert result.reasons == [
        "call 1 ('send_note') matches no required call (exact_multiset allows no extra calls)"
    ]


def test_transfer_booking_forbidden_call_fails():
    result = validate_tool_calls(
        spec=TRANSFER,
        calls=[call("transfer_booking", owner="S2", seats=2), call("cancel_booking", id=1)],
    )
    assert not result.passed
    assert result.forbidden_predicted == [1]
    assert "call 1 ('cancel_booking') calls a forbidden tool" in result.reasons


def test_order_items_number_one_of_set_and_optional_null_pass():
    calls = [
        call("order_items", amount=4.0, size="extra_large", recipients=["S3", "S1"], note=None)
    ]
    assert verdict(ORDER, calls)


@pytest.mark.parametrize("amount", ["4", True, 4.1, 3.9999999999])
def test_order_items_amount_is_type_strict_and_exact(amount):
    calls = [call("order_items", amount=amount, size="large", recipients=["S1", "S3"])]
    assert not verdict(ORDER, calls)


def test_order_items_duplicated_recipient_fails():
    calls = [call("order_items", amount=4, size="large", recipients=["S1", "S3", "S3"])]
    assert not verdict(ORDER, calls)


def test_order_items_optional_argument_must_be_null():
    calls = [call("order_items", amount=4, size="large", recipients=["S1", "S3"], note="ring")]
    result = validate_tool_calls(spec=ORDER, calls=calls)
    assert not result.passed
    assert "optional argument 'note' must be null, got \"ring\"" in result.reasons[0]


def test_matching_finds_what_greedy_misses():
    the_spec = spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [
                {"name": "set_status", "arguments": {"v": {"op": "one_of", "values": ["a", "b"]}}},
                {"name": "set_status", "arguments": {"v": {"op": "exact", "value": "a"}}},
            ],
        }
    )
    result = validate_tool_calls(
        spec=the_spec, calls=[call("set_status", v="a"), call("set_status", v="b")]
    )
    assert result.passed
    # Augmenting paths in requirement order: req0 first takes call 0, req1 then re-routes req0.
    assert [(p["required_index"], p["predicted_index"]) for p in result.matched_pairs] == [
        (0, 1),
        (1, 0),
    ]


def test_required_subset_tolerates_extra_calls_but_not_forbidden_or_invalid():
    assert verdict(SUBSET, [call("hold_item"), call("add_note", text="x")])
    assert not verdict(SUBSET, [call("hold_item"), call("reveal_gift")])
    result = validate_tool_calls(
        spec=SUBSET, calls=[call("hold_item"), {"name": " ", "arguments": {}}]
    )
    assert not result.passed
    assert result.invalid_predicted == [1]
    assert result.reasons == ["call 1 (' ') is invalid: the name is blank"]


def test_no_calls_passes_only_an_empty_list():
    no_calls = spec({"call_policy": "no_calls"})
    assert verdict(no_calls, [])
    assert not verdict(no_calls, [call("anything")])
    assert required_call_count(no_calls) == 0


def test_forbidden_only_subset_requires_no_call():
    forbidden_only = spec({"call_policy": "required_subset", "forbidden_call_names": ["leak"]})
    assert required_call_count(forbidden_only) == 0
    assert verdict(forbidden_only, [])
    assert verdict(forbidden_only, [call("other")])
    assert not verdict(forbidden_only, [call("leak")])


def test_missing_requirement_is_explained():
    result = validate_tool_calls(spec=TRANSFER, calls=[])
    assert not result.passed
    assert result.reasons == [
        "required call 0 ('transfer_booking'): no predicted call has this name"
    ]


# --- §9 items 18-20 and invalid calls ----------------------------------------------------------------


def test_item_18_type_strict_values():
    exact_two = spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [{"name": "f", "arguments": {"x": {"op": "exact", "value": 2}}}],
        }
    )
    assert not verdict(exact_two, [call("f", x=2.0)])
    number_four = spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [
                {"name": "f", "arguments": {"x": {"op": "number_equal", "value": 4}}}
            ],
        }
    )
    assert not verdict(number_four, [call("f", x=True)])
    assert verdict(number_four, [call("f", x=4.0)])


def test_item_19_extra_argument_only_if_optional_and_null():
    the_spec = spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [{"name": "f", "optional_null_arguments": ["n"]}],
        }
    )
    assert verdict(the_spec, [call("f", n=None)])
    assert verdict(the_spec, [call("f")])
    assert not verdict(the_spec, [call("f", n=0)])
    assert not verdict(the_spec, [call("f", m=None)])


def test_item_20_blank_name_fails_even_under_required_subset():
    forbidden_only = spec({"call_policy": "required_subset", "forbidden_call_names": ["leak"]})
    assert not verdict(forbidden_only, [{"name": "\u3000", "arguments": {}}])


def test_blank_argument_name_makes_a_call_invalid():
    result = validate_tool_calls(
        spec=SUBSET, calls=[call("hold_item"), {"name": "x", "arguments": {" ": 1}}]
    )
    assert result.invalid_predicted == [1]
    assert not result.passed


def test_strings_compare_exactly():
    assert not strict_equal("Café", "Cafe\u0301")  # NFC vs NFD
    assert not strict_equal("a b", "a  b")
    assert strict_equal({"k": [1, "x", None]}, {"k": [1, "x", None]})
    assert not strict_equal({"k": [1]}, {"k": [True]})
    assert not strict_equal([1, 2], [2, 1])


def test_nested_exact_values_are_strict():
    the_spec = spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [
                {"name": "f", "arguments": {"x": {"op": "exact", "value": {"a": [1, 2]}}}}
            ],
        }
    )
    assert verdict(the_spec, [call("f", x={"a": [1, 2]})])
    assert not verdict(the_spec, [call("f", x={"a": [1, 2.0]})])
    assert not verdict(the_spec, [call("f", x={"a": [2, 1]})])


# --- maximum matching against brute force ---------------------------------------------------------


def brute_force_matching_size(adjacency, n_calls):
    best = 0
    n_req = len(adjacency)
    for size in range(min(n_req, n_calls), 0, -1):
        for reqs in itertools.combinations(range(n_req), size):
            for calls in itertools.permutations(range(n_calls), size):
                if all(c in adjacency[r] for r, c in zip(reqs, calls, strict=True)):
                    return size
    return best


def test_matching_is_maximum_on_random_instances():
    rng = random.Random(7)
    values = ["a", "b", "c"]
    for _ in range(300):
        requirements = []
        for _ in range(rng.randint(1, 4)):
            options = rng.sample(values, rng.randint(1, 3))
            requirements.append(
                {"name": "f", "arguments": {"v": {"op": "one_of", "values": options}}}
            )
        calls = [call("f", v=rng.choice(values)) for _ in range(rng.randint(0, 4))]
        the_spec = spec({"call_policy": "required_subset", "required_calls": requirements})
        result = validate_tool_calls(spec=the_spec, calls=calls)
        adjacency = [
            [i for i, c in enumerate(calls) if c["arguments"]["v"] in r["arguments"]["v"]["values"]]
            for r in requirements
        ]
        assert len(result.matched_pairs) == brute_force_matching_size(adjacency, len(calls))
        assert result.passed == (len(result.matched_pairs) == len(requirements))
        for pair in result.matched_pairs:
            assert pair["predicted_index"] in adjacency[pair["required_index"]]


# --- the spec schema (§4.1) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, message",
    [
        ("x", "tool_validation: must be an object or null"),
        (
            {"call_policy": "all_calls"},
            "tool_validation.call_policy: must be one of no_calls, exact_multiset, required_subset",
        ),
        (
            {"call_policy": "no_calls", "required_calls": []},
            "tool_validation.required_calls: unknown field",
        ),
        ({"call_policy": "exact_multiset"}, "tool_validation.required_calls: required"),
        (
            {"call_policy": "exact_multiset", "required_calls": []},
            "tool_validation.required_calls: exact_multiset needs at least one call",
        ),
        (
            {"call_policy": "required_subset"},
            "tool_validation: required_subset needs required_calls or forbidden_call_names",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [{"name": "f"}],
                "forbidden_call_names": ["f"],
            },
            "tool_validation: required tool names cannot also be forbidden: ['f']",
        ),
        (
            {"call_policy": "required_subset", "forbidden_call_names": ["f", "f"]},
            "tool_validation.forbidden_call_names: names must be unique",
        ),
        (
            {"call_policy": "required_subset", "forbidden_call_names": [" "]},
            "tool_validation.forbidden_call_names[0]: must not be blank",
        ),
        (
            {"call_policy": "required_subset", "forbidden_call_names": None},
            "tool_validation.forbidden_call_names: must be a list",
        ),
        (
            {"call_policy": "required_subset", "required_calls": [{"name": " "}]},
            "tool_validation.required_calls[0].name: must not be blank",
        ),
        (
            {"call_policy": "required_subset", "required_calls": [{"arguments": {}}]},
            "tool_validation.required_calls[0].name: required",
        ),
        (
            {"call_policy": "required_subset", "required_calls": [{"name": "f", "id": 1}]},
            "tool_validation.required_calls[0].id: unknown field",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [{"name": "f", "arguments": {"x": {"value": 1}}}],
            },
            "tool_validation.required_calls[0].arguments.x.op: must be one of exact, number_equal, one_of, set_equals",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [{"name": "f", "arguments": {"x": {"op": "exact"}}}],
            },
            "tool_validation.required_calls[0].arguments.x.value: required",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {"name": "f", "arguments": {"x": {"op": "exact", "value": 1, "tolerance": 0.1}}}
                ],
            },
            "tool_validation.required_calls[0].arguments.x.tolerance: unknown field",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {"name": "f", "arguments": {"x": {"op": "number_equal", "value": "4"}}}
                ],
            },
            "tool_validation.required_calls[0].arguments.x.value: number_equal value must be a JSON number",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {"name": "f", "arguments": {"x": {"op": "number_equal", "value": True}}}
                ],
            },
            "tool_validation.required_calls[0].arguments.x.value: number_equal value must be a JSON number",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {"name": "f", "arguments": {"x": {"op": "one_of", "values": []}}}
                ],
            },
            "tool_validation.required_calls[0].arguments.x.values: one_of needs at least one value",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {"name": "f", "arguments": {"x": {"op": "set_equals", "values": ["a", "a"]}}}
                ],
            },
            "tool_validation.required_calls[0].arguments.x.values: set_equals values must be unique",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [
                    {
                        "name": "f",
                        "arguments": {"x": {"op": "exact", "value": 1}},
                        "optional_null_arguments": ["x"],
                    }
                ],
            },
            "tool_validation.required_calls[0]: matched arguments cannot also be optional null arguments: ['x']",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [{"name": "f", "optional_null_arguments": ["n", "n"]}],
            },
            "tool_validation.required_calls[0].optional_null_arguments: names must be unique",
        ),
        (
            {
                "call_policy": "required_subset",
                "required_calls": [{"name": "f", "arguments": {" ": {"op": "exact", "value": 1}}}],
            },
            "tool_validation.required_calls[0].arguments: argument names must not be blank",
        ),
    ],
)
def test_spec_schema_errors(raw, message):
    checked, problems = check_spec(raw)
    assert checked is None
    assert message in problems


def test_set_equals_values_unique_under_strict_equality():
    # 1 and 1.0 and true are distinct values for the harness.
    checked, problems = check_spec(
        {
            "call_policy": "required_subset",
            "required_calls": [
                {"name": "f", "arguments": {"x": {"op": "set_equals", "values": [1, 1.0, True]}}}
            ],
        }
    )
    assert problems == []


def test_null_spec_means_no_validator():
    assert check_spec(None) == (None, [])
    assert required_call_count(None) == 0


def test_defaults_are_filled():
    checked = spec({"call_policy": "required_subset", "required_calls": [{"name": "f"}]})
    assert checked == {
        "call_policy": "required_subset",
        "required_calls": [{"name": "f", "arguments": {}, "optional_null_arguments": []}],
        "forbidden_call_names": [],
    }
