"""Every plug-in's calibrated metrics: each declaration names a board column of a study kind
the plug-in offers, and on the plug-in's demo data the judge's mean over the population a
calibration study draws from is the board's value of that metric for the same submission and
judge (to the metric's decimals). A calibration study made through the staff form samples the
declared metric's units with their inclusion probabilities.

The example plug-in declares none: its judged metric (quality) is a mean of graded scores in
0..1, not of 0/1 verdicts, which the estimator's unit outcomes are."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.calibration import stratum_population
from annotation.models import CalibrationStratum, Study
from evaluation import calibration as core
from evaluation.benchmarks import registry
from evaluation.benchmarks.base import kind_guideline
from evaluation.models import Benchmark, CalibratedScore, Score
from evaluation.slices import all_columns
from tests.conftest import demo_runs_scored, every_plugin_board, fresh, scoring_here

pytestmark = pytest.mark.django_db

SLUGS = sorted(registry())


def board_value(score: Score, plugin, key: str):
    column = next(c for c in all_columns(plugin) if c.key == key)
    node = score.results
    for part in ((column.split,) if column.split else ()) + column.metric.path:
        node = node[part]
    return node


@pytest.fixture(scope="module")
def shared_demo(request, shared_db, demo_files):
    """(benchmark, plug-in, runs): the plug-in's demo board and its first two demo runs scored
    by the offline judge, made once for the module (tests/conftest.py shared_db)."""
    from django.conf import settings

    folder = demo_files(request.param)
    with scoring_here():
        benchmark, plugin = every_plugin_board(request.param, settings, folder, name="calib")
        runs = demo_runs_scored(benchmark, plugin, folder, count=2)
    return benchmark, plugin, runs


@pytest.fixture
def demo(db, shared_demo):
    """The module's demo board and runs (shared_demo), read afresh for this test."""
    benchmark, plugin, runs = shared_demo
    return fresh(benchmark), plugin, [fresh(run) for run in runs]


@pytest.mark.parametrize("slug", [*SLUGS, "toy-bench"])
def test_every_declaration_resolves_to_a_board_column_of_an_offered_kind(slug, settings):
    if slug == "toy-bench":
        settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    plugin = registry()[slug]
    kinds = {kind.key for kind in plugin.study_kinds}
    columns = {c.key: c.metric for c in all_columns(plugin)}
    if slug == "toy-bench":
        assert plugin.calibrated_metrics == ()
        return
    assert plugin.calibrated_metrics
    found = core.calibrated_columns(plugin)
    # Every declaration, in every split of the board.
    assert len(found) == len(plugin.calibrated_metrics) * max(len(plugin.splits), 1)
    for column, declared, metric in found:
        assert declared.study_kind in kinds
        assert columns[column] is metric and metric.type in ("rate", "mean")
        assert core.declared_metric(plugin, column) == (declared, metric)


def test_a_bad_declaration_is_refused_with_a_message_naming_it():
    plugin = registry()["mp-bench"]

    class Broken(type(plugin)):
        calibrated_metrics = (
            core.CalibratedMetric(metric="discussion.latency_s", study_kind="discussion"),
        )

    with pytest.raises(core.CalibrationError, match="latency_s' is a duration, not a rate"):
        core.calibrated_columns(Broken())
    with pytest.raises(core.CalibrationError, match="declares no calibrated metric 'nope'"):
        core.declared_metric(plugin, "nope")


@pytest.mark.parametrize("shared_demo", SLUGS, indirect=True)
def test_the_judge_mean_over_the_population_is_the_board_value(demo):
    benchmark, plugin, runs = demo
    judge = benchmark.judges.get(slug="offline")
    checked = 0
    found = core.calibrated_columns(plugin)
    for column, declared, metric in found:
        study = Study(benchmark=benchmark, judge=judge, kind=declared.study_kind)
        study.calibrated_metric = column
        for run in runs:
            score = Score.objects.get(submission=run, judge=judge)
            board = board_value(score, plugin, column)
            population, units = stratum_population(study=study, submission=run)
            if board is None:  # a split the run does not cover: nothing counts in it
                assert population.size == 0
                continue
            mean = population.judge_mean() * (100 if metric.unit == "%" else 1)
            assert abs(mean - board) <= 0.5 * 10**-metric.decimals + 1e-9, (
                column,
                run.system.name,
                mean,
                board,
            )
            # Every draw is a unit the plug-in offers raters, with the judge's label on it.
            for draw in population.draws:
                assert all((draw.row, slot) in units for slot in draw.slots)
            checked += 1
    # Each declaration is checked on at least one run of every plug-in.
    assert checked >= len(plugin.calibrated_metrics)


@pytest.mark.parametrize("shared_demo", SLUGS, indirect=True)
def test_a_calibration_study_made_from_the_form_samples_the_declared_metric(
    demo, django_capture_on_commit_callbacks
):
    benchmark, plugin, runs = demo
    column, declared, _ = core.calibrated_columns(plugin)[0]
    kind = plugin.study_kind(declared.study_kind)
    staff = User.objects.create_user("owner", password="pw-owner-1234", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/studies/new/?benchmark={benchmark.pk}&kind={kind.key}").content.decode()
    assert f'value="{column}"' in page
    form = {
        "benchmark": benchmark.pk,
        "kind": kind.key,
        "name": "Calibration",
        "slug": "calibration",
        "judge": benchmark.judges.get(slug="offline").pk,
        "calibrated_metric": column,
        "strata": [run.pk for run in runs],
        "per_stratum": 2,
        "seed": 3,
        "skip_empty_responses": "on",
        "overlap": 1,
        "batch_size": 4,
        "gold_per_batch": 0,
        "attention_per_batch": 0,
        "lock_minutes": 60,
        "tie_rule": "drop",
        "guideline_text": kind_guideline(kind),
    }
    other = next((k for k in plugin.study_kinds if k.key != declared.study_kind), None)
    if other is not None:
        wrong = client.post("/studies/new/", {**form, "kind": other.key})
        assert "is calibrated by" in wrong.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post("/studies/new/", form)
    assert made.status_code == 302, made.content.decode()[:3000]
    study = Study.objects.get(slug="calibration")
    assert study.calibrated_metric == column and not study.skip_empty_responses
    strata = list(CalibrationStratum.objects.filter(study=study).order_by("submission_id"))
    assert [s.submission_id for s in strata] == sorted(run.pk for run in runs)
    per_draw = {"unit": 1}.get(declared.unit)
    for stratum in strata:
        items = study.items.filter(stratum_id=stratum.submission_id)
        drawn = {
            (stratum.draws[i][0], slot) for i in stratum.order[:2] for slot in stratum.draws[i][1]
        }
        assert {(item.task_result_id, item.slot) for item in items} == drawn
        if per_draw:
            assert items.count() == 2
        assert {item.inclusion_probability for item in items} == {2 / len(stratum.draws)}
    # The same metric under the same judge for the same submissions is refused.
    again = client.post("/studies/new/", {**form, "slug": "calibration-2"})
    assert "already calibrated" in again.content.decode()
    # The page says what the study calibrates.
    dashboard = client.get(f"/studies/{study.slug}/").content.decode()
    assert "Calibrates" in dashboard

    # The rows the study wrote reach the board's calibrated view, under the split they belong
    # to: what the board JSON says of each submission is what the row holds.
    rows = {row.submission_id: row for row in CalibratedScore.objects.filter(metric=column)}
    assert set(rows) == {run.pk for run in runs}
    split, _, key = column.rpartition(".") if plugin.splits else ("", "", column)
    query = f"?calibrated={key}&rows=all" + (f"&split={split}" if split else "")
    body = client.get(f"/api/benchmarks/{benchmark.slug}/leaderboard/{query}").json()
    assert body["calibrated"] == key
    shown = {e["submission"]: e["calibrated"] for e in body["entries"] if e["submission"]}
    for pk, row in rows.items():
        assert shown[pk][column]["labels_needed"] == row.labels_needed
        assert shown[pk][column]["population"] == row.population
        assert shown[pk][column]["value"] == row.value
    page = client.get(f"/submissions/{runs[0].pk}/").content.decode()
    assert f'data-metric="{key}"' in page


@pytest.mark.parametrize("slug", [*SLUGS, "toy-bench"])
def test_the_about_pages_methods_say_which_metrics_are_calibrated_and_how(client, settings, slug):
    if slug == "toy-bench":
        settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    plugin = registry()[slug]
    Benchmark.objects.create(slug=f"{slug}-about", name=plugin.name, plugin=slug)
    page = client.get(f"/benchmarks/{slug}-about/about/").content.decode()
    section = page.split('<section id="methods">', 1)[1].split("</section>", 1)[0]
    found = re.search(r'<p id="methods-calibration">(.*?)</p>', section, re.S)
    if not plugin.calibrated_metrics:
        assert found is None
        return
    text = html.unescape(found.group(1))
    assert "uniformly at random" in text and "95% interval" in text
    assert f"fewer than {core.MIN_LABELLED} labelled units" in text
    for declared in plugin.calibrated_metrics:
        metric = next(m for m in plugin.metrics if m.key == declared.metric)
        how = "per task" if declared.unit == "task" else "per unit"
        assert f"{metric.label}" in text and how in text
        for split in plugin.splits:
            assert split.label in text
