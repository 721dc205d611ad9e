"""The judge (SPEC §6): messages byte for byte against an independent render of the shared
templates, the request body, parsing and alignment, the empty-answer guard, fixed outcomes.

The tests whose subject is the harness's own templates read them from ../shared and skip without
them; the message spelled out by hand is rendered from the demo's stand-in templates."""

import hashlib
import json
import shutil

import jinja2
import pytest

from evaluation.benchmarks.msibench.demo import DEMO_USER_TEMPLATE
from evaluation.benchmarks.msibench.demo.synthetic import synthetic_predictions, write_release
from evaluation.benchmarks.msibench.judge import (
    GUARD,
    JudgeTemplateError,
    atom_specs,
    clean_spoken_text,
    judge_pairs,
    load_templates,
    parse_judge_output,
    render_messages,
    request_body,
    visible_context_lines,
)
from evaluation.benchmarks.msibench.predictions import parse_predictions
from evaluation.benchmarks.msibench.release import read_release

from .conftest import SHARED_TEMPLATES as TEMPLATES
from .conftest import require_harness_templates

INTERNAL = {
    "sequential_constraint_integration": "constraint_attribution_under_interleaving",
    "speaker_authority_constraint": "authority_gated_override",
    "selective_disclosure": "disclosure_clause_in_instruction",
    "scope_tracking": "distributed_parameters",
    "background_speech_retrieval": "eavesdropping",
    "constraint_prioritization": "hard_vs_soft_constraint",
}


@pytest.fixture(scope="module")
def templates():
    """The harness's own templates (../shared)."""
    return load_templates(require_harness_templates())


@pytest.fixture(scope="module")
def stand_in(stand_in_checkout):
    """The demo's stand-in templates, found in a harness checkout as the import finds them."""
    return load_templates(stand_in_checkout)


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("msi") / "release"
    write_release(root, audio=False)
    return root


# --- templates ----------------------------------------------------------------------------------


def test_system_message_is_the_file_without_its_final_newline(templates):
    raw = (TEMPLATES / "judge_system.j2").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == templates.system_sha256
    system, _ = render_messages(
        templates,
        spec={"scene": "s", "expected_action": "respond", "logic_pattern": "p", "turns": []},
        prediction={"predicted_action": "respond"},
        rubric={"atomic_criteria": []},
    )
    text = raw.decode("utf-8")
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert system == text[:-1]
    assert len(system) == 3629


def test_templates_found_in_a_harness_checkout(tmp_path, templates):
    layout = tmp_path / "checkout" / "src" / "ib" / "llm" / "templates" / "evaluation"
    layout.mkdir(parents=True)
    for name in ("judge_system.j2", "judge_user.j2"):
        shutil.copy(TEMPLATES / name, layout / name)
    found = load_templates(tmp_path / "checkout")
    assert (found.system, found.user) == (templates.system, templates.user)
    with pytest.raises(JudgeTemplateError):
        load_templates(tmp_path / "nowhere")


# --- independent render -------------------------------------------------------------------------


def expected_clean(text):
    import re

    text = re.sub(r"(<\|[^<>]*?>|<[^<>]+>|\[[^\[\]]+\])", " ", text)
    text = " ".join(text.split())
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    return re.sub(r"([({])\s+", r"\1", text).strip()


def expected_user_message(case: dict, row: dict, rubric: dict) -> str:
    """The harness's user message, built here from the raw release rows."""
    lines = []
    for i, turn in enumerate(case["turns"], start=1):
        cleaned = expected_clean(turn["text"])
        if not cleaned:
            continue
        line = {"line_id": f"L{i}"}
        speaker = "assistant" if turn["role"] == "assistant" else turn["speaker"]
        if isinstance(speaker, str) and speaker:
            line["speaker"] = speaker
        if isinstance(turn.get("addressed_to"), str) and turn["addressed_to"]:
            line["addressed_to"] = turn["addressed_to"]
        line["text"] = cleaned
        lines.append(line)
    manifest = {
        "scene": case["scene"],
        "expected_action": case["eval"]["expected_action"],
        "logic_pattern": INTERNAL[case["pattern"]],
    }
    if lines:
        manifest["visible_context_lines"] = lines
    confidence = row.get("confidence")
    if isinstance(confidence, str):
        confidence = float(confidence.strip())
    elif confidence is not None:
        confidence = float(confidence)
    prediction = {
        "predicted_action": row["predicted_action"],
        "answer_text": row.get("answer_text"),
        "tool_calls": [
            {"name": c["name"], "arguments": c.get("arguments", {})}
            for c in row.get("tool_calls", [])
        ],
        "confidence": confidence,
    }
    atoms = []
    for atom in rubric["atomic_criteria"]:
        kept = {k: atom[k] for k in ("polarity", "dimension", "criterion") if atom.get(k)}
        atoms.append(kept)
    view = {"atomic_criteria": atoms}
    if rubric.get("judge_instruction"):
        view["judge_instruction"] = rubric["judge_instruction"]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("judge_user.j2").render(
        manifest_json=json.dumps(manifest, sort_keys=True, ensure_ascii=False),
        prediction_json=json.dumps(prediction, sort_keys=True, ensure_ascii=False),
        rubric_json=json.dumps(view, sort_keys=True, ensure_ascii=False),
    )


def test_user_messages_match_an_independent_render(templates, release_dir):
    specs = read_release(release_dir, check_audio=False).specs()
    cases = {
        c["case_id"]: c
        for c in map(
            json.loads, (release_dir / "index/cases.jsonl").read_text("utf-8").splitlines()
        )
    }
    rubric_rows = [
        json.loads(x) for x in (release_dir / "index/rubrics.jsonl").read_text("utf-8").splitlines()
    ]
    rows = synthetic_predictions(specs, profile="strong") + synthetic_predictions(
        specs, profile="weak"
    )
    extra = {"confidence": "0.5"}, {"confidence": True}, {"confidence": 1}, {"confidence": 0.1}
    checked = 0
    for position, row in enumerate(rows):
        spec = specs[row["cell_id"]]
        if spec["kind"] != "base":
            continue
        row = {**row, **extra[position % len(extra)]}
        (prediction,), problems = parse_predictions(json.dumps(row, ensure_ascii=False), source="t")
        assert problems == []
        case = cases[row["cell_id"]]
        for rubric_id in spec["judge_rubric_ids"]:
            rubric = next(
                r
                for r in rubric_rows
                if r["rubric_id"] == rubric_id and r["case_id"] in _entry_cases(cases, case)
            )
            system, user = render_messages(
                templates,
                spec=spec,
                prediction=prediction.to_json(),
                rubric=spec["rubrics"][rubric_id],
            )
            assert user == expected_user_message(case, row, rubric)
            assert not user.endswith("\n")
            assert user.encode("utf-8") == expected_user_message(case, row, rubric).encode("utf-8")
            checked += 1
    assert checked >= 60


def _entry_cases(cases: dict, case: dict) -> set:
    return {
        cid
        for cid, c in cases.items()
        if (c["language"], c["pattern"]) == (case["language"], case["pattern"])
    }


def test_a_user_message_spelled_out(stand_in):
    spec = {
        "scene": "kitchen",
        "expected_action": "respond",
        "logic_pattern": "eavesdropping",
        "turns": [
            {
                "role": "user",
                "speaker": "Ana",
                "addressed_to": "assistant",
                "text": "Hi [cough] there .",
            },
            {"role": "user", "speaker": "Bo", "addressed_to": ["Ana", "Cy"], "text": "[laughs]"},
            {"role": "assistant", "speaker": None, "addressed_to": "Ana", "text": "Sí, (  claro )"},
        ],
    }
    prediction = {
        "predicted_action": "silent",
        "answer_text": "ok",
        "tool_calls": [{"name": "f", "arguments": {"b": 2.0, "a": [1, True]}}],
        "confidence": 1.0,
    }
    rubric = {
        "judge_instruction": "",
        "atomic_criteria": [
            {"criterion_index": 0, "dimension": "d", "polarity": "", "criterion": "c"}
        ],
    }
    _, user = render_messages(stand_in, spec=spec, prediction=prediction, rubric=rubric)
    manifest = (
        '{"expected_action": "respond", "logic_pattern": "eavesdropping", "scene": "kitchen", '
        '"visible_context_lines": [{"addressed_to": "assistant", "line_id": "L1", "speaker": "Ana", "text": "Hi there."}, '
        '{"addressed_to": "Ana", "line_id": "L3", "speaker": "assistant", "text": "Sí, (claro )"}]}'
    )
    shown = (
        '{"answer_text": "ok", "confidence": 1.0, "predicted_action": "silent", '
        '"tool_calls": [{"arguments": {"a": [1, true], "b": 2.0}, "name": "f"}]}'
    )
    view = '{"atomic_criteria": [{"criterion": "c", "dimension": "d"}]}'
    # The stand-in fills each variable once and has no blocks; the harness drops the final newline.
    fields = {
        "{{ manifest_json }}": manifest,
        "{{ prediction_json }}": shown,
        "{{ rubric_json }}": view,
    }
    assert [DEMO_USER_TEMPLATE.count(field) for field in fields] == [1, 1, 1]
    expected = DEMO_USER_TEMPLATE
    for field, value in fields.items():
        expected = expected.replace(field, value)
    assert user == expected.removesuffix("\n")


@pytest.mark.parametrize(
    "text, cleaned",
    [
        ("<low hum> Did you hear [door knock]", "Did you hear"),
        ("Yes , and keep it quiet ( for now ).", "Yes, and keep it quiet (for now )."),
        ("<|speaker:1|>Hello<|eot|>", "Hello"),
        ("[laughs]", ""),
        ("a [b [c] d] e", "a [b d] e"),
        ("<a<b>c>", "<a c>"),
        ("{  x }", "{x }"),
        ("<低声> 你听说了吗?[敲门声]", "你听说了吗?"),
        ("tab\there\u3000wide", "tab here wide"),
    ],
)
def test_line_cleaning(text, cleaned):
    assert clean_spoken_text(text) == cleaned


def test_dropped_lines_keep_their_number():
    turns = [
        {"role": "user", "speaker": "A", "addressed_to": "", "text": "[x]"},
        {"role": "user", "speaker": "", "addressed_to": "A", "text": "b"},
    ]
    assert visible_context_lines(turns) == [{"line_id": "L2", "addressed_to": "A", "text": "b"}]


def test_request_body_is_json_mode_without_sampling_parameters():
    body = request_body(model="deepseek/deepseek-v4-pro", system="S", user="U")
    assert json.dumps(body) == (
        '{"model": "deepseek/deepseek-v4-pro", "messages": [{"role": "system", "content": "S"}, '
        '{"role": "user", "content": "U"}], "response_format": {"type": "json_object"}}'
    )


# --- parsing (§6.5) -------------------------------------------------------------------------------

ATOMS = atom_specs(
    {
        "atomic_criteria": [
            {"criterion": "a", "dimension": "x.one"},
            {"criterion": "b"},
            {"criterion": "c", "dimension": "tool.call_args"},
        ]
    }
)


def outcome(raw, empty=False):
    result = parse_judge_output(raw, atoms=ATOMS, empty_answer=empty)
    return result["ok"], [atom["passed"] for atom in result["atoms"]]


def answer(*passed, **extra):
    return json.dumps(
        {
            "rationale": "r",
            "atomic_results": [{"passed": p, "rationale": "w"} for p in passed],
            **extra,
        }
    )


def test_atom_defaults():
    assert [(a["dimension"], a["scored"], a["criterion_index"]) for a in ATOMS] == [
        ("x.one", True, 0),
        ("legacy.unspecified", True, 1),
        ("tool.call_args", False, 2),
    ]


def test_alignment_by_position_fewer_and_more_results():
    assert outcome(answer(True, False, True)) == (True, [True, False, True])
    result = parse_judge_output(answer(True), atoms=ATOMS, empty_answer=False)
    assert [a["passed"] for a in result["atoms"]] == [True, False, False]
    assert result["atoms"][1]["reason_if_forced"] == "judge omitted this atomic criterion"
    assert outcome(answer(True, True, True, False, "junk")) == (True, [True, True, True])
    # Criterion text or index in the answer are ignored.
    shuffled = json.dumps(
        {
            "atomic_results": [
                {"criterion_index": 2, "passed": False},
                {"criterion_index": 0, "passed": True},
            ]
        }
    )
    assert outcome(shuffled) == (True, [False, True, False])


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"atomic_results": [{"passed": "true"}]}),
        json.dumps({"atomic_results": [{"passed": 1}]}),
        json.dumps({"atomic_results": [{"passed": True, "rationale": None}]}),
        json.dumps({"atomic_results": [True]}),
        json.dumps({"atomic_results": {"0": {"passed": True}}}),
        json.dumps({"rationale": 3, "atomic_results": [{"passed": True}]}),
        json.dumps([{"passed": True}]),
        "not json at all",
        "",
        "I considered {a, b} first. " + answer(True, True, True),
        '{"atomic_results": [{"passed": true}',
    ],
)
def test_any_shape_error_fails_the_whole_rubric(raw):
    ok, passed = outcome(raw)
    assert not ok and passed == [False, False, False]


def test_fenced_and_prose_wrapped_json_parse():
    assert outcome("```json\n" + answer(True, True, False) + "\n```") == (True, [True, True, False])
    assert outcome("Verdict: " + answer(True, False, True) + " -- done") == (
        True,
        [True, False, True],
    )
    tricky = 'note: {"rationale": "a } b \\" {", "atomic_results": [{"passed": true}, {"passed": true}, {"passed": true}]} {'
    assert outcome(tricky) == (True, [True, True, True])
    # Two objects: json.loads fails on the extra data, the first one is taken.
    assert outcome(answer(True, True, True) + "\n" + answer(False)) == (True, [True, True, True])


def test_missing_or_null_atomic_results_fail_each_atom():
    assert outcome(json.dumps({"rationale": "r"})) == (True, [False, False, False])
    assert outcome(json.dumps({"atomic_results": None})) == (True, [False, False, False])


def test_top_level_passed_and_score_are_ignored():
    assert outcome(answer(False, False, False, passed=True, score=1.0)) == (
        True,
        [False, False, False],
    )


def test_zero_atom_rubric():
    result = parse_judge_output("nonsense", atoms=[], empty_answer=False)
    assert result["atoms"] == [] and result["scored_passed"] is None
    result = parse_judge_output(
        json.dumps({"atomic_results": [{"passed": "x"}]}), atoms=[], empty_answer=False
    )
    assert result["ok"] and result["atoms"] == []


def test_empty_answer_guard_keeps_only_tool_call_args():
    result = parse_judge_output(answer(True, True, True), atoms=ATOMS, empty_answer=True)
    assert [a["passed"] for a in result["atoms"]] == [False, False, True]
    assert result["atoms"][0]["reason_if_forced"] == GUARD
    assert result["scored_passed"] is False


# --- which pairs need a call (§6.1) ------------------------------------------------------------------


SPEC = {
    "kind": "base",
    "cell_id": "msi-en-auth-k-001",
    "judge_rubric_ids": ["r1", "r2"],
    "rubrics": {
        "r1": {
            "atomic_criteria": [
                {"criterion": "a"},
                {"criterion": "t", "dimension": "tool.call_args"},
            ]
        },
        "r2": {"atomic_criteria": []},
    },
}


def prediction(**fields):
    return {
        "cell_id": SPEC["cell_id"],
        "predicted_action": "respond",
        "answer_text": None,
        "tool_calls": [],
        "confidence": None,
        "metadata": None,
        **fields,
    }


def test_pairs_without_prediction_or_for_probes():
    assert judge_pairs(SPEC, None) == []
    assert judge_pairs({**SPEC, "kind": "hear"}, prediction(answer_text="x")) == []


def test_pairs_needing_calls():
    pairs = judge_pairs(SPEC, prediction(answer_text="hello"))
    assert [(p.rubric_id, p.needs_call) for p in pairs] == [("r1", True), ("r2", False)]
    assert pairs[0].context == {"atoms": atom_specs(SPEC["rubrics"]["r1"]), "empty_answer": False}
    assert pairs[1].fixed["atoms"] == []


def test_format_error_fixes_every_atom_to_fail():
    (first, _) = judge_pairs(SPEC, prediction(answer_text="good", metadata={"provider_error": {}}))
    assert not first.needs_call
    assert [a["passed"] for a in first.fixed["atoms"]] == [False, False]
    assert first.fixed["fixed"] == "format_error"


@pytest.mark.parametrize("text", [None, "", "   ", "\u3000 "])
def test_empty_answer_is_fixed_without_a_call(text):
    (first, _) = judge_pairs(SPEC, prediction(answer_text=text))
    assert not first.needs_call and first.fixed["fixed"] == "empty_answer"
    # The scored atom fails; the tool.call_args atom is never scored and stays unjudged.
    assert [a["passed"] for a in first.fixed["atoms"]] == [False, None]


def test_zero_width_space_is_an_answer_and_calls_count():
    assert judge_pairs(SPEC, prediction(answer_text="\u200b"))[0].needs_call
    assert judge_pairs(SPEC, prediction(tool_calls=[{"name": "f", "arguments": {}}]))[0].needs_call
    assert judge_pairs(SPEC, prediction(predicted_action="silent", answer_text="text"))[
        0
    ].needs_call
