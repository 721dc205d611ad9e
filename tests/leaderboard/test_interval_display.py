"""What the board and its slices show around a number: Wilson intervals (statsmodels, or the
Wilson formula by hand with a benchmark's own z) rounded once, their n, no interval for a
withheld value or a mean of too few tasks, one interval procedure per number, p-values in
significant digits with their counts, and unique CSV column names."""

import math
import random
from fractions import Fraction

import pytest
from statsmodels.stats.proportion import proportion_confint

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.audiomc.dataset import AXES
from evaluation.benchmarks.audiomc.metrics import MET, TaskResult, group_metrics
from evaluation.benchmarks.audiomc.outcomes import ARS_SCALE
from evaluation.slices import Contributions, contributions_json, results_on
from evaluation.stats import wilson_pct
from leaderboard.selectors import Column
from leaderboard.templatetags.compare import p_value
from leaderboard.templatetags.scores import board_cell, significant_text
from leaderboard.views import _metric_headers


def column(slug: str, key: str, split: str = "") -> Column:
    plugin = get_plugin(slug)
    return Column(plugin.metric(key), split, plugin.wilson_z)


def wilson_by_hand(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def test_msi_wilson_bounds_use_its_z_and_are_rounded_once():
    # 1 of 3 at z = 1.96 (SPEC §7.4): 6.149...%, shown 6.1 (rounding to 6.15 first gave 6.2).
    col = column("msi-bench", "apr", "en")
    low, high = wilson_by_hand(1, 3, 1.96)
    assert f"{low:.1f}" == "6.1"
    results = {"en": {"apr": {"count": 1, "total": 3, "pct": 33.3}}}
    cell = board_cell(results, col)
    assert cell["interval"] == f"[{low:.1f}–{high:.1f}]"
    assert "Wilson (z = 1.96)" in cell["title"] and "1/3 base cases" in cell["title"]


def test_the_core_z_elsewhere_matches_statsmodels():
    col = column("mp-bench", "understanding.overall_acc")
    low, high = proportion_confint(72, 256, alpha=0.05, method="wilson")
    interval = col.interval({"understanding": {"overall_acc": {"count": 72, "total": 256,
                                                               "pct": 28.12}}})  # fmt: skip
    assert interval == pytest.approx((100 * low, 100 * high), rel=1e-12)


def test_audiomc_apr_gets_a_wilson_interval_that_never_collapses():
    col = column("audio-multichallenge", "overall.apr")
    for k, n in [(0, 48), (13, 13), (1, 1)]:
        results = {"overall": {"apr": {"count": k, "total": n, "pct": round(100 * k / n, 2)}}}
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        cell = board_cell(results, col)
        assert cell["interval"] == f"[{100 * low:.2f}–{100 * high:.2f}]", (k, n)
        assert f"{k}/{n} tasks" in cell["title"]
        assert "reported in the paper" not in cell["title"]
    # 0/48 is [0, 7.41], not [0, 0].
    assert (
        board_cell({"overall": {"apr": {"count": 0, "total": 48, "pct": 0.0}}}, col)["interval"]
        == "[0.00–7.41]"
    )


def test_a_withheld_value_has_no_interval():
    # Duplex-MPE's yield below its minimum of eligible events: counts kept, value withheld.
    assert wilson_pct({"count": 5, "total": 20, "pct": None, "unreported_value": 25.0}) is None
    col = column("duplex-mpe", "yield", "explicit")
    rate = {"count": 5, "total": 20, "pct": None}
    assert col.interval({"explicit": {"yield": rate}}) is None


def test_a_mean_over_few_tasks_shows_its_n_and_no_interval():
    plugin = get_plugin("audio-multichallenge")
    per_task = {f"t{i}": {"overall.ars": (ARS_SCALE // 2, ARS_SCALE)} for i in range(3)}
    contributions = Contributions.from_json(contributions_json(per_task.items()))
    found = results_on(plugin, contributions, list(per_task))
    assert found["overall"]["ars"] == {"pct": 50.0, "n": 3}  # no "ci" from 3 tasks
    cell = board_cell(found, column("audio-multichallenge", "overall.ars"))
    assert cell["interval"] == ""
    assert "n = 3 tasks" in cell["title"] and "fewer than 6" in cell["title"]


def test_an_axis_slice_shows_the_axis_columns_own_interval():
    """One procedure per number: ARS on the slice axis=X is the by-axis column's bootstrap
    (the benchmark's seed and rounding), not the core's."""
    plugin = get_plugin("audio-multichallenge")
    rng = random.Random(4)
    members = []
    for i in range(40):
        n_items = rng.randint(1, 7)
        states = tuple(MET if rng.random() < 0.6 else "not_met" for _ in range(n_items))
        members.append(TaskResult(f"task-{i:03d}", AXES[0], rng.random() < 0.9, states))
    expected = group_metrics(members)["ars"]["ci"]  # what the board's by-axis column shows
    per_task = {
        r.task_id: {"overall.ars": (Fraction(r.met, r.n_items) * ARS_SCALE, ARS_SCALE)}
        for r in members
    }
    per_task = {
        t: {k: (int(v[0]) if v[0].denominator == 1 else float(v[0]), v[1]) for k, v in c.items()}
        for t, c in per_task.items()
    }
    contributions = Contributions.from_json(contributions_json(per_task.items()))
    found = results_on(plugin, contributions, sorted(per_task))
    assert found["overall"]["ars"]["ci"] == expected


def test_p_values_in_significant_digits():
    assert p_value(7.6e-6) == "7.6 × 10⁻⁶"
    assert p_value(0.0312) == "0.031" and p_value(1.0) == "1" and p_value(0.396) == "0.4"
    assert significant_text(2e-22) == "2.0 × 10⁻²²"


def test_duplex_mcnemar_p_shows_its_digits_and_counts():
    col = column("duplex-mpe", "paired_presence.p", "explicit")
    node = {"pairs": 32, "explicit_only": 14, "implicit_only": 0, "p": 2 * 0.5**14}
    cell = board_cell({"explicit": {"paired_presence": node}}, col)
    assert cell["text"] == "1.2 × 10⁻⁴"  # 2 / 2**14, not 0.000
    assert "b = 14" in cell["title"] and "c = 0" in cell["title"] and "32 pairs" in cell["title"]


@pytest.mark.parametrize("slug", ["mp-bench", "msi-bench", "audio-multichallenge", "duplex-mpe"])
def test_csv_column_names_are_unique(slug):
    plugin = get_plugin(slug)
    split = plugin.splits[0].key if plugin.splits else ""
    header = _metric_headers([Column(m, split, plugin.wilson_z) for m in plugin.metrics])
    assert len(header) == len(set(header))
