"""Agreement statistics: cases worked by hand, and a paper-shaped study (280 items, 3 ratings each
from 13 raters) checked against the krippendorff package and scikit-learn called directly."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score

from annotation.stats import (
    Figure,
    ItemInfo,
    Rating,
    agreement_compute,
    confusion_agreement,
    nominal_alpha,
)

REPO = Path(__file__).resolve().parents[2]
A, B, C = "consistent", "inconsistent", "off-topic"
LABELS = (A, B)


def unanimous(pairs, raters=("r1", "r2", "r3")):
    """Items whose raters all give the majority label: (judge, majority) per item."""
    ratings = [Rating(i, r, majority) for i, (_, majority) in enumerate(pairs) for r in raters]
    items = {i: ItemInfo(judge=judge) for i, (judge, _) in enumerate(pairs)}
    return ratings, items


def no_nan_anywhere(value) -> bool:
    if dataclasses.is_dataclass(value):
        return no_nan_anywhere(dataclasses.asdict(value))
    if isinstance(value, dict):
        return all(no_nan_anywhere(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(no_nan_anywhere(v) for v in value)
    return not (isinstance(value, float) and math.isnan(value))


# --- Small cases worked by hand -------------------------------------------------------------


def test_alpha_three_raters_four_items_by_hand():
    ratings = [
        Rating("i1", "r1", A), Rating("i1", "r2", A), Rating("i1", "r3", A),
        Rating("i2", "r1", A), Rating("i2", "r2", A), Rating("i2", "r3", B),
        Rating("i3", "r1", B), Rating("i3", "r2", B), Rating("i3", "r3", B),
        Rating("i4", "r1", A), Rating("i4", "r2", B), Rating("i4", "r3", None),
    ]  # fmt: skip
    # Coincidences o_ck = sum_u (n_uc n_uk - [c=k] n_uc) / (m_u - 1):
    #   i1 (A,A,A): o_AA += 3*2/2 = 3          i2 (A,A,B): o_AA += 2*1/2 = 1, o_AB += 2*1/2 = 1
    #   i3 (B,B,B): o_BB += 3                   i4 (A,B; r3 can't judge, m=2): o_AB += 1*1/1 = 1
    #   o_AA = 4, o_AB = o_BA = 2, o_BB = 3; n_A = 6, n_B = 5, n = 11
    #   D_o = (o_AB + o_BA) / n = 4/11;  D_e = (n_A n_B + n_B n_A) / (n (n - 1)) = 60/110 = 6/11
    #   alpha = 1 - D_o / D_e = 1 - (4/11) / (6/11) = 1/3
    report = agreement_compute(ratings=ratings, labels=LABELS, resamples=0)
    assert report.overall.alpha.value == pytest.approx(1 / 3, abs=1e-12)
    assert report.overall.alpha.n == 4
    assert report.overall.ratings == 12 and report.overall.missing == 1
    assert nominal_alpha(np.array([[3, 0], [2, 1], [0, 3], [1, 1]])) == pytest.approx(1 / 3)
    reliability = [[0, 0, 1, 0], [0, 0, 1, 1], [0, 1, 1, np.nan]]
    assert krippendorff.alpha(reliability, level_of_measurement="nominal") == pytest.approx(1 / 3)


def test_kappa_raw_agreement_and_ac1_on_a_2x2_table_by_hand():
    # judge (rows) x majority (columns): [[4, 1], [2, 3]], n = 10
    pairs = [(A, A)] * 4 + [(A, B)] + [(B, A)] * 2 + [(B, B)] * 3
    ratings, items = unanimous(pairs)
    # p_o = (4 + 3)/10 = 0.7; judge margins A 5, B 5; majority margins A 6, B 4
    # kappa: p_e = (5*6 + 5*4)/100 = 0.5; (0.7 - 0.5)/(1 - 0.5) = 0.4
    # AC1: pi_A = (0.5 + 0.6)/2 = 0.55, pi_B = 0.45; p_e = (0.55*0.45 + 0.45*0.55)/(2 - 1) = 0.495
    #      (0.7 - 0.495)/(1 - 0.495) = 0.205/0.505 = 41/101
    overall = agreement_compute(ratings=ratings, items=items, labels=LABELS, resamples=0).overall
    assert overall.confusion == ((4, 1), (2, 3))
    assert overall.raw_agreement.value == pytest.approx(0.7)
    assert overall.kappa.value == pytest.approx(0.4)
    assert overall.ac1.value == pytest.approx(41 / 101)
    assert overall.kappa.n == 10 and overall.judged == 10 and overall.ties == 0
    judge, majority = zip(*pairs, strict=True)
    assert overall.kappa.value == pytest.approx(cohen_kappa_score(judge, majority))
    # q is the size of the label set, seen or not: with a third label nobody used,
    # pi_C = 0 and p_e = 0.495/(3 - 1) = 0.2475, AC1 = 0.4525/0.7525; kappa does not change.
    wider = agreement_compute(ratings=ratings, items=items, labels=(A, B, C), resamples=0).overall
    assert wider.ac1.value == pytest.approx(0.4525 / 0.7525)
    assert wider.kappa.value == pytest.approx(0.4)


def test_ac1_and_kappa_on_gwets_high_agreement_paradox():
    # Gwet (2008): 125 subjects, [[118, 5], [2, 0]]. p_a = 118/125 = 0.944.
    # Margins: rater 1 A 123/125 = 0.984, rater 2 A 120/125 = 0.96.
    # kappa: p_e = 0.984*0.96 + 0.016*0.04 = 0.94528; (0.944 - 0.94528)/(1 - 0.94528) = -0.00128/0.05472
    # AC1: pi_A = 0.972, pi_B = 0.028; p_e = 2*0.972*0.028 = 0.054432;
    #      (0.944 - 0.054432)/(1 - 0.054432) = 0.889568/0.945568
    result = confusion_agreement(np.array([[118, 5], [2, 0]]))
    assert result.raw == pytest.approx(0.944)
    assert result.kappa == pytest.approx(-0.00128 / 0.05472)
    assert result.ac1 == pytest.approx(0.889568 / 0.945568)
    first = [A] * 123 + [B] * 2
    second = [A] * 118 + [B] * 5 + [A] * 2
    assert result.kappa == pytest.approx(cohen_kappa_score(first, second))


def test_ac1_and_kappa_with_three_categories_by_hand():
    # [[2, 1, 0], [0, 1, 0], [0, 0, 1]], n = 5, p_a = 4/5
    # rows (3, 1, 1)/5, columns (2, 2, 1)/5
    # kappa: p_e = (3*2 + 1*2 + 1*1)/25 = 9/25; (0.8 - 0.36)/0.64 = 0.6875
    # AC1: pi = (0.5, 0.3, 0.2); sum pi(1 - pi) = 0.25 + 0.21 + 0.16 = 0.62; p_e = 0.62/(3 - 1) = 0.31
    #      (0.8 - 0.31)/(1 - 0.31) = 49/69
    result = confusion_agreement(np.array([[2, 1, 0], [0, 1, 0], [0, 0, 1]]))
    assert result.kappa == pytest.approx(0.6875)
    assert result.ac1 == pytest.approx(49 / 69)


# --- Ties ------------------------------------------------------------------------------------


def tie_study():
    # Four clear items (judge, majority): (A,A), (A,A), (B,B), (A,B), and two tied items whose
    # two labels split A/B while the third rater could not judge: judge A on t1, judge B on t2.
    ratings, items = unanimous([(A, A), (A, A), (B, B), (A, B)])
    for item, judge in (("t1", A), ("t2", B)):
        ratings += [Rating(item, "r1", A), Rating(item, "r2", B), Rating(item, "r3", None)]
        items[item] = ItemInfo(judge=judge)
    return ratings, items


def test_ties_dropped():
    ratings, items = tie_study()
    overall = agreement_compute(ratings=ratings, items=items, ties="drop", resamples=0).overall
    # Pairs AA, AA, BB, AB: p_o = 3/4; judge A 3, B 1; majority A 2, B 2
    # kappa: p_e = (3*2 + 1*2)/16 = 0.5, kappa = (0.75 - 0.5)/0.5 = 0.5
    # AC1: pi_A = (3/4 + 2/4)/2 = 5/8, pi_B = 3/8; p_e = 2*15/64 = 30/64; (48 - 30)/(64 - 30) = 9/17
    assert overall.judged == 6 and overall.ties == 2 and overall.kappa.n == 4
    assert overall.confusion == ((2, 1), (0, 1))
    assert overall.raw_agreement.value == pytest.approx(0.75)
    assert overall.kappa.value == pytest.approx(0.5)
    assert overall.ac1.value == pytest.approx(9 / 17)


def test_ties_count_as_disagreement():
    ratings, items = tie_study()
    overall = agreement_compute(ratings=ratings, items=items, ties="disagree", resamples=0).overall
    # t1 (judge A) becomes majority B, t2 (judge B) becomes majority A:
    # pairs AA, AA, BB, AB, AB, BA: p_o = 3/6; judge A 4, B 2; majority A 3, B 3
    # kappa: p_e = (4*3 + 2*3)/36 = 0.5, kappa = (0.5 - 0.5)/0.5 = 0
    # AC1: pi_A = (4/6 + 3/6)/2 = 7/12, pi_B = 5/12; p_e = 2*35/144 = 70/144; (72 - 70)/(144 - 70) = 1/37
    assert overall.judged == 6 and overall.ties == 2 and overall.kappa.n == 6
    assert overall.confusion == ((2, 2), (1, 1))
    assert overall.raw_agreement.value == pytest.approx(0.5)
    assert overall.kappa.value == pytest.approx(0.0, abs=1e-12)
    assert overall.ac1.value == pytest.approx(1 / 37)
    judge = [A, A, B, A, A, B]
    majority = [A, A, B, B, B, A]
    assert overall.kappa.value == pytest.approx(cohen_kappa_score(judge, majority), abs=1e-12)


def test_a_tie_among_three_labels_resolves_to_the_first_tied_label_that_is_not_the_judges():
    ratings = [
        Rating("x", "r1", B),
        Rating("x", "r2", C),
        Rating("x", "r3", A),
        Rating("x", "r4", A),
    ]
    ratings += [Rating("y", "r1", B), Rating("y", "r2", C)]
    ratings += [Rating("z", "r1", B), Rating("z", "r2", C)]
    items = {"x": ItemInfo(judge=B), "y": ItemInfo(judge=B), "z": ItemInfo(judge=A)}
    # x: A 2, B 1, C 1 -> majority A (no tie). y: B/C tie, judge B -> C. z: B/C tie, judge A -> B.
    # Label order (A, B, C); rows judge, columns majority.
    report = agreement_compute(
        ratings=ratings, items=items, labels=(A, B, C), ties="disagree", resamples=0
    )
    assert report.overall.confusion == ((0, 1, 0), (1, 0, 1), (0, 0, 0))
    assert report.overall.raw_agreement.value == 0.0


# --- Exclusions ------------------------------------------------------------------------------


def test_excluding_a_rater_recomputes_every_figure_without_it():
    truth = [A, B, A, A, B, B, A, B]
    judge = [A, B, A, B, B, B, A, A]
    contrarian = [B, A, B, B, A, A, A, B]  # agrees with the truth on items 6 and 7 only
    ratings, items = [], {}
    for i, (label, verdict) in enumerate(zip(truth, judge, strict=True)):
        items[i] = ItemInfo(judge=verdict, stratum="s1" if i < 4 else "s2")
        ratings += [Rating(i, "r1", label), Rating(i, "r2", label), Rating(i, "odd", contrarian[i])]
    ratings += [Rating(0, "r3", B), Rating(1, "r3", B)]
    everyone = agreement_compute(ratings=ratings, items=items, labels=LABELS, resamples=0)
    without = agreement_compute(
        ratings=ratings, items=items, labels=LABELS, exclude_raters={"odd"}, resamples=0
    )
    code = {A: 0, B: 1}
    raters = ["r1", "r2", "r3", "odd"]
    data = np.full((4, 8), np.nan)
    for r in ratings:
        data[raters.index(r.rater), r.item] = code[r.label]
    alpha = krippendorff.alpha
    assert everyone.overall.alpha.value == pytest.approx(
        alpha(data, level_of_measurement="nominal")
    )
    assert without.overall.alpha.value == pytest.approx(
        alpha(data[:3], level_of_measurement="nominal")
    )
    assert without.by_stratum["s2"].alpha.value == pytest.approx(
        alpha(data[:3, 4:], level_of_measurement="nominal")
    )
    # Without "odd": item 0 is A, A, B -> A; item 1 is B, B, B -> B; the others are the truth.
    assert without.overall.kappa.value == pytest.approx(cohen_kappa_score(judge, truth))
    # With "odd", item 0 (A, A, B, B) ties and is dropped; item 1 (B, B, A, B) stays B.
    assert everyone.overall.ties == 1
    assert everyone.overall.kappa.value == pytest.approx(cohen_kappa_score(judge[1:], truth[1:]))
    assert everyone.overall.raters == 4 and without.overall.raters == 3
    assert without.excluded == ("odd",)

    odd = {s.rater: s for s in without.raters}["odd"]
    assert odd.excluded and odd.ratings == 8
    # The majority of the included raters is the truth except on item 0 (A, A, B -> A = truth):
    # "odd" matches it on items 6 and 7.
    assert odd.agreement.value == pytest.approx(2 / 8)
    r1_with = {s.rater: s for s in everyone.raters}["r1"].agreement
    r1_without = {s.rater: s for s in without.raters}["r1"].agreement
    # r1 against the others with "odd": item 0 others r2 A, odd B, r3 B -> B (r1 A: disagree);
    # item 1 others B, A, B -> B (agree); items 2-7 others r2 = truth, odd -> tie on 2-5 (skipped),
    # agreement on 6, 7. So 3 of 4 compared. Without "odd": item 0 others A, B tie (skipped),
    # items 1-7 others agree with r1: 7 of 7.
    assert (r1_with.value, r1_with.n) == (pytest.approx(3 / 4), 4)
    assert (r1_without.value, r1_without.n) == (pytest.approx(1.0), 7)


# --- Per rater -------------------------------------------------------------------------------


def test_per_rater_figures_and_outlier_flags():
    good = [f"g{k}" for k in range(7)]
    ratings, items = [], {}
    for i in range(10):
        label = A if i % 2 else B
        items[i] = ItemInfo(gold=label if i >= 8 else None)
        for k, rater in enumerate(good):
            ratings.append(Rating(i, rater, label, seconds=float(10 * (i + 1) + k)))
        # "bad" answers the wrong label on the odd items and both gold items.
        ratings.append(Rating(i, "bad", label if (i % 2 == 0 and i < 8) else (B if i % 2 else A)))
    ratings.append(Rating(10, "g0", None, seconds=500.0))
    report = agreement_compute(ratings=ratings, items=items, labels=LABELS, resamples=0)
    by_rater = {s.rater: s for s in report.raters}
    # Scope: items 0-7 (8 and 9 are gold). The others' majority is always the item's label.
    bad = by_rater["bad"]
    assert (bad.agreement.value, bad.agreement.n) == (0.5, 8)  # items 0, 2, 4, 6 right
    assert bad.gold_accuracy.value == 0.0 and bad.gold_accuracy.n == 2
    assert bad.label_counts == {A: 1, B: 9}  # B on items 0-7 and 9, A on item 8
    assert bad.median_seconds.value is None and bad.median_seconds.reason == "no time recorded"
    # Agreements: seven raters at 1.0 and "bad" at 0.5: mean 0.9375, sample SD 0.1768,
    # mean - 2 SD = 0.584 > 0.5, so "bad" is flagged; gold 0.0 < 0.8 too.
    values = [1.0] * 7 + [0.5]
    cut = statistics.mean(values) - 2 * statistics.stdev(values)
    assert cut == pytest.approx(0.5839, abs=1e-4)
    assert bad.outlier and len(bad.outlier_reasons) == 2
    assert (
        "2 SD below" in bad.outlier_reasons[0] and "gold accuracy 0.000" in bad.outlier_reasons[1]
    )
    g0 = by_rater["g0"]
    assert not g0.outlier and g0.agreement.value == 1.0 and g0.gold_accuracy.value == 1.0
    assert g0.ratings == 11 and g0.missing == 1 and g0.label_counts == {A: 5, B: 5}
    # g0's times: 10, 20, ..., 100 and 500 -> the median of 11 values is the 6th: 60
    assert g0.median_seconds.value == 60.0
    # g3's times are 13, 23, ..., 103: an even count, median (53 + 63)/2 = 58
    assert by_rater["g3"].median_seconds.value == 58.0
    # At 3 SD (cut 0.9375 - 3 * 0.1768 = 0.407) and without a gold threshold "bad" passes.
    lax = agreement_compute(ratings=ratings, items=items, outlier_sd=3.0, gold_min=0.0)
    assert not {s.rater: s for s in lax.raters}["bad"].outlier
    # The SD is the sample SD (ddof=1, 0.1768): at 2.5 SD the cut is 0.4956 and "bad" passes;
    # the population SD (0.1654) would put it at 0.524 and flag "bad".
    assert 0.9375 - 2.5 * statistics.stdev(values) < 0.5 < 0.9375 - 2.5 * statistics.pstdev(values)
    sample = agreement_compute(ratings=ratings, items=items, outlier_sd=2.5, gold_min=0.0)
    assert not {s.rater: s for s in sample.raters}["bad"].outlier


def test_per_rater_reasons_when_agreement_is_undefined():
    ratings = [Rating(1, "a", A), Rating(1, "b", A), Rating(1, "c", B), Rating(2, "solo", A)]
    by_rater = {s.rater: s for s in agreement_compute(ratings=ratings, resamples=0).raters}
    # a's others on item 1 are b (A) and c (B): a tie, so nothing to compare.
    assert by_rater["a"].agreement.reason == "the other raters tie on every shared item"
    assert by_rater["c"].agreement.value == 0.0
    assert by_rater["solo"].agreement.reason == "shares no labelled item with another rater"
    assert by_rater["solo"].gold_accuracy.reason == "answered no gold item"


# --- Degenerate cases ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratings", "items", "figure", "reason"),
    [
        ([], {}, "alpha", "no ratings"),
        ([], {}, "kappa", "no ratings"),
        ([Rating(1, "a", None), Rating(1, "b", None)], {}, "alpha", "every rating is missing"),
        (
            [Rating(i, r, A) for i in range(5) for r in "abc"],
            {i: ItemInfo(judge=A) for i in range(5)},
            "alpha",
            "every paired label is 'consistent'",
        ),
        (
            [Rating(i, r, A) for i in range(5) for r in "abc"],
            {i: ItemInfo(judge=A) for i in range(5)},
            "kappa",
            "the judge and the human majority give only 'consistent'",
        ),
        ([Rating(i, "a", A if i % 2 else B) for i in range(6)], {}, "alpha", "only one rater"),
        ([Rating(i, f"r{i}", A if i % 2 else B) for i in range(6)], {}, "alpha", "no overlap"),
        ([Rating(i, r, A if i % 2 else B) for i in range(4) for r in "ab"], {}, "kappa", "no item has a judge verdict"),
        (
            [Rating(1, "a", A), Rating(1, "b", B)],
            {1: ItemInfo(judge=A)},
            "kappa",
            "have tied human labels",
        ),
        (
            [Rating(1, "a", A), Rating(1, "b", B)],
            {1: ItemInfo(judge=A), 2: ItemInfo(judge=B)},
            "raw_agreement",
            "have tied human labels",
        ),
        ([Rating(1, "a", A), Rating(1, "b", A)], {3: ItemInfo(judge=A)}, "ac1", "no item with a judge verdict has a human label"),
    ],
)  # fmt: skip
def test_degenerate_cases_say_undefined_and_why(ratings, items, figure, reason):
    report = agreement_compute(ratings=ratings, items=items)
    result = getattr(report.overall, figure)
    assert result.value is None and result.low is None and result.high is None
    assert reason in result.reason
    assert str(result).startswith("undefined: ")
    assert no_nan_anywhere(report)


def test_gold_items_stay_out_of_the_agreement_figures_unless_asked():
    # Items 0-3 are study items, item 9 a gold item on which the two raters disagree.
    ratings, items = unanimous([(A, A), (A, B), (B, B), (B, B)], raters=("a", "b"))
    ratings += [Rating(9, "a", A), Rating(9, "b", B)]
    items[9] = ItemInfo(judge=A, gold=A)
    without = agreement_compute(ratings=ratings, items=items, resamples=0).overall
    with_gold = agreement_compute(ratings=ratings, items=items, include_gold=True, resamples=0)
    # Study items only: alpha = 1 (no disagreement); with item 9: n_A = 2 + 1 = 3, n_B = 6 + 1 = 7,
    # n = 10, sum d_u = 2 (item 9: (4 - 2)/1), alpha = 1 - 9 * 2 / (100 - 9 - 49) = 1 - 18/42 = 4/7
    assert without.items == 4 and without.alpha.value == pytest.approx(1.0)
    assert with_gold.overall.items == 5 and with_gold.overall.ties == 1
    assert with_gold.overall.alpha.value == pytest.approx(4 / 7)
    assert with_gold.include_gold and {
        s.rater: s.gold_accuracy.value for s in with_gold.raters
    } == {
        "a": 1.0,
        "b": 0.0,
    }


def test_everything_undefined_survives_exclusions_strata_and_batches():
    ratings = [Rating(1, "a", A), Rating(2, "a", B)]
    items = {1: ItemInfo(judge=A, stratum="s", batch=1), 2: ItemInfo(judge=B, stratum="s", batch=2)}
    report = agreement_compute(ratings=ratings, items=items, exclude_raters={"a"})
    assert (
        report.overall.alpha.reason == "every rater who rated these items is excluded"
        and report.by_batch[1].kappa.reason == "every rater who rated these items is excluded"
    )
    assert report.raters[0].excluded and no_nan_anywhere(report)
    single = agreement_compute(ratings=ratings, items=items)
    # One rater: alpha is undefined, yet the judge can be compared with that rater's labels.
    assert "only one rater (a)" in single.overall.alpha.reason
    named = agreement_compute(ratings=ratings, items=items, rater_names={"a": "Ada"})
    assert "only one rater (Ada)" in named.overall.alpha.reason
    assert single.overall.kappa.value == 1.0


def test_ac1_needs_two_labels_in_the_label_set():
    ratings = [Rating(i, r, A) for i in range(3) for r in "ab"]
    overall = agreement_compute(ratings=ratings, items={0: ItemInfo(judge=A)}).overall
    assert overall.ac1.reason == "the label set has one label; AC1 needs two"
    # With the full label set, AC1 is defined (1.0: p_a = 1, pi = (1, 0), p_e = 0), kappa is not.
    full = agreement_compute(ratings=ratings, items={0: ItemInfo(judge=A)}, labels=LABELS).overall
    assert full.ac1.value == 1.0 and full.kappa.value is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratings": [Rating(1, "a", "maybe")], "labels": LABELS}, "label 'maybe' is not in"),
        ({"ratings": [Rating(1, "a", A), Rating(1, "a", B)]}, "rated item 1 more than once"),
        ({"ratings": [Rating(1, "a", A)], "items": {1: ItemInfo(judge="yes")}, "labels": LABELS}, "judge on item 1"),
        ({"ratings": [Rating(1, "a", A, seconds=-1.0)]}, "bad time"),
        ({"ratings": [(1, "a", A)]}, "must be Rating objects"),
        ({"ratings": [], "ties": "coin"}, "ties must be one of"),
        ({"ratings": [], "resamples": -5}, "resamples"),
        ({"ratings": [], "seed": -1}, "seed"),
        ({"ratings": [], "confidence": 95}, "confidence"),
        ({"ratings": [], "labels": (A, A)}, "distinct strings"),
    ],
)  # fmt: skip
def test_malformed_input_raises_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        agreement_compute(**kwargs)


def test_figure_renders_for_a_template():
    assert str(Figure(0.74512, low=0.70049, high=0.78, n=280)) == "0.745 [0.700, 0.780]"
    assert str(Figure(0.5, n=3)) == "0.500"
    assert str(Figure(None, "no ratings")) == "undefined: no ratings"
    assert Figure(0.1).defined and not Figure(None, "x").defined


# --- The coincidence-matrix alpha and the pair kernel against the libraries ------------------


def test_vectorised_alpha_equals_krippendorff_on_random_data_and_resamples():
    rng = np.random.default_rng(11)
    for trial in range(25):
        raters, units, values = rng.integers(2, 7), rng.integers(5, 60), rng.integers(2, 5)
        data = rng.integers(0, values, (raters, units)).astype(float)
        data[rng.random(data.shape) < rng.uniform(0, 0.5)] = np.nan
        counts = np.stack([(data == v).sum(axis=0) for v in range(values)], axis=1)
        expected = krippendorff.alpha(data, level_of_measurement="nominal")
        assert nominal_alpha(counts) == pytest.approx(expected, abs=1e-12), trial
        draws = rng.integers(0, units, (5, units))
        weights = np.stack([np.bincount(d, minlength=units) for d in draws])
        got = nominal_alpha(counts, weights)
        for row, d in enumerate(draws):
            resampled = krippendorff.alpha(data[:, d], level_of_measurement="nominal")
            assert got[row] == pytest.approx(resampled, abs=1e-12), trial


def test_pair_kernel_equals_sklearn_on_weighted_resamples():
    rng = np.random.default_rng(5)
    judge, majority = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    majority[:25] = judge[:25]
    for _ in range(10):
        draw = rng.integers(0, 40, 40)
        table = np.zeros((3, 3))
        np.add.at(table, (judge[draw], majority[draw]), 1)
        result = confusion_agreement(table)
        assert result.kappa == pytest.approx(cohen_kappa_score(judge[draw], majority[draw]))
        assert result.raw == pytest.approx(accuracy_score(judge[draw], majority[draw]))


# --- The paper-shaped study ------------------------------------------------------------------


def paper_study(seed=2024):
    """280 items = 14 settings x 20, three of 13 raters per item, batches of 30, some gold."""
    rng = np.random.default_rng(seed)
    skill = rng.uniform(0.88, 0.98, 13)
    ratings, items = [], {}
    for i in range(280):
        truth = A if rng.random() < 0.55 else B
        other = B if truth == A else A
        for r in rng.choice(13, size=3, replace=False):
            missing, right = rng.random() < 0.03, rng.random() < skill[r]
            label = None if missing else (truth if right else other)
            ratings.append(
                Rating(f"item-{i:03d}", f"rater-{r:02d}", label, float(rng.uniform(4, 90)))
            )
        items[f"item-{i:03d}"] = ItemInfo(
            judge=truth if rng.random() < 0.86 else other,
            stratum=f"setting-{i // 20:02d}",
            batch=i // 30,
        )
    return ratings, items


def independent_figures(ratings, items, keep_item=lambda item: True):
    raters = sorted({r.rater for r in ratings})
    names = sorted(items)
    data = np.full((len(raters), len(names)), np.nan)
    labels_of: dict[str, list[str]] = {name: [] for name in names}
    for r in ratings:
        if r.label is not None and keep_item(r.item):
            data[raters.index(r.rater), names.index(r.item)] = LABELS.index(r.label)
            labels_of[r.item].append(r.label)
    judge, majority = [], []
    for name in names:
        ranked = Counter(labels_of[name]).most_common()
        if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
            continue
        judge.append(items[name].judge)
        majority.append(ranked[0][0])
    return data, judge, majority


def ac1_by_formula(first, second, categories):
    n = len(first)
    agreement = sum(x == y for x, y in zip(first, second, strict=True)) / n
    pi = [(first.count(k) + second.count(k)) / (2 * n) for k in categories]
    chance = sum(p * (1 - p) for p in pi) / (len(categories) - 1)
    return (agreement - chance) / (1 - chance)


def test_paper_shaped_study_matches_krippendorff_and_sklearn():
    ratings, items = paper_study()
    assert len(ratings) == 840 and len({r.rater for r in ratings}) == 13
    report = agreement_compute(ratings=ratings, items=items, labels=LABELS, seed=1)
    overall = report.overall
    data, judge, majority = independent_figures(ratings, items)
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert 0.6 < alpha < 0.9  # a realistic study, not a degenerate one
    assert overall.alpha.value == pytest.approx(alpha, abs=1e-12)
    assert overall.kappa.n == len(judge) and overall.ties == 280 - len(judge)
    assert overall.kappa.value == pytest.approx(cohen_kappa_score(judge, majority), abs=1e-12)
    assert overall.raw_agreement.value == pytest.approx(accuracy_score(judge, majority))
    assert overall.ac1.value == pytest.approx(ac1_by_formula(judge, majority, LABELS))
    for figure in (overall.alpha, overall.kappa, overall.raw_agreement, overall.ac1):
        assert figure.low < figure.value < figure.high
        assert figure.high - figure.low < 0.3

    assert list(report.by_stratum) == [f"setting-{s:02d}" for s in range(14)]
    for s in (0, 7, 13):
        wanted = {f"item-{i:03d}" for i in range(20 * s, 20 * s + 20)}
        data, judge, majority = independent_figures(ratings, items, wanted.__contains__)
        group = report.by_stratum[f"setting-{s:02d}"]
        assert group.items == 20
        assert group.alpha.value == pytest.approx(
            krippendorff.alpha(data, level_of_measurement="nominal"), abs=1e-12
        )
        expected_kappa = cohen_kappa_score(judge, majority)
        assert group.kappa.value == pytest.approx(expected_kappa, abs=1e-12)
    assert list(report.by_batch) == list(range(10)) and report.by_batch[9].items == 10
    data, judge, majority = independent_figures(
        ratings, items, lambda name: int(name[-3:]) // 30 == 4
    )
    assert report.by_batch[4].alpha.value == pytest.approx(
        krippendorff.alpha(data, level_of_measurement="nominal"), abs=1e-12
    )
    assert report.by_batch[4].raw_agreement.value == pytest.approx(accuracy_score(judge, majority))


def test_paper_shaped_per_rater_agreement_matches_a_plain_count():
    ratings, items = paper_study()
    report = agreement_compute(ratings=ratings, items=items, labels=LABELS, resamples=0)
    by_item: dict[str, dict[str, str]] = {}
    for r in ratings:
        if r.label is not None:
            by_item.setdefault(r.item, {})[r.rater] = r.label
    for summary in report.raters:
        agree = total = 0
        for labels in by_item.values():
            if summary.rater not in labels:
                continue
            ranked = Counter(v for k, v in labels.items() if k != summary.rater).most_common()
            if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
                continue
            total += 1
            agree += labels[summary.rater] == ranked[0][0]
        assert (summary.agreement.value, summary.agreement.n) == (
            pytest.approx(agree / total),
            total,
        )
        times = [r.seconds for r in ratings if r.rater == summary.rater]
        assert summary.median_seconds.value == pytest.approx(statistics.median(times))


# --- Bootstrap -------------------------------------------------------------------------------


def test_bootstrap_is_reproducible_and_order_free():
    ratings, items = paper_study()
    first = agreement_compute(ratings=ratings, items=items, labels=LABELS, seed=42)
    shuffled = list(ratings)
    random.Random(3).shuffle(shuffled)
    again = agreement_compute(ratings=shuffled, items=items, labels=LABELS, seed=42)
    assert first == again
    other = agreement_compute(ratings=ratings, items=items, labels=LABELS, seed=43)
    assert other.overall.alpha.value == first.overall.alpha.value
    assert (other.overall.alpha.low, other.overall.alpha.high) != (
        first.overall.alpha.low,
        first.overall.alpha.high,
    )


def test_a_strata_interval_does_not_depend_on_the_other_strata():
    ratings, items = paper_study()
    full = agreement_compute(ratings=ratings, items=items, labels=LABELS, seed=9)
    mine = {name for name, info in items.items() if info.stratum == "setting-03"}
    alone = agreement_compute(
        ratings=[r for r in ratings if r.item in mine],
        items={name: items[name] for name in mine},
        labels=LABELS,
        seed=9,
    )
    assert alone.by_stratum["setting-03"] == full.by_stratum["setting-03"]


def bootstrap_by_library(data, judge, majority, rng, resamples, level=95):
    """Percentile intervals of alpha (krippendorff) and kappa, raw agreement (scikit-learn)
    recomputed on each resample of the columns of ``data``; ties (majority -1) dropped."""
    units = data.shape[1]
    draws = rng.integers(0, units, size=(resamples, units), dtype=np.int32)
    alphas, kappas, raws, ac1s = [], [], [], []
    for draw in draws:
        try:
            alphas.append(krippendorff.alpha(data[:, draw], level_of_measurement="nominal"))
        except ValueError:  # one value in the whole resample: undefined, left out as documented
            alphas.append(np.nan)
        kept = draw[majority[draw] >= 0]
        kappas.append(cohen_kappa_score(judge[kept], majority[kept]))
        raws.append(accuracy_score(judge[kept], majority[kept]))
        ac1s.append(ac1_by_formula(list(judge[kept]), list(majority[kept]), (0, 1)))
    tail = (100 - level) / 2
    return [
        tuple(np.nanpercentile(np.array(v, dtype=float), [tail, 100 - tail]))
        for v in (alphas, kappas, raws, ac1s)
    ]


def library_inputs(ratings, items, wanted):
    """Reliability data, judge and majority codes over the wanted items, sorted by id."""
    names = sorted(n for n in items if n in wanted)
    data, _, _ = independent_figures(ratings, items)
    data = data[:, [sorted(items).index(n) for n in names]]
    judge = np.array([LABELS.index(items[n].judge) for n in names])
    majority = np.full(len(names), -1)
    for k, column in enumerate(data.T):
        votes = Counter(column[~np.isnan(column)].astype(int)).most_common()
        if votes and (len(votes) == 1 or votes[0][1] > votes[1][1]):
            majority[k] = votes[0][0]
    return data, judge, majority


@pytest.mark.parametrize("level", [95, 90])
def test_bootstrap_intervals_equal_the_libraries_on_the_documented_resamples(level):
    ratings, items = paper_study()
    report = agreement_compute(
        ratings=ratings, items=items, labels=LABELS, seed=7, resamples=300, confidence=level / 100
    )
    data, judge, majority = library_inputs(ratings, items, set(items))
    # Every scope draws from a generator seeded by the seed and the items it resamples.
    every = repr(sorted(items)).encode()
    expected = bootstrap_by_library(
        data, judge, majority, np.random.default_rng([7, zlib.crc32(every)]), 300, level=level
    )
    overall = report.overall
    for figure, (low, high) in zip(
        (overall.alpha, overall.kappa, overall.raw_agreement, overall.ac1), expected, strict=True
    ):
        assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))
        assert figure.undefined_resamples == 0
    wanted = {n for n, info in items.items() if info.stratum == "setting-05"}
    data, judge, majority = library_inputs(ratings, items, wanted)
    rng = np.random.default_rng([7, zlib.crc32(repr(sorted(wanted)).encode())])
    expected = bootstrap_by_library(data, judge, majority, rng, 300, level=level)
    group = report.by_stratum["setting-05"]
    for figure, (low, high) in zip((group.alpha, group.kappa), expected[:2], strict=True):
        assert (figure.low, figure.high) == (pytest.approx(low), pytest.approx(high))


def test_ten_thousand_ratings_all_figures_with_intervals():
    # Speed is measured by `manage.py bench_agreement`; this checks the same run is complete.
    from config.devtools.management.commands.bench_agreement import LABELS as BENCH_LABELS
    from config.devtools.management.commands.bench_agreement import synthetic_study

    ratings, items = synthetic_study(
        ratings=10_000, overlap=3, raters=40, strata=14, batch_size=30, seed=0
    )
    assert len(ratings) == 10_000
    report = agreement_compute(ratings=ratings, items=items, labels=BENCH_LABELS)
    assert report.overall.alpha.low is not None and len(report.by_batch) == 112
    assert report.overall.kappa.low <= report.overall.kappa.value <= report.overall.kappa.high


def test_the_statistics_module_does_not_import_django():
    code = "import sys, annotation.stats; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


def test_the_same_items_give_the_same_interval_in_any_scope():
    # One batch holding every rated item: "Batch 1" and "All items" are the same 24 items, so
    # they must show the same intervals (each scope used to draw from its own seed).
    ratings, items = paper_study()
    chosen = sorted(items)[:24]
    ratings = [r for r in ratings if r.item in chosen]
    items = {
        name: ItemInfo(judge=info.judge, stratum=info.stratum, batch=1)
        for name, info in items.items()
        if name in chosen
    }
    report = agreement_compute(ratings=ratings, items=items, labels=LABELS, seed=3, resamples=200)
    batch, overall = report.by_batch[1], report.overall
    for name in ("alpha", "kappa", "raw_agreement", "ac1"):
        mine, theirs = getattr(batch, name), getattr(overall, name)
        assert (mine.value, mine.low, mine.high) == (theirs.value, theirs.low, theirs.high), name
    # A different item set draws differently (the seed is not simply shared).
    fewer = agreement_compute(
        ratings=[r for r in ratings if r.item != chosen[0]],
        items={k: v for k, v in items.items() if k != chosen[0]},
        labels=LABELS,
        seed=3,
        resamples=200,
    )
    assert (fewer.overall.kappa.low, fewer.overall.kappa.high) != (
        overall.kappa.low,
        overall.kappa.high,
    )


def test_single_rater_majorities_are_counted():
    ratings = [Rating(1, "a", A), Rating(1, "b", A), Rating(2, "a", B), Rating(3, "b", A)]
    items = {i: ItemInfo(judge=A) for i in (1, 2, 3)}
    report = agreement_compute(ratings=ratings, items=items, labels=LABELS, resamples=0)
    # Items 2 and 3 have one label each: their "majority" is one person.
    assert report.overall.single_majority == 2
