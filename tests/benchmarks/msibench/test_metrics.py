"""Aggregation (SPEC §7) on small sets worked by hand."""

import json

from evaluation.benchmarks.msibench.judge import atom_specs, judge_pairs, parse_judge_output
from evaluation.benchmarks.msibench.metrics import (
    base_cell_outcome,
    half_up,
    language_results,
    rate,
    raw_validator,
    submission_results,
)
from evaluation.benchmarks.msibench.validator import check_spec, required_call_count


def tool(raw):
    checked, problems = check_spec(raw)
    assert not problems
    return checked


NEEDS_F = tool(
    {
        "call_policy": "exact_multiset",
        "required_calls": [{"name": "f", "arguments": {"x": {"op": "exact", "value": 1}}}],
    }
)
NO_CALLS = tool({"call_policy": "no_calls"})
FORBIDDEN_ONLY = tool({"call_policy": "required_subset", "forbidden_call_names": ["leak"]})


def rubric(*dimensions):
    return {
        "atomic_criteria": [
            {"criterion": f"c{i}", **({"dimension": d} if d else {})}
            for i, d in enumerate(dimensions)
        ]
    }


def base(cell_id, *, code="auth", rubrics=None, tool_validation=None, fallback=0, language="en"):
    rubrics = rubrics or {}
    return {
        "kind": "base",
        "cell_id": cell_id,
        "language": language,
        "pattern_code": code,
        "tool_validation": tool_validation,
        "required_call_count": required_call_count(tool_validation),
        "judge_rubric_ids": sorted(rubrics),
        "rubrics": rubrics,
        "fallback_atoms": fallback,
    }


def hear(cell_id, counts=True, language="en"):
    return {"kind": "hear", "cell_id": cell_id, "language": language, "counts_in_prr": counts}


def speak(cell_id, language="en"):
    return {"kind": "speak", "cell_id": cell_id, "language": language, "gold_tool_calls": []}


def pred(cell_id, action="respond", text="an answer", calls=None, metadata=None):
    return {
        "cell_id": cell_id,
        "predicted_action": action,
        "answer_text": text,
        "tool_calls": calls or [],
        "confidence": None,
        "metadata": metadata,
    }


def judged_for(specs, predictions, decisions):
    """Structured results per cell and rubric: fixed outcomes as judge_pairs gives them, else the
    parse of an answer whose atoms take ``decisions[cell][rubric]``."""
    out = {}
    for spec in specs:
        if spec["kind"] != "base":
            continue
        results = {}
        for pair in judge_pairs(spec, predictions.get(spec["cell_id"])):
            if pair.fixed is not None:
                results[pair.rubric_id] = pair.fixed
            else:
                verdicts = decisions[spec["cell_id"]][pair.rubric_id]
                raw = json.dumps({"atomic_results": [{"passed": v} for v in verdicts]})
                results[pair.rubric_id] = parse_judge_output(raw, **pair.context)
        out[spec["cell_id"]] = results
    return out


def score(specs, predictions, decisions=None, run_mode="turn-based"):
    return language_results(
        specs=specs,
        predictions=predictions,
        judged=judged_for(specs, predictions, decisions or {}),
        run_mode=run_mode,
    )


# --- rounding and intervals -----------------------------------------------------------------------


def test_half_up_on_the_float_repr():
    assert half_up(28.125) == "28.1"
    assert half_up(12.25) == "12.3"
    assert round(12.25, 1) == 12.2  # what Python's round would print instead
    assert rate(49, 400) == {"count": 49, "total": 400, "pct": 12.3}
    assert rate(9, 32) == {"count": 9, "total": 32, "pct": 28.1}
    assert rate(0, 0) == {"count": 0, "total": 0, "pct": None}


# --- APR and ARS ------------------------------------------------------------------------------------


def test_ars_is_micro_not_macro():
    specs = [
        base("a", rubrics={"r": rubric(*["d"] * 9)}),
        base("b", rubrics={"r": rubric("d")}),
    ]
    predictions = {"a": pred("a"), "b": pred("b")}
    row = score(specs, predictions, {"a": {"r": [True] * 9}, "b": {"r": [False]}})
    assert row["ars"] == {"count": 9, "total": 10, "pct": 90.0}  # a macro mean would say 50
    assert row["apr"]["count"] == 1 and row["apr"]["pct"] == 50.0


def test_ignored_dimensions_never_count():
    specs = [
        base(
            "a",
            rubrics={
                "r": rubric(
                    "x", "tool.call_args", "authority.request_authorized_confirmation", None
                )
            },
        )
    ]
    row = score(specs, {"a": pred("a")}, {"a": {"r": [True, False, False, True]}})
    assert row["apr"]["count"] == 1
    assert row["ars"] == {"count": 2, "total": 2, "pct": 100.0}
    assert row["ignored_atoms"] == 2


def test_rubric_with_only_ignored_atoms_and_no_validator_fails_with_no_atoms():
    specs = [base("a", rubrics={"r": rubric("tool.call_args")})]
    row = score(specs, {"a": pred("a")}, {"a": {"r": [True]}})
    assert row["apr"]["count"] == 0 and row["ars"]["total"] == 0 and row["ars"]["pct"] is None


def test_validator_atom_gates_the_case_even_without_required_calls():
    specs = [
        base("a", rubrics={"r": rubric("x")}, tool_validation=NO_CALLS),
        base("b", rubrics={"r": rubric("x")}, tool_validation=FORBIDDEN_ONLY),
        base("c", rubrics={"r": rubric("x")}, tool_validation=NO_CALLS),
    ]
    predictions = {
        "a": pred("a", calls=[{"name": "g", "arguments": {}}]),
        "b": pred("b", calls=[{"name": "leak", "arguments": {}}]),
        "c": pred("c"),
    }
    row = score(specs, predictions, {k: {"r": [True]} for k in "abc"})
    assert row["apr"]["count"] == 1  # only c
    assert row["ars"] == {"count": 4, "total": 6, "pct": 66.7}
    assert row["tool"] == {"count": 0, "total": 0, "pct": None}  # none requires a call


def test_format_error_fails_every_atom_but_tool_reads_the_raw_verdict():
    specs = [base("a", rubrics={"r": rubric("x", "y")}, tool_validation=NEEDS_F)]
    good_calls = [{"name": "f", "arguments": {"x": 1}}]
    predictions = {"a": pred("a", calls=good_calls, metadata={"provider_error": {}})}
    row = score(specs, predictions)
    assert row["apr"]["count"] == 0
    assert row["ars"] == {
        "count": 0,
        "total": 3,
        "pct": 0.0,
    }  # two rubric atoms + the validator atom
    assert row["tool"] == {"count": 1, "total": 1, "pct": 100.0}
    assert row["format_errors"] == 1 and row["unjudged"] == 0


def test_missing_prediction_uses_the_fallback_atoms_and_fails_tool():
    specs = [base("a", rubrics={"r": rubric("x")}, tool_validation=NEEDS_F, fallback=5)]
    row = score(specs, {})
    assert row["apr"] == {
        "count": 0,
        "total": 1,
        "pct": 0.0,
        "half_width": row["apr"]["half_width"],
    }
    assert row["ars"] == {"count": 0, "total": 5, "pct": 0.0}
    assert row["tool"] == {"count": 0, "total": 1, "pct": 0.0}
    assert row["unjudged"] == 1 and row["missing"]["base"] == 1


def test_no_resolvable_rubric_is_unjudged_even_with_a_prediction():
    specs = [base("a", fallback=2), base("b", fallback=3)]
    predictions = {"a": pred("a"), "b": pred("b", metadata={"provider_error": {"e": 1}})}
    row = score(specs, predictions)
    assert row["ars"]["total"] == 5
    assert row["unjudged"] == 1  # a format error is never "unjudged"
    assert row["format_errors"] == 1


def test_empty_answer_guard_in_aggregation():
    specs = [base("a", rubrics={"r": rubric("x", "tool.call_args")}, tool_validation=NO_CALLS)]
    row = score(specs, {"a": pred("a", text="  ")})
    # Fixed without a call: x fails, the validator atom passes (no calls), case fails.
    assert row["apr"]["count"] == 0 and row["ars"] == {"count": 1, "total": 2, "pct": 50.0}


def test_missing_judge_result_counts_as_failed_judgment():
    spec = base("a", rubrics={"r": rubric("x", "y")})
    outcome = base_cell_outcome(spec=spec, prediction=pred("a"), validator=None, judged={})
    assert (
        outcome["passed"],
        outcome["atoms"],
        outcome["atoms_passed"],
        outcome["judge_missing"],
    ) == (False, 2, 0, 1)


def test_wilson_half_width_in_the_row():
    specs = [base(f"c{i}", rubrics={"r": rubric("x")}) for i in range(8)]
    predictions = {s["cell_id"]: pred(s["cell_id"]) for s in specs}
    decisions = {s["cell_id"]: {"r": [i < 3]} for i, s in enumerate(specs)}
    row = score(specs, predictions, decisions)
    # k=3, n=8, z=1.96: 0.375*0.625/8 = 0.029297, 3.8416/256 = 0.015006, sqrt(0.044303) = 0.21049,
    # x 1.96 = 0.41255, / (1 + 3.8416/8 = 1.4802) = 0.27871 -> 27.9.
    assert row["apr"]["pct"] == 37.5 and row["apr"]["half_width"] == 27.9


def test_per_pattern_apr():
    specs = [
        base("a1", code="auth", rubrics={"r": rubric("x")}),
        base("a2", code="auth", rubrics={"r": rubric("x")}),
        base("d1", code="disc", rubrics={"r": rubric("x")}),
    ]
    predictions = {k: pred(k) for k in ("a1", "a2", "d1")}
    row = score(
        specs, predictions, {"a1": {"r": [True]}, "a2": {"r": [False]}, "d1": {"r": [True]}}
    )
    assert row["per_pattern"]["auth"] == {"count": 1, "total": 2, "pct": 50.0}
    assert row["per_pattern"]["disc"] == {"count": 1, "total": 1, "pct": 100.0}
    assert row["per_pattern"]["retr"] == {"count": 0, "total": 0, "pct": None}


# --- PRR -----------------------------------------------------------------------------------------------


def test_prr_exclusions_and_silence_rule():
    specs = [hear(f"h{i}") for i in range(1, 9)] + [hear("h9", counts=False)]
    predictions = {
        "h1": pred("h1", "silent", None),
        "h2": pred("h2", "respond", None),  # answering is a failure even without text
        "h3": pred("h3", "silent", "\u3000 "),  # blank after str.strip
        "h4": pred("h4", "silent", "\u200b"),  # not whitespace: a response
        "h6": pred("h6", "silent", None, metadata={"provider_error": {}}),
        "h7": pred("h7", "silent", None, calls=[{"name": "f", "arguments": {}}]),
        "h8": pred("h8", "silent", ""),
        "h9": pred("h9", "respond", "yes"),  # auth probe: outside PRR
    }
    row = score(specs, predictions)
    # counted 8 (h5 missing, h6 format error excluded): valid 6, failures h2, h4, h7.
    assert row["prr"] == {"count": 3, "total": 6, "pct": 50.0, "probes": 8}


# --- BIR ------------------------------------------------------------------------------------------------


def test_bir_turn_based():
    specs = [speak(f"s{i}") for i in range(1, 8)]
    predictions = {
        "s1": pred("s1", "respond", "resuming"),
        "s2": pred("s2", "respond", "", calls=[{"name": "radio_off", "arguments": {}}]),
        "s3": pred("s3", "silent", None),
        "s5": pred("s5", "respond", "x", metadata={"provider_error": {}}),
        "s6": pred("s6", "respond", None),  # text is not checked
        "s7": pred("s7", "respond", "x", metadata={"live_probe": {"executed": False}}),  # ignored
    }
    row = score(specs, predictions)
    assert row["bir"] == {
        "count": 3,
        "total": 5,
        "pct": 60.0,
        "probes": 7,
        "variant": "barge_in_resume",
    }


def test_bir_full_duplex():
    specs = [speak(f"s{i}") for i in range(1, 11)]
    predictions = {
        "s1": pred("s1", metadata={"live_probe": {"executed": True}}),
        "s2": pred(
            "s2",
            "silent",
            metadata={"live_probe": {"executed": True, "predicted_action": "refuse"}},
        ),
        "s3": pred("s3", metadata={"live_probe_executed": 1}),
        "s4": pred("s4", metadata={"live_probe": {"injection_started": True, "interrupted": True}}),
        "s5": pred("s5", metadata={"live_probe": {"executed": True}, "followed_bystander": True}),
        "s6": pred(
            "s6", metadata={"live_probe": {"executed": True, "tool_calls": [{"name": "radio_off"}]}}
        ),
        "s7": pred(
            "s7",
            calls=[{"name": "g", "arguments": {}}],
            metadata={"live_probe": {"executed": True, "tool_calls": [3]}},
        ),
        "s8": pred("s8", metadata={"live_probe": {"executed": True}, "provider_error": {}}),
        "s9": pred("s9", metadata={"live_probe": {"executed": True, "predicted_action": "ignore"}}),
        "s10": pred("s10"),  # never executed
    }
    row = score(specs, predictions, run_mode="full-duplex")
    # executed s1..s9; pass s1, s2 (refuse is an answer), s3, s7 (live calls [] after dropping
    # non-objects), s8 (provider errors are not checked here).
    assert row["bir"] == {
        "count": 5,
        "total": 9,
        "pct": 55.6,
        "probes": 10,
        "variant": "fullduplex_live",
    }


def test_bir_with_no_executed_probe_is_dash():
    row = score([speak("s1")], {})
    assert row["bir"]["pct"] is None and row["bir"]["total"] == 0


# --- languages ----------------------------------------------------------------------------------------


def test_languages_are_scored_apart_and_only_when_covered():
    specs = {
        "e": base("e", rubrics={"r": rubric("x")}),
        "z": base("z", rubrics={"r": rubric("x")}, language="zh"),
        "z2": base("z2", rubrics={"r": rubric("x")}, language="zh"),
    }
    predictions = {"e": pred("e"), "z": pred("z")}
    judged = judged_for(specs.values(), predictions, {"e": {"r": [True]}, "z": {"r": [True]}})
    results = submission_results(
        specs=specs,
        predictions=predictions,
        judged=judged,
        run_mode="turn-based",
        languages=["en", "zh"],
    )
    assert results["en"]["apr"]["pct"] == 100.0 and results["en"]["n"] == 1
    assert results["zh"]["apr"]["pct"] == 50.0 and results["zh"]["n"] == 2
    assert results["zh"]["complete"] is False
    only_en = submission_results(
        specs=specs, predictions=predictions, judged=judged, run_mode="turn-based", languages=["en"]
    )
    assert list(only_en) == ["en"]


def test_raw_validator_without_prediction_validates_no_calls():
    spec = base("a", tool_validation=NEEDS_F)
    assert raw_validator(spec, None)["passed"] is False
    assert raw_validator(base("b"), None) is None
    assert atom_specs({"atomic_criteria": []}) == []
