"""Each About page's example upload teaches what a real run looks like, for every registered
plug-in (the toy plug-in included): it is in the benchmark's primary format (the first file type
the plug-in declares), holds every task, validates without a problem or a warning, is scored
under the offline judge with no caveat badge, and its ranking numbers are there and above zero
(not empty replies, not silence, not a format-error profile)."""

from __future__ import annotations

import pytest

from evaluation.benchmarks import registry
from evaluation.models import Score, Submission
from evaluation.services import bundle_validate, submission_create
from evaluation.services.work import inline
from leaderboard.views_about import example_upload_path
from tests.conftest import every_plugin_board

pytestmark = pytest.mark.django_db

SLUGS = [*sorted(registry()), "toy-bench"]


@pytest.mark.parametrize("slug", SLUGS)
def test_the_example_upload_is_a_good_complete_run_in_the_primary_format(
    slug, settings, tmp_path, demo_files
):
    settings.VAR_DIR = tmp_path / "var"
    benchmark, plugin = every_plugin_board(slug, settings, demo_files(slug), name="example")
    path = example_upload_path(plugin)
    assert path.name.endswith(plugin.upload.suffixes[0])

    report, contents = bundle_validate(benchmark=benchmark, path=path, allow_partial=False)
    assert report.ok, report.lines()
    assert report.warning_count == 0, report.lines()
    assert contents.missing == []
    assert contents.present == set(benchmark.tasks.values_list("task_id", flat=True))

    with inline():
        made = submission_create(
            benchmark=benchmark,
            bundle_path=path,
            system_name="Example",
            judge=benchmark.judges.get(slug="offline"),
        )
    submission = Submission.objects.get(pk=made.pk)
    assert submission.status == Submission.Status.SCORED, submission.error
    for badge in plugin.fact_badges:
        assert submission.facts.get(badge.fact) != badge.value, badge.label

    results = Score.objects.get(submission=submission).results
    ranked = [plugin.metric(key) for key in plugin.rank_keys] or [
        metric for metric in plugin.metrics if metric.type == "rate" and metric.higher_is_better
    ]
    for split in plugin.splits or (None,):
        numbers = results[split.key] if split else results
        for metric in ranked:
            value = metric.value(numbers)
            assert value is not None and value > 0, (split and split.key, metric.key, value)
