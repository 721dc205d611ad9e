"""The paper's Tables 1 and 4 as data, checked against their own arithmetic."""

import math
from decimal import ROUND_HALF_UP, Decimal

import pytest

from evaluation.benchmarks.msibench.paper import (
    TABLE_1,
    TABLE_4,
    exact_count,
    pattern_column_means,
    reported_rows,
)


def tenth(value: float) -> float:
    return float(Decimal(repr(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def wilson_pct(k: int, n: int, z: float = 1.96) -> float:
    # Written out independently of metrics.py: centre-free Wilson half-width, in percent.
    p = k / n
    return 100 * z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)


@pytest.mark.parametrize("row", TABLE_1, ids=lambda row: f"{row[0]}{'†' if row[1] else ''}")
def test_table_1_half_width_recomputed_from_counts(row):
    apr, printed_hw = row[2], row[3]
    k = round(apr * 576 / 100)  # APR·576 as an integer
    assert tenth(100 * k / 576) == apr
    assert tenth(wilson_pct(k, 576)) == printed_hw
    assert exact_count(apr, 576) == k


@pytest.mark.parametrize("table", [TABLE_1, TABLE_4], ids=["en", "zh"])
def test_per_pattern_counts_add_up_to_apr(table):
    for row in table:
        k = round(row[2] * 576 / 100)
        pattern_counts = [round(value * 96 / 100) for value in row[-1]]
        assert [tenth(100 * c / 96) for c in pattern_counts] == list(row[-1])
        assert sum(pattern_counts) == k, row[0]


def test_fifteen_configurations_each_with_the_thinking_marker():
    rows = reported_rows()
    assert len(rows) == 15
    assert [r["system"] for r in rows][:4] == [
        "Gemini 3.1 Pro†",
        "Gemini 3.5 Flash†",
        "GPT Realtime 2.1 (xhigh)†",
        "GPT Realtime 2.1 (medium)†",
    ]
    assert sum(r["thinking"] for r in rows) == 6
    gemma = [r for r in rows if r["system"].startswith("Gemma")]
    assert [r["system"] for r in gemma] == ["Gemma 4-12B", "Gemma 4-12B†"]


def test_reported_results_structure_and_values():
    first = reported_rows()[0]["results"]
    en, zh = first["en"], first["zh"]
    assert en["apr"] == {"count": 385, "total": 576, "pct": 66.8, "half_width": 3.8}
    assert en["ars"] == {"count": None, "total": None, "pct": 78.0}
    assert en["per_pattern"]["retr"] == {"count": 19, "total": 96, "pct": 19.8}
    assert zh["apr"] == {"count": 304, "total": 576, "pct": 52.8, "half_width": None}
    mini = reported_rows()[6]["results"]["en"]
    assert mini["bir"]["pct"] is None and mini["prr"]["pct"] == 97.9
    mimo_zh = reported_rows()[11]["results"]["zh"]
    assert mimo_zh["bir"]["pct"] is None and mimo_zh["prr"]["pct"] is None


def test_paper_averages_of_the_rounded_pattern_columns():
    assert pattern_column_means("en") == {
        "auth": 48.9,
        "disc": 46.7,
        "prior": 36.8,
        "seq": 27.6,
        "scope": 24.9,
        "retr": 7.0,
    }


def test_exact_count_is_none_when_no_count_rounds_to_the_value():
    assert exact_count(0.1, 576) is None  # 1/576 = 0.17 -> 0.2
    assert exact_count(21.5, 192) is None  # the PRR example of the spec: 41/192=21.4, 42/192=21.9
