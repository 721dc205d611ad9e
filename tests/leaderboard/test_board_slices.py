"""The board on a slice, and rank ranges. Rows are scored as the pipeline stores them (results,
contributions, slice results) from seeded random outcomes on MP-Bench's plug-in with 927 tasks
written here in the real benchmark's shape (its families, speaker-name and should-speak counts;
no conversation, which no test here slices by), so nothing beside the checkout is read; the
expected numbers come from MP-Bench's own aggregation run on each subset, the expected ranks
from sorting those by hand, and the expected rank ranges from scipy's binomial test."""

import random

import pytest
from django.core.cache import cache
from scipy.stats import binomtest

from evaluation.benchmarks import get_plugin
from evaluation.models import Score, Submission, System
from evaluation.services.pipeline import score_slices
from leaderboard.selectors import BoardSort, leaderboard_entries
from leaderboard.selectors_compare import board_slice
from leaderboard.selectors_rows import sliced_entries, with_rank_ranges
from tests import factories
from tests.benchmarks.mpbench.test_slices_parity import _random_outcome

pytestmark = pytest.mark.django_db

SKILL = {"Ace": 0.9, "Bee": 0.6, "Cay": 0.58, "Dee": 0.3}

# MP-Bench's tasks by (family, should_speak, is_speaker_name), as many as the real release has.
SHAPE = {
    ("understanding", True, True): 396,
    ("understanding", True, False): 147,
    ("discussion", True, False): 128,
    ("turnbased", True, False): 128,
    ("turnbased", False, False): 128,
}


def shaped_tasks() -> dict[str, dict]:
    """Task id -> MP-Bench spec, SHAPE's counts of each kind."""
    tasks = {}
    for (family, should_speak, is_speaker_name), count in SHAPE.items():
        for n in range(count):
            tasks[f"{family}-{int(should_speak)}{int(is_speaker_name)}-{n:03d}"] = {
                "family": family,
                "should_speak": should_speak,
                "is_speaker_name": is_speaker_name,
                "metatranscript": "",
            }
    return tasks


@pytest.fixture
def mpbench_tasks() -> dict[str, dict]:
    return shaped_tasks()


@pytest.fixture
def board(db, mpbench_tasks):
    cache.clear()
    plugin = get_plugin("mp-bench")
    mpbench = factories.benchmark("mp-bench", slug="mp-bench", tasks=mpbench_tasks)
    defaults = plugin.official_judge
    judge = factories.judge(
        mpbench,
        defaults.slug,
        provider=defaults.provider,
        official=True,
        models_by_kind=defaults.models_by_kind,
        name=defaults.name,
    )
    outcomes = {}
    for name, skill in SKILL.items():
        rng = random.Random(name)
        found = []
        for task_id, task in sorted(mpbench_tasks.items()):
            outcome = _random_outcome(rng, task_id, task)
            # Shift the verdicts towards the system's skill.
            judged = {
                slot: type(value)(value.state, rng.random() < skill, {})
                if value.state == "done"
                else value
                for slot, value in outcome.judged.items()
            }
            found.append(type(outcome)(**{**outcome.__dict__, "judged": judged}))
        outcomes[name] = found
        system = System.objects.create(name=name)
        submission = Submission.objects.create(
            benchmark=mpbench,
            system=system,
            judge=judge,
            row_group="realtime" if name in ("Ace", "Cay") else "cascade",
            status=Submission.Status.SCORED,
            is_published=True,
        )
        contributions, slices = score_slices(plugin, found, {})
        Score.objects.create(
            submission=submission,
            judge=judge,
            results=plugin.aggregate(found, facts={}),
            contributions=contributions,
            slices=slices,
        )
    paper = Submission.objects.create(
        benchmark=mpbench,
        system=System.objects.create(name="Paper Model"),
        row_group="realtime",
        status=Submission.Status.SCORED,
        is_reported=True,
        is_published=True,
        reported_results=plugin.aggregate(outcomes["Ace"], facts={}),
    )
    return mpbench, judge, plugin, outcomes, paper


def ranks_by_hand(values: dict[str, tuple]) -> dict[str, int]:
    """Standard competition ranking, higher first."""
    return {
        name: 1 + sum(other > mine for other in values.values()) for name, mine in values.items()
    }


@pytest.mark.parametrize("value", ["discussion", "turnbased"])
def test_a_slice_recomputes_every_metric_and_ranks_again(board, value):
    benchmark, judge, plugin, outcomes, paper = board
    chosen = board_slice(benchmark=benchmark, requested=f"family={value}")
    sort = BoardSort(group_by_type=False)
    entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=sort)
    shown = sliced_entries(
        entries, benchmark=benchmark, judge=judge, chosen=chosen, sort=sort, split=""
    )
    by_name = {e.system: e for e in shown}
    expected = {}
    for name, found in outcomes.items():
        subset = [o for o in found if o.spec["family"] == value]
        by_hand = plugin.aggregate(subset, facts={})
        entry = by_name[name]
        assert entry.slice_tasks == len(subset)
        for key in ("tt_acc", "app_acc"):
            assert entry.results[value][key] == by_hand[value][key]
        assert entry.results[value]["latency_s"] == by_hand[value]["latency_s"]
        # Other families have no task in this slice.
        assert entry.results["understanding"]["overall_acc"]["total"] == 0
        count = by_hand[value]["app_acc"]
        expected[name] = count["count"] / count["total"]
        low, high = entry.intervals[f"{value}.app_acc"]
        assert low <= count["pct"] <= high
    ranks = ranks_by_hand({name: (v,) for name, v in expected.items()})
    assert {name: by_name[name].rank for name in SKILL} == ranks
    assert [e.system for e in shown[: len(SKILL)]] == sorted(SKILL, key=lambda n: ranks[n])
    # The papers' rows stay, marked, unranked, last.
    papers = shown[len(SKILL) :]
    assert "Paper Model" in {e.system for e in papers}
    assert all(e.reported_in_paper and e.slice_unavailable for e in papers)
    assert all(e.rank is None and e.results == {} for e in papers)


def test_grouped_slice_ranks_within_groups(board):
    benchmark, judge, plugin, outcomes, _ = board
    chosen = board_slice(benchmark=benchmark, requested="should_speak=no")
    sort = BoardSort()
    entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=sort)
    shown = sliced_entries(
        entries, benchmark=benchmark, judge=judge, chosen=chosen, sort=sort, split=""
    )
    for group in ("realtime", "cascade"):
        members = [e for e in shown if e.system_type == group and not e.slice_unavailable]
        assert sorted(e.rank for e in members) == list(range(1, len(members) + 1))


def test_rank_ranges_match_pairwise_exact_tests(board, mpbench_tasks):
    benchmark, judge, plugin, outcomes, _ = board
    sort = BoardSort(group_by_type=False)
    entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=sort)
    shown = with_rank_ranges(entries, benchmark=benchmark, judge=judge, split="", grouped=False)

    # Independently: each system's pass/fail on the understanding tasks (the first rank key).
    def passes(name):
        found = {}
        for o in outcomes[name]:
            if o.spec["family"] != "understanding":
                continue
            slot = o.judged.get(("understanding", ""))
            found[o.task_id] = bool(slot and slot.state == "done" and slot.verdict)
        return found

    table = {name: passes(name) for name in SKILL}
    better = dict.fromkeys(SKILL, 0)
    worse = dict.fromkeys(SKILL, 0)
    for x in SKILL:
        for y in SKILL:
            if x == y:
                continue
            only_x = sum(table[x][t] and not table[y][t] for t in table[x])
            only_y = sum(table[y][t] and not table[x][t] for t in table[x])
            n = only_x + only_y
            if n and binomtest(min(only_x, only_y), n, 0.5).pvalue < 0.05:
                if only_y > only_x:
                    better[x] += 1
                else:
                    worse[x] += 1
    by_name = {e.system: e for e in shown}
    for name in SKILL:
        assert by_name[name].rank_range == (1 + better[name], len(SKILL) - worse[name]), name
    assert by_name["Paper Model"].rank_range is None
    # Ace is clearly first, Dee clearly last; Bee and Cay are too close to tell apart.
    assert by_name["Ace"].rank_range == (1, 1) and by_name["Dee"].rank_range == (4, 4)
    assert by_name["Bee"].rank_range == by_name["Cay"].rank_range == (2, 3)


def test_stale_slice_results_are_not_shown(board):
    benchmark, judge, _, _, _ = board
    Score.objects.filter(submission__system__name="Bee").update(
        slices={"version": "old", "values": {}}
    )
    chosen = board_slice(benchmark=benchmark, requested="family=discussion")
    sort = BoardSort(group_by_type=False)
    entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=sort)
    shown = {
        e.system: e
        for e in sliced_entries(
            entries, benchmark=benchmark, judge=judge, chosen=chosen, sort=sort, split=""
        )
    }
    assert shown["Bee"].slice_unavailable and shown["Bee"].rank is None
    assert not shown["Ace"].slice_unavailable


def test_rows_say_when_their_scorer_is_older_and_when_configurations_differ(board):
    from evaluation.scorer import current_scorer
    from leaderboard.selectors import BoardFilters
    from leaderboard.selectors_rows import with_scorer_and_config

    benchmark, judge, _, _, _ = board
    Score.objects.filter(judge=judge).update(
        scorer=current_scorer(benchmark=benchmark, judge=judge)
    )
    old = current_scorer(benchmark=benchmark, judge=judge)
    old["judge"] = {**old["judge"], "models": {"understanding": "retired-model"}}
    Score.objects.filter(judge=judge, submission__system__name="Bee").update(scorer=old)
    ace = Submission.objects.get(system__name="Ace")
    ace.run_config = {"model": "A", "input_modality": "audio", "output_modality": "audio"}
    ace.contamination = "yes"
    ace.save()
    # A second, unscored run of Ace's system under another configuration.
    Submission.objects.create(
        benchmark=benchmark,
        system=ace.system,
        judge=judge,
        status=Submission.Status.FAILED,
        is_published=True,
        run_config={"model": "A", "decoding": {"temperature": 1.0}},
    )
    entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=BoardSort())
    rows = {
        e.system: e
        for e in with_scorer_and_config(entries, benchmark=benchmark, judge=judge, user=None)
    }
    assert rows["Bee"].older_scorer == ["judge"] and rows["Ace"].older_scorer == []
    assert rows["Ace"].config_differs and not rows["Cay"].config_differs
    assert rows["Ace"].contamination == "yes" and rows["Cay"].contamination == "unknown"
    only = leaderboard_entries(
        benchmark=benchmark,
        judge=judge,
        filters=BoardFilters(contamination="yes", input_modality="audio"),
    )
    assert [e.system for e in only] == ["Ace"]
