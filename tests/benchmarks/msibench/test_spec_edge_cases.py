"""SPEC §9, item by item: each edge case of the harness's behaviour as a test."""

import json

import pytest

from evaluation.benchmarks.msibench.demo.synthetic import write_release
from evaluation.benchmarks.msibench.judge import (
    failed_call_result,
    judge_pairs,
    load_templates,
    parse_judge_output,
    render_messages,
)
from evaluation.benchmarks.msibench.metrics import (
    base_cell_outcome,
    language_results,
    raw_validator,
)
from evaluation.benchmarks.msibench.predictions import (
    PredictionsError,
    parse_predictions,
    read_predictions,
)
from evaluation.benchmarks.msibench.release import ReleaseError, read_release
from evaluation.benchmarks.msibench.validator import (
    check_spec,
    required_call_count,
    validate_tool_calls,
)

SPECS = {"msi-en-auth-a-001": {"kind": "base", "language": "en"}}


def row(**fields):
    return json.dumps(
        {"cell_id": "msi-en-auth-a-001", "predicted_action": "respond", **fields},
        ensure_ascii=False,
    )


def rejected(text):
    return parse_predictions(text, source="p.jsonl")[1] != []


def spec_with(rubrics, tool=None, code="auth", fallback=0):
    tool_validation = check_spec(tool)[0]
    return {
        "kind": "base",
        "cell_id": "c",
        "language": "en",
        "pattern_code": code,
        "tool_validation": tool_validation,
        "required_call_count": required_call_count(tool_validation),
        "judge_rubric_ids": sorted(rubrics),
        "rubrics": rubrics,
        "fallback_atoms": fallback,
    }


def prediction(text="answer", calls=(), action="respond", metadata=None):
    return {
        "cell_id": "c",
        "predicted_action": action,
        "answer_text": text,
        "tool_calls": list(calls),
        "confidence": None,
        "metadata": metadata,
    }


def outcome_with_answers(spec, pred, answers):
    judged = {}
    for pair in judge_pairs(spec, pred):
        judged[pair.rubric_id] = pair.fixed or parse_judge_output(
            answers[pair.rubric_id], **pair.context
        )
    return base_cell_outcome(
        spec=spec, prediction=pred, validator=raw_validator(spec, pred), judged=judged
    )


def all_pass(n):
    return json.dumps({"atomic_results": [{"passed": True, "rationale": "ok"}] * n})


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("edge") / "release"
    write_release(root, audio=False)
    return read_release(root, check_audio=False)


def test_item_01_duplicate_cell_id_rejects_the_upload():
    assert rejected(row() + "\n" + row(answer_text="again"))
    with pytest.raises(PredictionsError):
        read_predictions([("a", row()), ("b", row())], specs=SPECS, run_mode="turn-based")


@pytest.mark.parametrize("action", ["ignore", "wait", "refuse", "clarify", "Respond", "SILENT"])
def test_item_02_legacy_or_miscased_actions_rejected(action):
    assert rejected(row(predicted_action=action))


def test_item_03_extra_keys_rejected():
    assert rejected(row(id="x"))
    assert rejected(row(tool_calls=[{"name": "f", "id": "call_1"}]))
    assert rejected(row(tool_calls=[{"name": "f", "type": "function"}]))


def test_item_04_null_lists_rejected_absent_arguments_default():
    assert rejected(row(tool_calls=None))
    assert rejected(row(tool_calls=[{"name": "f", "arguments": None}]))
    (p,), problems = parse_predictions(row(tool_calls=[{"name": "f"}]), source="p")
    assert problems == [] and p.tool_calls == [{"name": "f", "arguments": {}}]


def test_item_05_raw_u2028_splits_the_line():
    assert rejected(row(answer_text="one\u2028two"))


@pytest.mark.parametrize("raw, shown", [("0.5", "0.5"), (True, "1.0"), (1, "1.0")])
def test_item_06_lax_confidence_shown_as_a_float(raw, shown, stand_in_checkout):
    # Any templates show the prediction as JSON; the demo's stand-in ones will do.
    (p,), problems = parse_predictions(row(confidence=raw, answer_text="hi"), source="p")
    assert problems == []
    spec = {
        "scene": "s",
        "expected_action": "respond",
        "logic_pattern": "eavesdropping",
        "turns": [],
    }
    _, user = render_messages(
        load_templates(stand_in_checkout),
        spec=spec,
        prediction=p.to_json(),
        rubric={"atomic_criteria": []},
    )
    assert f'"confidence": {shown}, ' in user


def test_item_07_unknown_ids_ignored_missing_base_unjudged_with_fallback():
    upload = read_predictions(
        [("a", row(cell_id="msi-en-zzz-q-001"))],
        specs={**SPECS, "msi-en-zzz-q-001h": {"kind": "hear", "language": "en"}},
        run_mode="turn-based",
    )
    assert upload.unknown_cell_ids == ["msi-en-zzz-q-001"] and upload.predictions == {}
    spec = spec_with({"r": {"atomic_criteria": [{"criterion": "a"}]}}, fallback=4)
    outcome = base_cell_outcome(spec=spec, prediction=None, validator=None, judged={})
    assert (outcome["passed"], outcome["atoms"], outcome["unjudged"]) == (False, 4, True)


def test_item_08_provider_error_skips_judge_fails_atoms_tool_raw():
    tool = {"call_policy": "exact_multiset", "required_calls": [{"name": "f"}]}
    spec = spec_with({"r": {"atomic_criteria": [{"criterion": "a"}, {"criterion": "b"}]}}, tool)
    pred = prediction(calls=[{"name": "f", "arguments": {}}], metadata={"provider_error": {}})
    (pair,) = judge_pairs(spec, pred)
    assert not pair.needs_call
    outcome = outcome_with_answers(spec, pred, {})
    assert (outcome["atoms"], outcome["atoms_passed"], outcome["validator_atom"]) == (3, 0, False)
    assert outcome["tool_passed"] is True


def test_item_09_format_error_probes_leave_the_denominators():
    specs = [
        {"kind": "hear", "cell_id": "h", "language": "en", "counts_in_prr": True},
        {"kind": "speak", "cell_id": "s", "language": "en", "gold_tool_calls": []},
    ]
    fmt = {"provider_error": {"message": "bad json"}}
    predictions = {
        "h": prediction(action="silent", text=None, metadata=fmt),
        "s": prediction(metadata=fmt),
    }
    result = language_results(
        specs=specs, predictions=predictions, judged={}, run_mode="turn-based"
    )
    assert (result["prr"]["total"], result["prr"]["probes"]) == (0, 1)
    assert (result["bir"]["total"], result["bir"]["pct"]) == (0, None)


def test_item_10_empty_answer_guard_overrides_the_judge():
    atoms = [
        {"index": 0, "criterion_index": 0, "dimension": "a.b", "scored": True},
        {"index": 1, "criterion_index": 1, "dimension": "tool.call_args", "scored": False},
    ]
    result = parse_judge_output(all_pass(2), atoms=atoms, empty_answer=True)
    assert [a["passed"] for a in result["atoms"]] == [False, True]


def test_item_11_silent_with_text_is_judged_like_respond():
    spec = spec_with({"r": {"atomic_criteria": [{"criterion": "a"}]}})
    pred = prediction(action="silent", text="Here is the plan.")
    (pair,) = judge_pairs(spec, pred)
    assert pair.needs_call and pair.context["empty_answer"] is False
    assert outcome_with_answers(spec, pred, {"r": all_pass(1)})["passed"] is True


def test_item_12_two_dimensions_never_count():
    rubric = {
        "atomic_criteria": [
            {"criterion": "a", "dimension": "tool.call_args"},
            {"criterion": "b", "dimension": "authority.request_authorized_confirmation"},
            {"criterion": "c", "dimension": "x"},
        ]
    }
    spec = spec_with({"r": rubric})
    answer = json.dumps(
        {"atomic_results": [{"passed": False}, {"passed": False}, {"passed": True}]}
    )
    outcome = outcome_with_answers(spec, prediction(), {"r": answer})
    assert (outcome["passed"], outcome["atoms"], outcome["atoms_passed"]) == (True, 1, 1)


def test_item_13_fewer_atoms_fail_more_are_ignored():
    atoms = [{"index": i, "criterion_index": i, "dimension": "d", "scored": True} for i in range(3)]
    assert [
        a["passed"]
        for a in parse_judge_output(all_pass(1), atoms=atoms, empty_answer=False)["atoms"]
    ] == [True, False, False]
    assert [
        a["passed"]
        for a in parse_judge_output(all_pass(5), atoms=atoms, empty_answer=False)["atoms"]
    ] == [True] * 3


@pytest.mark.parametrize(
    "raw",
    [
        '{"atomic_results": [{"passed": "true"}]}',
        '{"atomic_results": [{"passed": 1}]}',
        '{"atomic_results": [{"passed": true, "rationale": null}]}',
        '[{"passed": true}]',
        "not json",
        '{"atomic_results": {"passed": true}}',
    ],
)
def test_item_14_malformed_answers_fail_the_whole_rubric(raw):
    atoms = [{"index": 0, "criterion_index": 0, "dimension": "d", "scored": True}]
    result = parse_judge_output(raw, atoms=atoms, empty_answer=False)
    assert not result["ok"] and result["atoms"][0]["passed"] is False


def test_item_15_fenced_prose_and_braces_in_prose():
    atoms = [{"index": 0, "criterion_index": 0, "dimension": "d", "scored": True}]
    assert parse_judge_output("```json\n" + all_pass(1) + "\n```", atoms=atoms, empty_answer=False)[
        "atoms"
    ][0]["passed"]
    assert parse_judge_output("Sure. " + all_pass(1), atoms=atoms, empty_answer=False)["atoms"][0][
        "passed"
    ]
    broken = parse_judge_output("Options {a, b}: " + all_pass(1), atoms=atoms, empty_answer=False)
    assert not broken["ok"] and broken["atoms"][0]["passed"] is False


def test_item_16_empty_content_fails_the_rubric():
    atoms = [{"index": 0, "criterion_index": 0, "dimension": "d", "scored": True}]
    assert not parse_judge_output("", atoms=atoms, empty_answer=False)["ok"]


def test_item_17_a_judgment_whose_calls_keep_failing_fails_every_atom():
    # The harness does not retry a 429 and re-runs failed judgments on its next invocation; the
    # site re-requests instead, and stores this only when a board must publish (§6.4).
    atoms = [{"index": 0, "criterion_index": 0, "dimension": "d", "scored": True}]
    result = failed_call_result(atoms, "HTTP 429 after retries")
    assert (result["ok"], result["fixed"], result["atoms"][0]["passed"]) == (False, "failed", False)


def test_item_18_type_strict_values():
    spec = check_spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [
                {
                    "name": "f",
                    "arguments": {
                        "a": {"op": "exact", "value": 2},
                        "b": {"op": "number_equal", "value": 4},
                    },
                }
            ],
        }
    )[0]
    assert not validate_tool_calls(
        spec=spec, calls=[{"name": "f", "arguments": {"a": 2.0, "b": 4}}]
    ).passed
    assert not validate_tool_calls(
        spec=spec, calls=[{"name": "f", "arguments": {"a": 2, "b": True}}]
    ).passed
    assert validate_tool_calls(
        spec=spec, calls=[{"name": "f", "arguments": {"a": 2, "b": 4.0}}]
    ).passed


def test_item_19_extra_argument_only_optional_and_null():
    spec = check_spec(
        {
            "call_policy": "exact_multiset",
            "required_calls": [{"name": "f", "optional_null_arguments": ["n"]}],
        }
    )[0]
    assert validate_tool_calls(spec=spec, calls=[{"name": "f", "arguments": {"n": None}}]).passed
    assert not validate_tool_calls(spec=spec, calls=[{"name": "f", "arguments": {"n": ""}}]).passed
    assert not validate_tool_calls(
        spec=spec, calls=[{"name": "f", "arguments": {"m": None}}]
    ).passed


def test_item_20_blank_name_fails_under_required_subset():
    spec = check_spec({"call_policy": "required_subset", "required_calls": [{"name": "f"}]})[0]
    assert not validate_tool_calls(
        spec=spec, calls=[{"name": "f", "arguments": {}}, {"name": "", "arguments": {}}]
    ).passed


def test_item_21_no_calls_and_forbidden_only_add_an_atom_but_stay_out_of_tool():
    rubrics = {"r": {"atomic_criteria": [{"criterion": "a"}]}}
    for tool in (
        {"call_policy": "no_calls"},
        {"call_policy": "required_subset", "forbidden_call_names": ["x"]},
    ):
        spec = spec_with(rubrics, tool)
        outcome = outcome_with_answers(spec, prediction(), {"r": all_pass(1)})
        assert (outcome["atoms"], outcome["validator_atom"], outcome["requires_call"]) == (
            2,
            True,
            False,
        )
        assert outcome["tool_passed"] is None


def test_item_22_fallback_counts_ignored_dims_duplicates_and_the_last_entry(release):
    specs = release.specs()
    wide = release.rubric_map
    spec = specs["msi-en-disc-kitchen-001"]  # rubric_ids lists its main rubric twice
    assert spec["rubric_ids"] == ["r-kitchen-001-main"] * 2
    mandarin = wide["r-kitchen-001-main"]
    assert mandarin["case_id"].startswith("msi-zh-")  # the id collides; the last entry wins
    english = spec["rubrics"]["r-kitchen-001-main"]
    assert len(mandarin["atomic_criteria"]) != len(english["atomic_criteria"])
    dims = [a.get("dimension") for a in mandarin["atomic_criteria"]]
    assert "tool.call_args" in dims or "authority.request_authorized_confirmation" in dims
    requires = spec["required_call_count"] > 0
    assert spec["fallback_atoms"] == 2 * len(mandarin["atomic_criteria"]) + int(requires)
    no_calls = next(
        s
        for s in specs.values()
        if s["kind"] == "base" and s["tool_validation"] == {"call_policy": "no_calls"}
    )
    atoms = sum(len(wide[r]["atomic_criteria"]) for r in no_calls["rubric_ids"])
    assert no_calls["fallback_atoms"] == atoms  # no +1 for no_calls


def test_item_23_zero_atom_rubric_without_validator_fails_with_zero_atoms():
    spec = spec_with({"r": {"atomic_criteria": []}})
    outcome = outcome_with_answers(spec, prediction(), {})
    assert (outcome["passed"], outcome["atoms"], outcome["judged"]) == (False, 0, True)


def test_item_24_turn_based_bir_respond_without_calls_passes_text_unchecked():
    specs = [
        {"kind": "speak", "cell_id": c, "language": "en", "gold_tool_calls": []} for c in "abc"
    ]
    predictions = {
        "a": prediction(text=None),
        "b": prediction(text="totally unrelated"),
        "c": prediction(calls=[{"name": "reserve", "arguments": {}}]),
    }
    result = language_results(
        specs=specs, predictions=predictions, judged={}, run_mode="turn-based"
    )
    assert (result["bir"]["count"], result["bir"]["total"]) == (2, 3)


def test_item_25_missing_speak_predictions_are_not_in_the_denominator():
    specs = [{"kind": "speak", "cell_id": c, "language": "en", "gold_tool_calls": []} for c in "ab"]
    result = language_results(
        specs=specs, predictions={"a": prediction()}, judged={}, run_mode="turn-based"
    )
    assert (result["bir"]["count"], result["bir"]["total"], result["bir"]["pct"]) == (1, 1, 100.0)


def test_item_26_ideographic_space_is_silence_zero_width_space_is_not():
    specs = [{"kind": "hear", "cell_id": c, "language": "en", "counts_in_prr": True} for c in "ab"]
    predictions = {
        "a": prediction(action="silent", text="\u3000 "),
        "b": prediction(action="silent", text="\u200b"),
    }
    result = language_results(
        specs=specs, predictions=predictions, judged={}, run_mode="turn-based"
    )
    assert (result["prr"]["count"], result["prr"]["total"]) == (1, 2)


def test_item_27_a_case_id_outside_the_pattern_aborts(tmp_path):
    root = tmp_path / "release"
    write_release(root, audio=False, languages=("en",), cases_per_scene=1)
    path = root / "index" / "cases.jsonl"
    lines = path.read_text("utf-8").splitlines()
    case = json.loads(lines[0])
    case["case_id"] = "case-0001"
    lines[0] = json.dumps(case)
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(ReleaseError) as caught:
        read_release(root, check_audio=False)
    assert any("case_id does not match" in str(p) for p in caught.value.problems)
