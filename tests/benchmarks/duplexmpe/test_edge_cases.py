"""SPEC §8, one test per row, on hand-built runs (times in ms). The reference timeline:

preamble 0-31900 | 0 N2 32400-34400 | 1 N1 34900-36900 | 2 T 37400-39400 | (5 s, no response)
3 N3 44400-46400 | 4 N4Q 46900-48900 | (3 s) 5 N4R 51900-54900 | 6 N2 55400-57400
"""

from __future__ import annotations

import pytest

from evaluation.benchmarks.duplexmpe import metrics as m
from evaluation.benchmarks.duplexmpe import segments as seg

TURNS = [
    ("N2", 32400, 34400),
    ("N1", 34900, 36900),
    ("T", 37400, 39400),
    ("N3", 44400, 46400),
    ("N4Q", 46900, 48900),
    ("N4R", 51900, 54900),
    ("N2", 55400, 57400),
]
E_T = 39400
Q_S, Q_E, R_S, R_E = 46900, 48900, 51900, 54900
D = R_S + 2000


def run(segments, turns=TURNS, *, sid="s1", condition="explicit"):
    return m.Run(
        scenario_id=sid,
        condition=condition,
        turns=[m.Turn(i, label, s, e) for i, (label, s, e) in enumerate(turns)],
        segments=seg.normalise(segments),
    )


def timing(segments, turns=TURNS, **kw):
    return m.run_timing(run(segments, turns, **kw))


def window(t, index):
    return next(w for w in t["windows"] if w["turn_index"] == index)


def n4(segments):
    return timing(segments)["n4"][0]


def test_row_01_onset_exactly_at_t_end_is_present_not_fresh():
    t = timing([(E_T, E_T + 1500)])["t"]
    assert t["present"] and not t["fresh"] and t["active_at_end"]


def test_row_02_onset_exactly_5_s_after_t_end_is_fresh_and_present():
    t = timing([(E_T + 5000, E_T + 6000)])["t"]
    assert t["fresh"] and t["present"]


def test_row_03_onset_at_5001_ms_is_no_response_and_fails_the_next_window():
    t = timing([(E_T + 5001, E_T + 6000)])
    assert not t["t"]["present"] and not t["t"]["fresh"]
    assert window(t, 3)["speech"]  # N3 starts at e_T + 5 s


def test_row_04_segment_ending_exactly_at_t_end_is_not_active():
    t = timing([(E_T - 1000, E_T)])["t"]
    assert not t["present"] and not t["fresh"] and not t["active_at_end"]


def test_row_05_a_pause_shorter_than_800_ms_across_t_end_merges():
    t = timing([(E_T - 500, E_T - 100), (E_T + 599, E_T + 1500)])["t"]  # pause 699 ms
    assert t["present"] and not t["fresh"]
    t = timing([(E_T - 500, E_T - 100), (E_T + 700, E_T + 1500)])["t"]  # pause exactly 800 ms
    assert t["present"] and t["fresh"]


def test_row_06_blips_shorter_than_120_ms_are_dropped_after_merging():
    assert seg.normalise([(1000, 1119)]) == []
    assert seg.normalise([(1000, 1120)]) == [(1000, 1120)]
    assert seg.normalise([(1000, 1060), (1200, 1260)]) == [(1000, 1260)]
    t = timing([(E_T + 1000, E_T + 1100)])["t"]
    assert not t["present"]


def test_row_07_speech_across_a_window_boundary_counts_in_both_windows():
    t = timing([(34000, 35500)])  # inside N2's window and N1's
    assert window(t, 0)["spans"] == [[34000, 34900]]
    assert window(t, 1)["spans"] == [[34900, 35500]]
    items = m.judgment_items(t)
    assert [(i["kind"], i["turn_index"]) for i in items] == [("ack", 0), ("ack", 1)]


def test_row_08_speech_from_exactly_the_next_turn_start_belongs_to_the_next_window_only():
    t = timing([(34900, 35500)])  # e_w + 0.5 s of turn 0 = start of turn 1
    assert not window(t, 0)["speech"] and window(t, 1)["speech"]


@pytest.mark.parametrize("outcome", ["empty_transcript", "missing", "unparseable", "intrusion"])
def test_row_09_speech_in_a_window_without_an_acknowledgement_verdict_fails(outcome):
    t = timing([(33000, 33500)])
    verdicts = {} if outcome == "missing" else {("s1", "explicit", 0, "ack"): outcome}
    result = m.score_condition([t], verdicts)
    assert result["silence"] == {"count": 3, "total": 4, "pct": 75.0}
    assert result["silence_by_label"]["N2"] == {"count": 1, "total": 2, "pct": 50.0}
    assert result["silence_failures"] == {outcome: 1}
    ok = m.score_condition([t], {("s1", "explicit", 0, "ack"): "acknowledgement"})
    assert ok["silence"]["count"] == 4 and ok["silence_acknowledged"] == 1


@pytest.mark.parametrize("outcome", ["empty_transcript", "missing", "unparseable", "incorrect"])
def test_row_10_a_present_t_without_a_correct_verdict_is_incorrect_and_counted(outcome):
    t = timing([(E_T + 800, E_T + 3000)])
    verdicts = {} if outcome == "missing" else {("s1", "explicit", 2, "answer"): outcome}
    result = m.score_condition([t], verdicts)
    assert result["accuracy"] == {"count": 0, "total": 1, "pct": 0.0}
    assert result["complete"] is (outcome != "missing")


def test_row_11_verdicts_for_nothing_are_listed_as_unused():
    t = timing([])
    verdicts = {
        ("s1", "explicit", 2, "answer"): "correct",
        ("s1", "explicit", 1, "ack"): "intrusion",
    }
    result = m.score_condition([t], verdicts)
    assert result["accuracy"]["total"] == 0 and result["silence"]["pct"] == 100.0
    assert result["unused_judgments"] == [
        ["s1", "explicit", 1, "ack"],
        ["s1", "explicit", 2, "answer"],
    ]


def test_row_12_speech_at_question_start_or_inside_the_question_is_ineligible():
    assert n4([(Q_S - 1000, Q_S + 1)])["ineligible_reason"] == "active_at_question_start"
    assert n4([(Q_S + 500, R_S + 100)])["ineligible_reason"] == "onset_during_question"


def test_row_13_onset_exactly_at_question_end_is_no_onset_in_gap():
    event = n4([(Q_E, R_S + 500)])
    assert event["ineligible_reason"] == "no_onset_in_gap" and event["window_response"]


def test_row_14_onset_exactly_at_resolution_start_is_in_the_gap_and_active_there():
    event = n4([(R_S, R_S + 1000)])
    assert event["eligible"] and event["yielded"]


def test_row_15_an_answer_finished_before_the_resolution_is_ineligible():
    event = n4([(Q_E + 500, R_S - 100)])
    assert event["ineligible_reason"] == "silent_at_resolution_start" and event["yielded"] is None


def test_row_16_a_segment_ending_exactly_at_the_deadline_yields():
    event = n4([(Q_E + 500, D)])
    assert event["eligible"] and event["yielded"] and event["failure"] is None
    event = n4([(Q_E + 500, D + 1)])
    assert event["failure"] == "still_voicing"


def test_row_17_a_short_resolution_does_not_shorten_the_deadline():
    turns = [*TURNS[:5], ("N4R", R_S, R_S + 1000), ("N2", R_S + 1500, R_S + 3000)]
    event = timing([(Q_E + 500, R_S + 200)], turns)["n4"][0]
    assert event["deadline"] == D and event["until"] == D  # E = max(D, r_e + 0.5 s) = D
    # Speech just after D: silent at D, nothing in [D, D): yielded; the next window sees it.
    t = timing([(Q_E + 500, R_S + 200), (D + 1000, D + 1500)], turns)
    assert t["n4"][0]["yielded"] and window(t, 6)["speech"]


def test_row_18_speech_resuming_exactly_at_e_passes_and_before_e_is_resumed():
    until = R_E + 500
    assert n4([(Q_E + 500, R_S + 500), (until, until + 900)])["yielded"]
    event = n4([(Q_E + 500, R_S + 500), (until - 200, until + 900)])
    assert event["failure"] == "resumed" and event["yielded"] is False


def test_row_19_fewer_than_30_eligible_events_leave_yield_unreported():
    eligible = [timing([(Q_E + 500, R_S + 500)], sid=f"s{i}") for i in range(29)]
    result = m.score_condition(eligible, {})
    assert result["yield"] == {"count": 29, "total": 29, "pct": None, "unreported_value": 100.0}
    thirty = m.score_condition([*eligible, timing([(Q_E + 500, D + 1)], sid="s29")], {})
    assert thirty["yield"] == {"count": 29, "total": 30, "pct": 96.67}


def test_row_20_duplicates_bad_segments_and_missing_runs_are_rejected():
    t = timing([])
    with pytest.raises(m.ScoringError, match="duplicate runs: s1 \\(explicit\\)"):
        m.score([t, t], {})
    with pytest.raises(ValueError, match="does not end after it starts"):
        seg.normalise([(1000, 1000)])
    expected = {("s1", "explicit"): run([]), ("s2", "explicit"): run([], sid="s2")}
    with pytest.raises(m.ScoringError, match="1 runs missing: s2 \\(explicit\\)"):
        m.score([t], {}, expected=expected)
    debug = m.score([t], {}, expected=expected, allow_missing=True)
    assert debug["complete"] is False and debug["explicit"]["runs"] == 2
    assert debug["explicit"]["silence"]["pct"] == 100.0  # the missing run scored as silent


def test_row_21_sub_millisecond_times_round_half_up():
    assert seg.to_ms(39.4005) == 39401
    assert seg.to_ms(39.4004999) == 39400
    assert seg.to_ms("0.0005") == 1 and seg.to_ms(2.675) == 2675
    assert seg.samples_to_ms(8, 16000) == 1 and seg.samples_to_ms(7, 16000) == 0
    gt = {"scenario_id": "s1", "condition": "explicit",
          "turns": [{"index": i, "label": label, "start": s / 1000, "end": e / 1000}
                    for i, (label, s, e) in enumerate(TURNS)]}  # fmt: skip
    r = m.Run.from_gt(gt, [[39.3995, 40.4]])  # as parsed from JSON
    assert r.segments == [(E_T, E_T + 1000)]  # 39.3995 s -> 39400 ms: not active at e_T
    assert m.run_timing(r)["t"]["fresh"] is False  # ... but an onset at e_T is never fresh


def test_row_22_no_present_t_makes_accuracy_null_not_zero():
    result = m.score_condition([timing([])], {})
    assert result["accuracy"] == {"count": 0, "total": 0, "pct": None}


def test_row_23_preamble_speech_counts_only_where_it_reaches_a_window():
    assert timing([(1000, 20000)])["windows"][0]["speech"] is False
    t = timing([(30000, 32600)])  # runs into the first turn
    assert window(t, 0)["spans"] == [[32400, 32600]]


def test_the_synthetic_boundary_runs_score_as_labelled():
    from evaluation.benchmarks.duplexmpe.demo import synthetic

    for case in synthetic.boundary_runs():
        t = m.run_timing(m.Run.from_gt(case["gt"], case["segments"]))
        event = t["n4"][0]
        outcome = event["ineligible_reason"] or event["failure"] or "yielded"
        got = {"present": t["t"]["present"], "fresh": t["t"]["fresh"], "n4": outcome}
        assert got == case["expected"], (case["row"], case["case"])
