"""Held-out results are computed only for an upload holding every held-out task, and shown to
everyone but staff as ranks and bands, never numbers or counts."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from evaluation.benchmarks import get_plugin
from evaluation.held_out import held_out_band, held_out_column_band
from evaluation.models import Score, Submission
from evaluation.services import submission_create
from evaluation.services.held_out import held_out_mark
from evaluation.services.pipeline import task_outcomes
from tests.conftest import scoring_here, toy_upload

pytestmark = pytest.mark.django_db

HELD = "q1"  # answered right by toy_upload (both grades 1): held out


@pytest.mark.parametrize(
    ("value", "points", "band"),
    [(47.3, 10, "40–50"), (50.0, 10, "50–60"), (0.0, 10, "0–10"), (100.0, 25, "100–125"),
     (6.67, 5, "5–10"), (None, 10, ""), (47.3, 0, "")],
)  # fmt: skip
def test_a_band_is_the_stretch_of_the_set_width_a_value_falls_in(settings, value, points, band):
    settings.HELD_OUT_BAND_POINTS = points
    assert held_out_band(value) == band


def test_a_percentage_of_100_falls_in_the_top_band(settings):
    settings.HELD_OUT_BAND_POINTS = 10
    assert held_out_band(100.0, top=100) == "90–100"
    assert held_out_band(99.9, top=100) == "90–100"
    assert held_out_band(100.0) == "100–110"


def test_an_upload_with_every_held_out_task_is_scored_on_them_and_shown_in_bands(
    toybench, tmp_path, client
):
    held_out_mark(benchmark=toybench, task_ids=[HELD])
    with scoring_here():
        submission = submission_create(
            benchmark=toybench,
            bundle_path=toy_upload(tmp_path / "run.zip"),
            system_name="Whole",
            judge=toybench.judges.get(slug="offline"),
            allow_partial=True,
            publish=True,
        )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error
    offline = toybench.judges.get(slug="offline")
    score = Score.objects.get(submission=submission, judge=offline)
    outcomes, _, _ = task_outcomes(submission=submission, judge=offline)
    hidden = [o for o in outcomes if o.task_id == HELD]
    assert score.held_out_results == get_plugin("toy-bench").aggregate(hidden, facts={})

    exact = score.held_out_results
    detail = client.get(f"/api/submissions/{submission.pk}/").json()
    shown = next(s for s in detail["scores"] if s["judge"] == "offline")["held_out_results"]
    assert set(shown) == {"bands"} and "count" not in str(shown) and "total" not in str(shown)
    # Hand-computed from the held-out task, q1 (English, "It is 2": both grades 1): quality
    # 100%, 1 of 1 answered, and no German task held out; the public results are q2 and q3
    # (grades 1 and 0: 50%) and German's three missing tasks (0 of 3). Over one task a band
    # would be the result itself: the rank alone is shown.
    assert exact["en"]["answered"] == {"count": 1, "total": 1, "pct": 100.0}
    assert exact["en"]["quality"]["pct"] == 100.0 and "de" not in exact
    assert score.results["en"]["quality"]["pct"] == 50.0
    assert score.results["en"]["answered"] == {"count": 2, "total": 2, "pct": 100.0}
    assert score.results["de"]["answered"] == {"count": 0, "total": 3, "pct": 0.0}
    assert set(shown["bands"].values()) == {""}
    staff = User.objects.create_user("st", password="pw-staff-1234", is_staff=True)
    client.force_login(staff)
    detail = client.get(f"/api/submissions/{submission.pk}/").json()
    assert next(s for s in detail["scores"] if s["judge"] == "offline")["held_out_results"] == (
        exact
    )


class _Column:
    """A board column as held_out_column_band reads it: its value and its metric's unit."""

    def __init__(self, unit: str):
        self.metric = type("Metric", (), {"unit": unit})()

    def value(self, results):
        return results["v"]


@pytest.mark.parametrize(
    ("tasks", "value", "unit", "band"),
    [(19, 47.3, "%", ""), (20, 47.3, "%", "40–50"), (20, 100.0, "%", "90–100"),
     (20, 100.0, "s", "100–110"), (500, 3.0, "%", "0–10")],
)  # fmt: skip
def test_a_band_needs_enough_tasks_to_hold_more_than_one_result(settings, tasks, value, unit, band):
    # 10-point bands over n tasks: results fall k x 100 / n apart, so n must be at least 20 for
    # every band to hold two of them.
    settings.HELD_OUT_BAND_POINTS = 10
    assert held_out_column_band(_Column(unit), {"v": value}, tasks=tasks) == band
