"""Detection on real harness output and on every rule of DESIGN.md, expected values by hand."""

from pathlib import Path

import pytest

from evaluation.benchmarks.mpbench.detection import (
    SPOKE_FULL_TEXT,
    SPOKE_HALF_DUPLEX,
    SPOKE_POST,
    collect_evidence,
    detect,
    directory_reader,
    probe_half_duplex,
)
from tests.conftest import transcript, words, write_task


def evidence_of(folder: Path):
    return collect_evidence(*directory_reader(folder))


# --- the three real example folders (values read off the files by hand) --------------------


def test_real_understanding_example(mpbench_dir):
    ev = evidence_of(mpbench_dir / "examples" / "scenario_argument-diag_1001-tier_1-task_1868")
    # Last input word "Ferrari?" ends at 34.800000000000004; the first response word at or after
    # it is "I'm" at 40.88: 40.88 - 34.8 = 6.08.
    found = detect(ev, half_duplex=False)
    assert found.spoke and found.spoke_via == SPOKE_POST
    assert found.input_end == 34.800000000000004
    assert found.latency == 6.08
    assert found.post_text == (
        "I'm sorry, but I can't identify speakers by their voices or names unless they've "
        "introduced themselves. As of the people talking, I'll be able to refer to them "
        "accordingly. Let me know how you'd like to proceed."
    )
    assert found.full_text.startswith(
        "Hey there! It's great to connect with you. How can the Lamborghini"
    )


def test_real_discussion_example(mpbench_dir):
    ev = evidence_of(mpbench_dir / "examples" / "scenario_argument-diag_1001-tier_2-task_0")
    found = detect(ev, half_duplex=False)
    # Input ends at 30.8 ("accurate?"); "Sure," starts at 35.6.
    assert found.latency == 4.8
    assert found.post_text.startswith("Sure, the Lamborghini logo features a raging bull")
    assert found.post_text.endswith("like Ferrari or Ford Mustang.")
    assert "Hola" not in found.post_text and "Hola" in found.full_text


def test_real_turnbased_example(mpbench_dir):
    ev = evidence_of(mpbench_dir / "examples" / "scenario_turnBasedGame-diag_112-tier_2-task_1")
    found = detect(ev, half_duplex=False)
    # "River." ends at 60.56; "Bridge" starts at 68.32000000000001: 7.76.
    assert (found.spoke, found.post_text, found.latency) == (True, "Bridge", 7.76)
    assert found.full_text == "Hi there! It's great to connect with you. How can I help? Bridge"


# --- rules, on hand-made folders ----------------------------------------------------------

INPUT = transcript(words(("Hello", 0.0, 0.5), ("there", 0.5, 2.0)))


def test_word_starting_exactly_at_input_end_counts_as_post(tmp_path):
    write_task(
        tmp_path,
        {"all_stitched.json": INPUT, "response.json": transcript(words(("Yes", 2.0, 2.4)))},
    )
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert (found.spoke, found.spoke_via, found.latency, found.post_text) == (
        True,
        SPOKE_POST,
        0.0,
        "Yes",
    )


def test_word_just_before_input_end_is_not_post(tmp_path):
    write_task(
        tmp_path,
        {"all_stitched.json": INPUT, "response.json": transcript(words(("Yes", 1.99, 2.4)))},
    )
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert (found.spoke, found.post_text, found.latency) == (False, "", None)
    assert found.full_text == "Yes"


def test_streaming_run_only_post_words_in_post_text(tmp_path):
    response = transcript(words(("Hi", 0.2, 0.4), ("Paris", 3.0, 3.5), ("indeed", 3.6, 4.0)))
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": response})
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert found.post_text == "Paris indeed" and found.full_text == "Hi Paris indeed"
    assert found.latency == 1.0


def test_half_duplex_uses_full_text_and_first_word_start(tmp_path):
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": transcript(words(("Hi", 0.25, 0.4), ("all", 0.5, 0.9))),
        },
    )
    ev = evidence_of(tmp_path)
    assert detect(ev, half_duplex=False).spoke is False
    found = detect(ev, half_duplex=True)
    # The harness's half-duplex latency is the first output word's start itself.
    assert (found.spoke, found.spoke_via, found.post_text, found.latency) == (
        True,
        SPOKE_HALF_DUPLEX,
        "Hi all",
        0.25,
    )


def test_half_duplex_probe_threshold(tmp_path):
    # 1 of 4 tasks with text has a post word: 0.25 is not < 0.25, so not half-duplex.
    evidence = []
    for index in range(4):
        folder = tmp_path / f"t{index}"
        start = 3.0 if index == 0 else 1.0
        write_task(
            folder,
            {
                "all_stitched.json": INPUT,
                "response.json": transcript(words(("w", start, start + 0.2))),
            },
        )
        evidence.append(evidence_of(folder))
    probe = probe_half_duplex(evidence)
    assert (probe.n_post, probe.n_text, probe.is_half_duplex) == (1, 4, False)
    folder = tmp_path / "t4"
    write_task(
        folder, {"all_stitched.json": INPUT, "response.json": transcript(words(("w", 1.0, 1.2)))}
    )
    probe = probe_half_duplex([*evidence, evidence_of(folder)])
    # 1 / 5 = 0.2 < 0.25.
    assert (probe.n_post, probe.n_text, probe.is_half_duplex) == (1, 5, True)


def test_probe_ignores_tasks_without_valid_chunks(tmp_path):
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": {"text": "words without stamps", "chunks": []},
        },
    )
    probe = probe_half_duplex([evidence_of(tmp_path)])
    assert (probe.n_post, probe.n_text, probe.is_half_duplex) == (0, 0, False)


def test_empty_text_with_chunks_joins_chunk_texts(tmp_path):
    response = {
        "text": "  ",
        "chunks": [
            {"text": " Good ", "timestamp": [3.0, 3.2]},
            {"text": "answer", "timestamp": None},
        ],
    }
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": response})
    found = detect(evidence_of(tmp_path), half_duplex=False)
    # Full text joins all chunks (valid or not), each stripped; post text only the valid post word.
    assert found.full_text == "Good answer"
    assert found.post_text == "Good"


def test_malformed_chunks_are_ignored(tmp_path):
    response = {
        "text": "a b c d e",
        "chunks": [
            {"text": "a", "timestamp": [2.5]},
            {"text": "b", "timestamp": [2.5, 3.0, 3.5]},
            {"text": "c", "timestamp": []},
            {"text": "d"},
            "e",
        ],
    }
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": response})
    found = detect(evidence_of(tmp_path), half_duplex=False)
    # No valid output chunk: falls to the text-only rule.
    assert (found.spoke, found.spoke_via, found.post_text, found.latency) == (
        True,
        SPOKE_FULL_TEXT,
        "a b c d e",
        None,
    )


def test_text_only_output(tmp_path):
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": {"text": " An answer. "}})
    found = detect(evidence_of(tmp_path), half_duplex=True)
    assert (found.spoke, found.post_text, found.latency) == (True, "An answer.", None)


def test_unparseable_output_counts_as_no_text(tmp_path):
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": "{not json"})
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert (found.spoke, found.full_text) == (False, "")


def test_missing_and_empty_files_make_a_missing_task(tmp_path):
    write_task(tmp_path, {"all_stitched.json": INPUT, "response.json": ""})
    ev = evidence_of(tmp_path)
    assert ev.has_pair is False
    assert detect(ev, half_duplex=True).spoke is False


@pytest.mark.parametrize(
    "files",
    [
        {"all_stitched/input.json": INPUT, "all_stitched/output.json": "OUT"},
        {"all_stitched/input.json": INPUT, "response.json": "OUT"},
        {"input.json": INPUT, "output.json": "OUT"},
        {"combined.json": INPUT, "output.json": "OUT"},
    ],
    ids=["nested-pair", "nested-input-response", "input-output", "combined-output"],
)
def test_each_transcript_layout(tmp_path, files):
    out = transcript(words(("Sure", 2.5, 2.9)))
    write_task(
        tmp_path, {name: (out if value == "OUT" else value) for name, value in files.items()}
    )
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert (found.spoke, found.post_text, found.latency) == (True, "Sure", 0.5)


def test_first_layout_wins(tmp_path):
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": transcript(words(("first", 2.5, 2.9))),
            "input.json": INPUT,
            "output.json": transcript(words(("second", 2.5, 2.9))),
        },
    )
    assert detect(evidence_of(tmp_path), half_duplex=False).post_text == "first"


def test_latency_from_combined_transcript(tmp_path):
    combined = transcript(words(("Hello", 0.0, 0.5), ("there", 0.5, 2.0), ("Yes", 2.25, 2.5)))
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": transcript(words(("Yes", 2.7, 3.0))),
            "combined.json": combined,
        },
    )
    # combined.json's first word at or after 2.0 starts at 2.25: latency 0.25, not 0.7.
    assert detect(evidence_of(tmp_path), half_duplex=False).latency == 0.25


def test_missing_combined_falls_back_to_post_words(tmp_path):
    write_task(
        tmp_path,
        {"all_stitched.json": INPUT, "response.json": transcript(words(("Yes", 2.7, 3.0)))},
    )
    assert detect(evidence_of(tmp_path), half_duplex=False).latency == 0.7


def test_combined_without_word_after_input_falls_back(tmp_path):
    combined = transcript(words(("Hello", 0.0, 0.5), ("there", 0.5, 2.0)))
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": transcript(words(("Yes", 2.7, 3.0))),
            "combined.json": combined,
        },
    )
    assert detect(evidence_of(tmp_path), half_duplex=False).latency == 0.7


def test_latency_rounded_to_three_decimals(tmp_path):
    write_task(
        tmp_path,
        {"all_stitched.json": INPUT, "response.json": transcript(words(("Yes", 3.12345, 3.5)))},
    )
    # 3.12345 - 2.0 = 1.12345 (as a float 1.1234500000000001...) -> 1.123
    assert detect(evidence_of(tmp_path), half_duplex=False).latency == 1.123


def test_no_latency_when_silent(tmp_path):
    combined = transcript(words(("Hello", 0.0, 0.5), ("there", 0.5, 2.0), ("noise", 2.5, 2.6)))
    write_task(
        tmp_path,
        {
            "all_stitched.json": INPUT,
            "response.json": transcript(words(("early", 1.0, 1.5))),
            "combined.json": combined,
        },
    )
    found = detect(evidence_of(tmp_path), half_duplex=False)
    assert (found.spoke, found.latency) == (False, None)
