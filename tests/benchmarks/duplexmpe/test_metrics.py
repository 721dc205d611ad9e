"""Rates, the exact McNemar test, the ASR span rule and a small hand-worked condition."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from evaluation.benchmarks.duplexmpe import metrics as m

from .test_edge_cases import E_T, Q_E, R_S, timing


def _binomial_two_sided(b: int, c: int) -> float:
    """Independent reference: sum of the probabilities of all outcomes no likelier than the
    observed one (the usual two-sided exact binomial test), computed in floats."""
    n = b + c
    if n == 0:
        return 1.0
    pmf = [math.comb(n, k) * 0.5**n for k in range(n + 1)]
    observed = pmf[b]
    return min(1.0, sum(p for p in pmf if p <= observed * (1 + 1e-9)))


def test_mcnemar_matches_the_paper_value():
    assert round(m.mcnemar_exact(90, 78), 3) == 0.396
    assert m.mcnemar_exact(90, 78) == pytest.approx(_binomial_two_sided(90, 78), rel=1e-9)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, Fraction(1)),
        (0, 5, Fraction(2, 32)),
        (1, 4, Fraction(12, 32)),
        (3, 3, Fraction(1)),
        (2, 9, Fraction(2 * (1 + 11 + 55), 2**11)),
    ],  # fmt: skip
)
def test_mcnemar_small_cases_by_hand(b, c, expected):
    assert m.mcnemar_exact(b, c) == pytest.approx(float(expected), abs=1e-15)
    assert m.mcnemar_exact(b, c) == pytest.approx(_binomial_two_sided(b, c), rel=1e-9)


def test_rates_round_half_up_to_two_decimals():
    assert m.rate(1, 8) == {"count": 1, "total": 8, "pct": 12.5}
    assert m.rate(1, 3) == {"count": 1, "total": 3, "pct": 33.33}
    assert m.rate(2, 3)["pct"] == 66.67
    assert m.rate(1, 800)["pct"] == 0.13  # 0.125 -> 0.13, not banker's 0.12
    assert m.rate(1, 2000)["pct"] == 0.05  # 0.05 exactly
    assert m.rate(0, 0) == {"count": 0, "total": 0, "pct": None}


def test_answer_span_takes_active_and_later_episodes_clipped_to_the_next_turn():
    segments = [(30000, 37500), (38000, 39600), (41000, 42000), (44300, 45000), (46000, 47000)]
    spans = m.answer_spans(segments, t_start=37400, t_end=E_T, next_start=44400)
    # (30000, 37500) ended before e_T: out; (38000, 39600) active at e_T: clipped at T start
    # is unnecessary; (44300, 45000) starts before the next turn: clipped to 44400.
    assert spans == [(38000, 39600), (41000, 42000), (44300, 44400)]


def test_a_hand_worked_condition():
    runs = [
        timing([(E_T + 1000, E_T + 3000)], sid="a"),  # fresh, answered correctly
        timing([(E_T - 300, E_T + 2000), (33000, 33400)], sid="b"),  # already speaking; N2 talk
        timing([], sid="c"),  # silent throughout
        timing([(E_T + 2000, E_T + 2500), (Q_E + 400, R_S + 3000)], sid="d"),  # N4: still voicing
    ]
    verdicts = {
        ("a", "explicit", 2, "answer"): "correct",
        ("b", "explicit", 2, "answer"): "correct",
        ("b", "explicit", 0, "ack"): "acknowledgement",
        ("d", "explicit", 2, "answer"): "unparseable",
    }
    result = m.score_condition(runs, verdicts)
    assert result["fresh_onset"] == {"count": 2, "total": 4, "pct": 50.0}
    assert result["presence"] == {"count": 3, "total": 4, "pct": 75.0}
    assert result["already_speaking"] == 1
    assert result["accuracy"] == {"count": 2, "total": 3, "pct": 66.67}
    assert result["accuracy_not_correct"] == {"unparseable": 1}
    assert result["silence"] == {"count": 16, "total": 16, "pct": 100.0}
    assert result["window_response"] == {"count": 1, "total": 4, "pct": 25.0}
    assert result["yield_ineligible"]["no_onset_in_gap"] == 3
    assert result["yield"]["total"] == 1 and result["yield_failures"]["still_voicing"] == 1
    assert result["complete"] and result["missing_judgments"] == []


def test_paired_presence_counts_discordant_pairs():
    timings = [
        timing([(E_T + 1000, E_T + 2000)], sid="p1", condition="explicit"),
        timing([], sid="p1", condition="implicit"),
        timing([(E_T + 1000, E_T + 2000)], sid="p2", condition="explicit"),
        timing([(E_T + 1000, E_T + 2000)], sid="p2", condition="implicit"),
        timing([], sid="p3", condition="explicit"),  # no implicit partner: left out
    ]
    paired = m.paired_presence(timings)
    assert paired["pairs"] == 2 and paired["explicit_only"] == 1 and paired["implicit_only"] == 0
    assert paired["diff_pp"] == 50.0 and paired["p"] == 1.0
    result = m.score(timings, {})
    assert set(result) == {"explicit", "implicit", "paired_presence", "complete"}
    assert result["explicit"]["presence"]["count"] == 2  # conditions are never pooled
    assert result["implicit"]["presence"]["count"] == 1
