"""MP-Bench's slices and comparisons round a rate as its board does (DESIGN.md: the harness's
round(100.0 * k / n, 2), Python's round), so a slice holding every task shows the board's
figure."""

import pytest

from evaluation.benchmarks import get_plugin


@pytest.fixture(scope="module")
def plugin():
    return get_plugin("mp-bench")


def test_a_rate_is_rounded_as_the_harness_rounds_it(plugin):
    metric = plugin.metric("discussion.app_acc")
    # 23 / 160 = 14.375 exactly: the harness's 100.0 * 23 / 160 keeps it and rounds half to
    # even, 14.38; 23 / 160 * 100 is 14.374999999999998, 14.37.
    assert plugin.metric_value(metric, 23, 160) == 14.38
    assert plugin.metric_value(metric, 23.0, 160.0) == 14.38
    assert plugin.metric_value(metric, 0, 0) is None


def test_every_rate_up_to_400_tasks_matches_the_design_formula(plugin):
    metric = plugin.metric("understanding.overall_acc")
    for total in range(1, 401):
        for count in range(total + 1):
            assert plugin.metric_value(metric, count, total) == round(100.0 * count / total, 2)


def test_a_latency_is_the_mean_to_a_tenth_of_a_second(plugin):
    metric = plugin.metric("discussion.latency_s")
    assert plugin.metric_value(metric, 3.0, 4) == 0.8  # 0.75 rounds half to even
    assert plugin.metric_value(metric, 0.0, 0) is None
