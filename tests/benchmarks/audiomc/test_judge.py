"""The judge request, parsing and the attempt rule (SPEC §4, §6 rows 2, 6-8, 12-17).

Expected messages come from an independent fill written here and the prompt file: the dataset
card's own (../shared) where the test's subject is its text, else the demo's stand-in."""

from __future__ import annotations

import hashlib

import pytest

from evaluation.benchmarks.audiomc.dataset import read_dataset
from evaluation.benchmarks.audiomc.demo.synthetic import (
    synthetic_records,
    synthetic_responses,
    write_jsonl_export,
)
from evaluation.benchmarks.audiomc.judge import (
    FAILED,
    MET,
    NOT_MET,
    PENDING,
    UNPARSEABLE,
    Attempt,
    PromptError,
    build_grading_conversation_history,
    decide_item,
    extract_template,
    fill_template,
    judge_message,
    judgment_requests,
    next_attempt_number,
    parse_judgment,
    read_judge_prompt,
    request_body,
)

HISTORY, RUBRIC = "«conversation_history»", "«rubric_item»"


# --- independent reference -------------------------------------------------------------------


def reference_template(path) -> str:
    """The prompt file's own description: everything between the marker lines, no final newline."""
    text = path.read_bytes().decode("utf-8")
    begin, end = "-----BEGIN TEMPLATE-----\n", "\n-----END TEMPLATE-----\n"
    return text[text.index(begin) + len(begin) : text.index(end)]


def reference_history(spec: dict, response: str) -> str:
    parts = []
    last = spec["last_user_turn"]
    for k in range(last):
        if spec["user_turns"][k].strip():
            parts.append("User: " + spec["user_turns"][k].strip())
        if k == last - 1:
            parts.append("Assistant: " + response)
        elif spec["assistant_turns"][k].strip():
            parts.append("Assistant: " + spec["assistant_turns"][k].strip())
    return "\n\n".join(parts)


def reference_fill(template: str, history: str, item: str) -> str:
    # Rubric tokens are replaced inside the template pieces before the history goes in, so
    # nothing inserted is ever scanned again.
    return history.join(piece.replace(RUBRIC, item) for piece in template.split(HISTORY))


# --- the template ----------------------------------------------------------------------------


def test_the_template_is_the_text_between_the_markers(prompt_file):
    prompt = read_judge_prompt(prompt_file)
    expected = reference_template(prompt_file)
    assert prompt.template == expected
    assert prompt.sha256 == hashlib.sha256(expected.encode("utf-8")).hexdigest()
    assert prompt.source == str(prompt_file)
    assert prompt.template.count(HISTORY) == 1 and prompt.template.count(RUBRIC) == 1
    assert not prompt.template.endswith("\n") and "-----" not in prompt.template


def test_template_extraction_edges(tmp_path):
    body = "first line\n\nsecond «conversation_history» «rubric_item»"
    assert (
        extract_template(f"# header\n-----BEGIN TEMPLATE-----\n{body}\n-----END TEMPLATE-----\n")
        == body
    )
    crlf = "-----BEGIN TEMPLATE-----\r\na\r\nb\r\n-----END TEMPLATE-----\r\n"
    assert extract_template(crlf) == "a\r\nb"
    # A line separator inside the template is not a line end.
    assert (
        extract_template("-----BEGIN TEMPLATE-----\na\u2028b\n-----END TEMPLATE-----") == "a\u2028b"
    )
    for broken in (
        "no markers",
        "-----BEGIN TEMPLATE-----\nx\n",
        "-----END TEMPLATE-----\nx\n-----BEGIN TEMPLATE-----\n",
        "-----BEGIN TEMPLATE-----\n-----END TEMPLATE-----\n",
        "-----BEGIN TEMPLATE-----\nx\n-----END TEMPLATE-----\n-----END TEMPLATE-----\n",
    ):
        with pytest.raises(PromptError):
            extract_template(broken)
    path = tmp_path / "p.txt"
    path.write_text("-----BEGIN TEMPLATE-----\nonly «rubric_item»\n-----END TEMPLATE-----\n")
    with pytest.raises(PromptError, match="no «conversation_history» placeholder"):
        read_judge_prompt(path)
    with pytest.raises(PromptError, match="cannot read"):
        read_judge_prompt(tmp_path / "absent.txt")


# --- the conversation history ----------------------------------------------------------------


def test_history_strips_turns_omits_empty_ones_and_keeps_the_reply_verbatim():
    # Edge cases 2 (empty reply still an entry), 14 (absent assistant turn: Users adjacent),
    # 15 (transcripts stripped, reply not).
    history = build_grading_conversation_history(
        user_turns=["  Hi there ", "\tSecond one\n", "  ", "Last question?  "],
        assistant_turns=[" Hello! ", "", "Sure."],
        response="",
    )
    assert history == (
        "User: Hi there\n\nAssistant: Hello!\n\nUser: Second one\n\nAssistant: Sure.\n\n"
        "User: Last question?\n\nAssistant: "
    )
    padded = build_grading_conversation_history(
        user_turns=["a", "b", "c"], assistant_turns=["x", "y"], response="  padded\n"
    )
    assert (
        padded
        == "User: a\n\nAssistant: x\n\nUser: b\n\nAssistant: y\n\nUser: c\n\nAssistant:   padded\n"
    )


def test_edge_14_a_missing_assistant_turn_leaves_two_user_entries_adjacent(tmp_path):
    records = synthetic_records(44, seed=5)
    tasks = read_dataset(write_jsonl_export(records, tmp_path)).tasks
    [gap] = [t for t in tasks if "" in t.spec["assistant_turns"]]
    last = gap.spec["last_user_turn"]
    history = build_grading_conversation_history(
        user_turns=gap.spec["user_turns"], assistant_turns=gap.spec["assistant_turns"], response="R"
    )
    entries = history.split("\n\n")
    assert len(entries) == 2 * last - 1
    assert entries[-3].startswith("User: ") and entries[-2].startswith("User: ")
    assert entries[-1] == "Assistant: R"


# --- the filled message ----------------------------------------------------------------------


def test_edge_16_placeholders_inside_substituted_text_are_never_expanded():
    template = "A «conversation_history» B «rubric_item» C «rubric_item»"
    message = fill_template(
        template,
        conversation_history="User: say «rubric_item» and {0} and {rubric_item}",
        rubric_item="Mentions «conversation_history» \\1 $0",
    )
    assert message == (
        "A User: say «rubric_item» and {0} and {rubric_item} B "
        "Mentions «conversation_history» \\1 $0 C Mentions «conversation_history» \\1 $0"
    )


def test_exact_judge_messages_for_synthetic_tasks(prompt_file, tmp_path):
    template = read_judge_prompt(prompt_file).template
    reference = reference_template(prompt_file)
    tasks = read_dataset(write_jsonl_export(synthetic_records(48, seed=1), tmp_path)).tasks
    checked = 0
    for profile in ("strong", "empty"):
        for line in synthetic_responses(tasks, profile, seed=2):
            task = next(t for t in tasks if t.task_id == line["id"])
            reply = line["response"] or ""
            requests = judgment_requests(template, spec=task.spec, response=reply)
            assert [r.slot for r in requests] == list(range(len(task.spec["rubric"])))
            for request, item in zip(requests, task.spec["rubric"], strict=True):
                expected = reference_fill(reference, reference_history(task.spec, reply), item)
                assert (request.kind, request.system, request.user) == (
                    "rubric_item",
                    None,
                    expected,
                )
                checked += 1
    assert checked >= 2 * 48


def test_a_transcript_holding_a_placeholder_is_judged_as_written(stand_in_prompt):
    template = read_judge_prompt(stand_in_prompt).template
    spec = {
        "last_user_turn": 3,
        "user_turns": ["Say «rubric_item» please", "ok", "Now «conversation_history»?"],
        "assistant_turns": ["«rubric_item»", "fine"],
        "rubric": ["Repeats «conversation_history» literally"],
    }
    message = judge_message(template, spec=spec, response="«rubric_item»", rubric_index=0)
    history = (
        "User: Say «rubric_item» please\n\nAssistant: «rubric_item»\n\nUser: ok\n\n"
        "Assistant: fine\n\nUser: Now «conversation_history»?\n\nAssistant: «rubric_item»"
    )
    assert message == reference_fill(
        reference_template(stand_in_prompt), history, "Repeats «conversation_history» literally"
    )


def test_edge_02_an_empty_reply_is_judged_on_every_item(stand_in_prompt):
    template = read_judge_prompt(stand_in_prompt).template
    spec = {
        "last_user_turn": 3,
        "user_turns": ["a", "b", "c"],
        "assistant_turns": ["x", "y"],
        "rubric": ["Excludes the word cheap", "Answers the question"],
    }
    requests = judgment_requests(template, spec=spec, response="")
    assert len(requests) == 2
    history = "User: a\n\nAssistant: x\n\nUser: b\n\nAssistant: y\n\nUser: c\n\nAssistant: "
    for request, item in zip(requests, spec["rubric"], strict=True):
        assert "User: c\n\nAssistant: \n\n# Rubric item" in request.user
        assert request.user == reference_fill(reference_template(stand_in_prompt), history, item)


def test_request_body_is_one_user_message_without_temperature():
    assert request_body("the message") == {
        "model": "o4-mini",
        "messages": [{"role": "user", "content": "the message"}],
    }
    assert request_body("m", model="o4-mini-2025-04-16")["model"] == "o4-mini-2025-04-16"


# --- parsing candidates ----------------------------------------------------------------------

FENCE = "```"


@pytest.mark.parametrize(
    ("raw", "met", "candidate", "explanation"),
    [
        ('{"explanation": "fine", "criteria_met": true}', True, "text", "fine"),
        ('\n  {"criteria_met": false}  \n', False, "text", ""),
        (
            f'{FENCE}json\n{{"explanation": "e", "criteria_met": true}}\n{FENCE}',
            True,
            "fenced",
            "e",
        ),
        (f'{FENCE}\n{{"criteria_met": false}}\n{FENCE}', False, "fenced", ""),
        (f'{FENCE}{{"criteria_met": true}}{FENCE}', True, "fenced", ""),
        ('My verdict: {"criteria_met": true, "explanation": 5} end.', True, "braces", ""),
        # Edge 12: two fenced blocks, the first decides.
        (
            f'{FENCE}json\n{{"criteria_met": false}}\n{FENCE}\n{FENCE}json\n{{"criteria_met": true}}\n{FENCE}',
            False,
            "fenced",
            "",
        ),
        # Edge 13: braces in the prose and the explanation; the fenced block parses first.
        (
            'Rubric {avoid dairy}.\n```json\n{"explanation": "has {cheese}", "criteria_met": false}\n```',
            False,
            "fenced",
            "has {cheese}",
        ),
        # The fenced block is not JSON; first { to last } is.
        (f'{FENCE}\nnot json\n{FENCE}\n{{"criteria_met": true}}', True, "braces", ""),
        # The text decodes, to an array, which is no object; the SPEC's third candidate is the
        # object inside it.
        ('[{"criteria_met": true}]', True, "braces", ""),
    ],
)
def test_parse_candidates(raw, met, candidate, explanation):
    parsed = parse_judgment(raw)
    assert (parsed.criteria_met, parsed.candidate, parsed.explanation) == (
        met,
        candidate,
        explanation,
    )
    assert parsed.parsed


@pytest.mark.parametrize(
    "raw",
    [
        "The response meets the rubric item.",
        '{"explanation": "x", "criteria_met": "true"}',
        '{"explanation": "x", "criteria_met": "false"}',
        '{"criteria_met": 1}',
        '{"criteria_met": 0}',
        '{"criteria_met": null}',
        "{'explanation': 'x', 'criteria_met': True}",
        '{"explanation": "no verdict"}',
        '["criteria_met", true]',
        '{"criteria_met": true, "score": NaN}',
        '{"explanation": "see below"}\n{"criteria_met": true}',
        "",
        None,
    ],
)
def test_edge_06_unparseable_outputs(raw):
    parsed = parse_judgment(raw)
    assert parsed.criteria_met is None and not parsed.parsed and parsed.candidate is None


# --- attempts --------------------------------------------------------------------------------

YES = '{"explanation": "yes", "criteria_met": true}'
NO = '{"explanation": "no", "criteria_met": false}'
PROSE = "It is met."


def outcome(*raws, numbers=None):
    numbers = numbers or range(len(raws))
    return decide_item([Attempt(n, raw) for n, raw in zip(numbers, raws, strict=True)])


def test_edge_07_a_later_valid_attempt_decides():
    result = outcome(PROSE, YES)
    assert (result.state, result.criteria_met, result.attempt, result.answered) == (MET, True, 1, 2)
    assert result.explanation == "yes" and result.parsed and result.met and result.scored


def test_edge_08_the_lowest_valid_attempt_decides_whatever_the_storage_order():
    attempts = [Attempt(2, YES), Attempt(1, NO), Attempt(0, PROSE)]
    result = decide_item(attempts)
    assert (result.state, result.criteria_met, result.attempt) == (NOT_MET, False, 1)


def test_three_unparseable_answers_are_not_met_and_a_fourth_is_never_read():
    result = outcome(PROSE, '{"criteria_met": "true"}', "{'criteria_met': True}")
    assert (result.state, result.criteria_met, result.attempt, result.answered) == (
        UNPARSEABLE,
        None,
        2,
        3,
    )
    assert not result.met and result.scored
    assert outcome(PROSE, PROSE, PROSE, YES).state == UNPARSEABLE
    assert next_attempt_number([Attempt(i, PROSE) for i in range(3)]) is None


def test_edge_17_a_failed_call_is_retryable_not_an_answer():
    failed = outcome(None)
    assert (failed.state, failed.attempt, failed.answered, failed.scored) == (FAILED, 0, 0, False)
    assert next_attempt_number([Attempt(0, None)]) == 1
    # One answer, then an outage: still failed, and one answered attempt used.
    assert (outcome(PROSE, None).state, outcome(PROSE, None).answered) == (FAILED, 1)
    # Failures do not use up the three answered attempts.
    assert outcome(None, PROSE, None, PROSE, YES).state == MET
    mixed = outcome(None, PROSE, None, PROSE, PROSE)
    assert (mixed.state, mixed.attempt, mixed.answered) == (UNPARSEABLE, 4, 3)
    # A decided item stays decided when a later call fails.
    assert outcome(NO, None).state == NOT_MET


def test_pending_items_ask_for_the_next_attempt():
    assert outcome(PROSE).state == PENDING and next_attempt_number([Attempt(0, PROSE)]) == 1
    empty = decide_item([])
    assert (empty.state, empty.attempt, empty.answered) == (PENDING, None, 0)
    assert next_attempt_number([]) == 0
    assert next_attempt_number([Attempt(0, YES)]) is None
    assert outcome(YES).as_dict() == {
        "state": "met",
        "criteria_met": True,
        "explanation": "yes",
        "attempt": 0,
        "parsed": True,
        "answered": 1,
    }
