"""A metric of type "number" (a p-value, a difference between conditions): read as the plain
number it is, shown with its significant digits or decimals and no unit, recomputed as a plain
number on a slice, and, like a count, reported but never compared between systems nor ranked."""

from evaluation.benchmarks.base import BenchmarkPlugin, Metric
from evaluation.benchmarks.checks import check_declarations
from evaluation.slices import (
    Column,
    Contributions,
    compare,
    contributions_json,
    metric_methods,
    results_on,
)
from leaderboard.selectors import Column as BoardColumn
from leaderboard.templatetags.scores import board_cell, metric_text

RATE = Metric(key="acc", label="Acc", interval="wilson")
P = Metric(key="paired.p", label="p", type="number", unit="", decimals=3, significant=2)
DIFF = Metric(key="paired.diff_pp", label="Difference", type="number", unit="pp")


class Plain(BenchmarkPlugin):
    slug = "plain"
    metrics = (RATE, P, DIFF)

    def metric_contributions(self, outcome, *, facts) -> dict:
        # The registry requires the hook; these tests build their contributions by hand.
        return {"acc": (1, 1)}


def test_a_number_is_read_where_it_is_declared():
    results = {"paired": {"p": 0.031, "diff_pp": -1.75, "pairs": 40}}
    assert P.path == ("paired", "p") and P.value(results) == 0.031
    assert DIFF.value(results) == -1.75
    assert P.counts(results) is None  # no count/total behind a number


def test_a_number_is_shown_with_its_digits_and_no_unit():
    assert metric_text(0.0000076, P) == "7.6 × 10⁻⁶"
    assert metric_text(0.0314, P) == "0.031"
    assert metric_text(-1.754, DIFF) == "-1.75"
    cell = board_cell({"paired": {"p": 0.0314, "pairs": 40}}, BoardColumn(P))
    assert (cell["text"], cell["interval"]) == ("0.031", "")
    assert "%" not in cell["title"]


def test_a_slice_recomputes_a_number_as_a_plain_number():
    # Two tasks: 3/2 and 1/2 add up to 4/4 = 1 (no percent: the unit is not "%").
    found = Contributions.from_json(
        contributions_json([("t1", {"paired.diff_pp": (3, 2)}), ("t2", {"paired.diff_pp": (1, 2)})])
    )
    assert results_on(Plain(), found, ["t1", "t2"]) == {"paired": {"diff_pp": 1.0}}


def test_two_systems_are_never_compared_on_a_number():
    tasks = [f"t{i}" for i in range(8)]
    a = Contributions.from_json(
        contributions_json((t, {"acc": (1, 1), "paired.diff_pp": (5.0, 1)}) for t in tasks)
    )
    b = Contributions.from_json(
        contributions_json((t, {"acc": (0, 1), "paired.diff_pp": (1.0, 1)}) for t in tasks)
    )
    columns = [Column("acc", RATE), Column("paired.diff_pp", DIFF)]
    assert [m.key for m in compare(Plain(), columns, a, b, tasks, draws=0).metrics] == ["acc"]
    methods = {m.key: m for m in metric_methods(Plain())}
    assert methods["paired.diff_pp"].test == "none (a number is reported, not compared)"
    assert methods["paired.p"].test == "none (it is itself a test's p-value)"
    assert methods["paired.diff_pp"].minimum == methods["paired.p"].minimum == "–"
    assert methods["acc"].test.startswith("exact two-sided McNemar")


def test_a_board_is_not_ranked_by_a_number():
    class RankedByP(Plain):
        rank_keys = ("paired.p",)

    assert check_declarations(RankedByP()) == [
        "rank_keys: 'paired.p' is a number, which is reported, not ranked"
    ]
    assert check_declarations(Plain()) == []
