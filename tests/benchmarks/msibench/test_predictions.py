"""The upload (SPEC §3): every whole-file rule with its line and field, lax confidence, combining
files, unknown and missing cells, and the site's tightening."""

import json

import pytest

from evaluation.benchmarks.msibench.predictions import (
    Prediction,
    PredictionsError,
    float_from_text,
    parse_predictions,
    read_predictions,
)

SPECS = {
    "msi-en-auth-a-001": {"kind": "base", "language": "en"},
    "msi-en-disc-a-001": {"kind": "base", "language": "en"},
    "msi-en-disc-a-001h": {"kind": "hear", "language": "en"},
    "msi-en-auth-a-001s": {"kind": "speak", "language": "en"},
    "msi-en-disc-a-001s": {"kind": "speak", "language": "en"},
    "msi-zh-auth-a-001": {"kind": "base", "language": "zh"},
    "msi-zh-auth-a-001s": {"kind": "speak", "language": "zh"},
}


def line(**row) -> str:
    base = {"cell_id": "msi-en-auth-a-001", "predicted_action": "respond"}
    base.update(row)
    return json.dumps(base, ensure_ascii=False)


def parse_one(text: str):
    predictions, problems = parse_predictions(text, source="up.jsonl")
    return predictions, [(p.line, p.field, p.message) for p in problems]


def only_problem(text: str):
    predictions, problems = parse_one(text)
    assert len(problems) == 1, problems
    return problems[0]


def test_minimal_row_defaults():
    (prediction,), problems = parse_one(line())
    assert problems == []
    assert prediction.to_json() == {
        "cell_id": "msi-en-auth-a-001",
        "predicted_action": "respond",
        "answer_text": None,
        "tool_calls": [],
        "confidence": None,
        "metadata": None,
    }
    assert (prediction.file, prediction.line) == ("up.jsonl", 1)


def test_arguments_default_to_empty_object():
    (prediction,), _ = parse_one(line(tool_calls=[{"name": "f"}]))
    assert prediction.tool_calls == [{"name": "f", "arguments": {}}]


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("0.5", 0.5),
        (True, 1.0),
        (False, 0.0),
        (1, 1.0),
        (" 0.5 ", 0.5),
        ("1_000", 1000.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("+5", 5.0),
        ("\u30000.5", 0.5),
        (0.25, 0.25),
    ],
)
def test_confidence_is_lax(raw, expected):
    (prediction,), problems = parse_one(line(confidence=raw))
    assert problems == []
    assert prediction.confidence == expected and type(prediction.confidence) is float


@pytest.mark.parametrize(
    "raw",
    [
        "abc",
        "",
        "0x10",
        "true",
        "1__0",
        "_1",
        "\x1c1",
        "１",
        "nan",
        "inf",
        "-Infinity",
        "1e400",
        [0.5],
        {"v": 1},
    ],
)
def test_confidence_rejections(raw):
    assert only_problem(line(confidence=raw))[:2] == (1, "confidence")


def test_float_from_text_underscores_like_pydantic():
    assert float_from_text("1_.5") == 1.5
    assert float_from_text("+_5") == 5.0
    assert float_from_text(" 1_000") is None  # underscores are only tried untrimmed
    assert float_from_text("5.") == 5.0
    assert float_from_text("5e") is None


@pytest.mark.parametrize(
    "row, field",
    [
        ({"cell_id": 5}, "cell_id"),
        ({"predicted_action": "Respond"}, "predicted_action"),
        ({"predicted_action": "ignore"}, "predicted_action"),
        ({"predicted_action": "wait"}, "predicted_action"),
        ({"predicted_action": "refuse"}, "predicted_action"),
        ({"answer_text": 3}, "answer_text"),
        ({"tool_calls": None}, "tool_calls"),
        ({"tool_calls": {"name": "f"}}, "tool_calls"),
        ({"tool_calls": [{"name": "f", "arguments": None}]}, "tool_calls[0].arguments"),
        ({"tool_calls": [{"name": "f", "arguments": [1]}]}, "tool_calls[0].arguments"),
        ({"tool_calls": [{"name": "f", "id": "call_1"}]}, "tool_calls[0].id"),
        ({"tool_calls": [{"name": "f", "type": "function"}]}, "tool_calls[0].type"),
        ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0].name"),
        ({"tool_calls": [{"name": 7}]}, "tool_calls[0].name"),
        ({"tool_calls": ["f"]}, "tool_calls[0]"),
        ({"metadata": []}, "metadata"),
        ({"latency": 1}, "latency"),
    ],
)
def test_field_errors_name_line_and_field(row, field):
    text = "\n" + line(**row)  # a blank first line is skipped but counted
    assert only_problem(text)[:2] == (2, field)


def test_required_fields():
    problems = parse_one(json.dumps({"answer_text": "x"}))[1]
    assert {(p[1], p[2]) for p in problems} == {
        ("cell_id", "required"),
        ("predicted_action", "required"),
    }


def test_every_problem_is_reported_with_its_line():
    text = "\n".join(
        [
            line(),
            line(cell_id="x", predicted_action="ignore"),
            "not json",
            line(cell_id="y", extra=1),
        ]
    )
    _, problems = parse_one(text)
    assert [(p[0], p[1]) for p in problems] == [(2, "predicted_action"), (3, ""), (4, "extra")]


def test_raw_line_separators_inside_a_string_break_the_line():
    for separator in ("\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c"):
        text = (
            '{"cell_id": "msi-en-auth-a-001", "predicted_action": "respond", "answer_text": "a'
            + separator
            + 'b"}'
        )
        _, problems = parse_one(text)
        assert problems and all(p[0] in (1, 2) for p in problems), separator
    # Escaped, the same character is fine.
    (prediction,), problems = parse_one(line(answer_text="a\u2028b").replace("\u2028", "\\u2028"))
    assert problems == [] and prediction.answer_text == "a\u2028b"


def test_blank_and_whitespace_lines_are_skipped():
    text = "\n   \n\t\n" + line() + "\n\u3000\n"
    predictions, problems = parse_one(text)
    assert problems == [] and predictions[0].line == 4


def test_bom_and_invalid_utf8_reject_the_file():
    _, problems = parse_predictions(b"\xef\xbb\xbf" + line().encode(), source="u")
    assert [(p.line, p.message) for p in problems] == [
        (1, "file starts with a UTF-8 byte-order mark")
    ]
    _, problems = parse_predictions(line().encode() + b"\n" + b'{"cell_id": "\xff"}', source="u")
    assert problems[0].message.startswith("line 2: invalid UTF-8")


@pytest.mark.parametrize(
    "text, message",
    [
        (line()[:-1] + ', "metadata": {"x": NaN}}', "NaN is not allowed"),
        (line()[:-1] + ', "metadata": {"x": -Infinity}}', "-Infinity is not allowed"),
        (
            line()[:-1] + ', "tool_calls": [{"name": "f", "arguments": {"x": 1e400}}]}',
            "overflows a float",
        ),
        (line()[:-1] + ', "metadata": {"x": 1' + "0" * 400 + "}}", "overflows a float"),
        (line()[:-1] + ', "confidence": 1e999}', "overflows a float"),
        (line()[:-1] + ', "answer_text": "\\ud800"}', "lone UTF-16 surrogate"),
        (
            line()[:-1] + ', "metadata": [[' + "[" * 200 + "]" * 200 + "]]}",
            "nesting deeper than 201",
        ),
    ],
)
def test_site_tightening(text, message):
    _, problems = parse_one(text)
    assert len(problems) == 1 and message in problems[0][2] and problems[0][0] == 1


def test_nesting_limit_is_pydantics():
    # Depth counts the row as 1: metadata at 2, then 199 arrays reach 201 (accepted).
    ok = line()[:-1] + ', "metadata": {"a": ' + "[" * 199 + "]" * 199 + "}}"
    assert parse_one(ok)[1] == []


def test_format_error_is_any_provider_error_object():
    (with_empty,), _ = parse_one(line(metadata={"provider_error": {}}))
    (with_string,), _ = parse_one(line(metadata={"provider_error": "timeout"}))
    assert with_empty.format_error and not with_string.format_error


def test_duplicates_within_and_across_files():
    _, problems = parse_one(line() + "\n" + line())
    assert problems == [(2, "cell_id", "duplicate cell_id 'msi-en-auth-a-001' (first on line 1)")]
    with pytest.raises(PredictionsError) as caught:
        read_predictions(
            [("base.jsonl", line()), ("speak.jsonl", "\n" + line())],
            specs=SPECS,
            run_mode="turn-based",
        )
    (problem,) = caught.value.problems
    assert (
        str(problem)
        == "speak.jsonl line 2: cell_id: duplicate cell_id 'msi-en-auth-a-001' (also base.jsonl line 1)"
    )


def test_combined_files_unknown_and_missing_cells():
    base = "\n".join(
        [
            line(),
            line(cell_id="msi-en-disc-a-001h", predicted_action="silent"),
            line(cell_id="nope"),
        ]
    )
    speak = line(cell_id="msi-en-auth-a-001s")
    upload = read_predictions(
        [("base.jsonl", base), ("speak.jsonl", speak)], specs=SPECS, run_mode="turn-based"
    )
    assert sorted(upload.predictions) == [
        "msi-en-auth-a-001",
        "msi-en-auth-a-001s",
        "msi-en-disc-a-001h",
    ]
    assert upload.languages == ["en"]  # no Mandarin prediction: Mandarin is not covered
    assert upload.missing_cell_ids == ["msi-en-disc-a-001", "msi-en-disc-a-001s"]
    assert upload.unknown_cell_ids == ["nope"]
    assert "unknown cell_id 'nope' is ignored" in upload.warnings


def test_whole_upload_rejected_and_run_mode_checked():
    with pytest.raises(PredictionsError):
        read_predictions([("a.jsonl", line() + "\n{")], specs=SPECS, run_mode="turn-based")
    with pytest.raises(ValueError):
        read_predictions([("a.jsonl", line())], specs=SPECS, run_mode="duplex")


def test_live_probe_warnings():
    rows = [
        line(cell_id="msi-en-auth-a-001s", metadata={"live_probe": "yes"}),
        line(
            cell_id="msi-en-disc-a-001s",
            metadata={"live_probe": {"predicted_action": 1, "tool_calls": [1]}},
        ),
        line(metadata={"live_probe_executed": True}),
    ]
    upload = read_predictions([("a.jsonl", "\n".join(rows))], specs=SPECS, run_mode="full-duplex")
    text = "\n".join(upload.warnings)
    assert (
        "a.jsonl line 1 (msi-en-auth-a-001s): metadata.live_probe is not an object; ignored" in text
    )
    assert "live_probe.predicted_action is not a string" in text
    assert "live_probe.tool_calls items that are not objects are ignored" in text
    assert (
        "a.jsonl line 3 (msi-en-auth-a-001): live-probe metadata is read only on speak cells"
        in text
    )
    turn_based = read_predictions([("a.jsonl", rows[0])], specs=SPECS, run_mode="turn-based")
    assert "read only on speak cells of a full-duplex run" in turn_based.warnings[0]


def test_round_trip_through_json():
    (prediction,), _ = parse_one(
        line(
            answer_text="hi",
            tool_calls=[{"name": "f", "arguments": {"a": [1, 2.5]}}],
            confidence="0.5",
            metadata={"k": None},
        )
    )
    again = Prediction.from_json(json.loads(json.dumps(prediction.to_json())))
    assert again.to_json() == prediction.to_json()


# --- against pydantic (the harness's validator), when it is installed ------------------------


CORPUS = [
    line(),
    line(confidence="0.5"),
    line(confidence=True),
    line(confidence=" 1_0 "),
    line(confidence="1_0"),
    line(confidence="4_2.1_5"),
    line(confidence="0x1"),
    line(confidence=[1]),
    line(answer_text=None, metadata=None),
    line(tool_calls=[]),
    line(tool_calls=None),
    line(tool_calls=[{"name": "f"}]),
    line(tool_calls=[{"name": "f", "arguments": None}]),
    line(tool_calls=[{"name": "f", "id": 1}]),
    line(tool_calls=[{"name": " ", "arguments": {"": 1}}]),
    line(predicted_action="silent"),
    line(predicted_action="SILENT"),
    line(cell_id=1),
    line(metadata={"provider_error": {}}),
    line(metadata="x"),
    line(extra=None),
    '{"cell_id": "a", "cell_id": "b", "predicted_action": "silent"}',
    '{"cell_id": "a", "predicted_action": "silent"} trailing',
    '[{"cell_id": "a"}]',
    '{"cell_id": "a", "predicted_action": "silent", "answer_text": "\\udc00x"}',
    '{"cell_id": "a", "predicted_action": "silent", "answer_text": "\\ud83d\\ude00"}',
    '{"cell_id": "a", "predicted_action": "silent", "metadata": {"a": '
    + "[" * 198
    + "[1]"
    + "]" * 198
    + "}}",
    '{"cell_id": "a", "predicted_action": "silent", "metadata": {"a": '
    + "[" * 199
    + "[1]"
    + "]" * 199
    + "}}",
    '{"cell_id": "a", "predicted_action": "silent", "metadata": {"a": '
    + "[" * 199
    + "[]"
    + "]" * 199
    + "}}",
    '{"cell_id": "a", "predicted_action": "silent", "answer_text": "tab\there"}',
]


def test_acceptance_matches_the_harness_model():
    pydantic = pytest.importorskip("pydantic")
    from enum import Enum
    from typing import Any

    class Strict(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")

    class Action(str, Enum):  # noqa: UP042 - declared as the harness declares it
        respond = "respond"
        silent = "silent"

    class Call(Strict):
        name: str
        arguments: dict[str, Any] = pydantic.Field(default_factory=dict)

    class Row(Strict):
        cell_id: str
        predicted_action: Action
        answer_text: str | None = None
        tool_calls: list[Call] = pydantic.Field(default_factory=list)
        confidence: float | None = None
        metadata: dict[str, Any] | None = None

    for text in CORPUS:
        try:
            expected = Row.model_validate_json(text).model_dump(mode="json")
        except (pydantic.ValidationError, ValueError):
            expected = None
        predictions, problems = parse_one(text)
        got = predictions[0].to_json() if predictions and not problems else None
        assert got == expected, text[:120]
