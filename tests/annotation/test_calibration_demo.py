"""The demo's calibration study: made on the Audio MultiChallenge demo board from submissions
still waiting to be scored, rated by simulated raters, it leaves a calibrated score for every
submission, and one system's calibrated rank differs from its judge rank."""

from __future__ import annotations

import io

import pytest

from annotation.demo_calibration import DEMO_CALIBRATION, demo_column, seed_demo_calibration
from annotation.models import CalibrationStratum, Study
from evaluation.benchmarks import registry
from evaluation.models import CalibratedScore
from evaluation.services import benchmark_import, submission_create
from tests.conftest import demo_runs, demo_source

pytestmark = pytest.mark.django_db


def test_the_demo_calibration_study_reorders_the_judges_ranking(demo_files):
    # The plug-in that names the demo's calibrated column (Audio MultiChallenge's APR).
    assert demo_column() == ("audio-multichallenge", "overall.apr")
    metric = "overall.apr"
    plugin = registry()["audio-multichallenge"]
    folder = demo_files("audio-multichallenge")
    board = benchmark_import(
        slug="audio-multichallenge-demo",
        directory=demo_source(plugin, folder),
        plugin="audio-multichallenge",
        is_demo=True,
    ).benchmark
    offline = board.judges.get(slug="offline")
    for run in demo_runs(plugin, folder):
        submission_create(
            benchmark=board,
            bundle_path=run.path,
            system_name=run.system,
            row_group=run.row_group,
            judge=offline,
            publish=True,
            options=dict(run.options),
        )
    out = io.StringIO()
    study = seed_demo_calibration(stdout=out)
    assert study.calibrated_metric == metric
    strata = CalibrationStratum.objects.filter(study=study)
    rows = {
        r.submission_id: r for r in CalibratedScore.objects.filter(study_id=study.pk, metric=metric)
    }
    assert set(rows) == set(strata.values_list("submission_id", flat=True)) and len(rows) >= 2
    for row in rows.values():
        assert row.value is not None and row.low <= row.value <= row.high
        assert row.labelled >= 10 and row.population == 48

    def ranks(values):
        return {pk: 1 + sum(o > v for o in values.values()) for pk, v in values.items()}

    judge = ranks({pk: r.judge_value for pk, r in rows.items()})
    calibrated = ranks({pk: r.value for pk, r in rows.items()})
    assert judge != calibrated
    printed = out.getvalue()
    print(printed)
    assert "(rank differs)" in printed and f"/studies/{DEMO_CALIBRATION}/" in printed
    # Run again: nothing new.
    assert seed_demo_calibration(stdout=io.StringIO()).pk == study.pk
    assert Study.objects.filter(slug=DEMO_CALIBRATION).count() == 1
