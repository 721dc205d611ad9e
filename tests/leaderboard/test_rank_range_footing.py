"""A rank range stands on the same footing as the rank: a partial submission's absent tasks
count as the failures its rank counts (the benchmark's rule), in its range too. Expected
ranges from scipy's exact binomial (McNemar) test written out here."""

from scipy.stats import binomtest

from evaluation.slices import rank_ranges
from leaderboard.selectors_rows import _only

TASKS = [f"t{i:02d}" for i in range(48)]


def units(passed: set[int]) -> list[list]:
    # As stored: every task a unit, absent ones as the failures the benchmark scores them.
    return [[i, float(i in passed), 1.0] for i in range(len(TASKS))]


def expected_ranges(passes: list[set[int]]) -> list[tuple[int, int]]:
    found = []
    for i, mine in enumerate(passes):
        better = worse = 0
        for j, theirs in enumerate(passes):
            if i == j:
                continue
            b, c = len(mine - theirs), len(theirs - mine)
            if b + c and binomtest(min(b, c), b + c, 0.5).pvalue < 0.05:
                better += c > b
                worse += b > c
        found.append((1 + better, len(passes) - worse))
    return found


def test_absent_tasks_count_in_the_range_as_in_the_rank():
    complete_top = set(range(40))  # 40/48
    complete_mid = set(range(30))  # 30/48
    partial = set()  # submitted 2 tasks, failed both; 46 absent: 0/48, ranked last
    systems = [
        _only(TASKS, units(found), "acc", None) for found in (complete_top, complete_mid, partial)
    ]
    found = rank_ranges(systems, "acc")
    assert found == expected_ranges([complete_top, complete_mid, partial])
    # Top: 40 vs 30 (b = 10, c = 0: p = 0.002) and vs 0: rank 1, certain. The 0/48 row is
    # significantly worse than both: rank 3, certain (on submitted tasks alone it was 1-3).
    assert found == [(1, 1), (2, 2), (3, 3)]


def test_a_slice_keeps_only_its_tasks():
    keep = set(TASKS[:10])
    system = _only(TASKS, units(set(range(5))), "acc", keep)
    assert sorted(int(i) for i in system.metrics["acc"][:, 0]) == list(range(10))
